// Every RPC of every group/version (iterated from the catalog, so a new RPC is covered without
// touching this file), each with lenient and malformed variants of its request — wrong types,
// null, arrays, unknown enum names, lone surrogates (short ones the daemon refuses as invalid
// UTF-8, long ones protobufjs turns into U+FFFD), strings over and just under the 4 MiB message
// limit — sent (a) through @grpc/grpc-js + @grpc/proto-loader with democratic-csi's options over
// the daemon's Unix socket and (b) through the in-process client, on the same kubelet dir and
// state dir: the answers must be deep-equal — the same decoded response, or the same code,
// details and message. The disk and volume RPCs run against this host's real block devices with
// the matrix's requests, which name no device of the host's (nothing is changed); the answers
// (NotFound, InvalidArgument…) are compared all the same.
//
// Counted apart, the one deliberate difference: call options of null/undefined (grpc-js throws a
// TypeError from the method call; in-process answers INVALID_ARGUMENT), once per endpoint.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { isDeepStrictEqual } from "node:util";
import * as path from "node:path";
import { socketPath } from "../../src/api/endpoint.ts";
import { createInProcessClient, type InProcessCsiProxyClient } from "../../src/in-process/in-process-client.ts";
import { startDaemonProcess, repoRoot, type DaemonProcess } from "../helpers/daemon-process.ts";
import { prepareKubeletDir } from "../helpers/rpc-matrix.ts";
import { differentialCases, grpc, hugeCases, loadGrpcClientClass, record, serviceOf, type Outcome } from "../helpers/differential.ts";
import { allEndpoints } from "../../src/api/catalog.ts";

/** Listing RPCs read host state other processes change (loop devices of parallel tests): such a pair is asked again. */
const LISTING = /^(List|Get|Disk|Volume)/;

describe("in-process client ≡ grpc-js over the daemon's socket, every RPC of the catalog", () => {
  let daemon: DaemonProcess;
  let stateDir: string;
  let inProcess: InProcessCsiProxyClient;
  before(async () => {
    stateDir = path.join(mkdtempSync(path.join(tmpdir(), "csi-proxy-diff-state-")), "state");
    daemon = await startDaemonProcess({ args: ["-state-dir", stateDir] });
    mkdirSync(daemon.kubeletDir, { recursive: true });
    inProcess = await createInProcessClient({
      platform: "linux", kubeletPath: daemon.kubeletDir, workingDirs: [], socketDir: daemon.socketDir, requirePrivacy: true,
      defaultFsType: "ext4", stateDir, allowedServices: [],
    });
  });
  after(async () => {
    if (daemon) assert.equal(await daemon.stop(), 0);
  });

  it("answers every case as grpc-js decodes the daemon's answer", async () => {
    const cases = [...differentialCases(daemon.kubeletDir), ...hugeCases(daemon.kubeletDir)];
    const bad = cases.filter((c) => c.variant !== "as sent").length;
    const grpcClients = new Map<string, Record<string, (...a: unknown[]) => unknown> & { close(): void }>();
    for (const { group, version } of allEndpoints()) {
      const Client = loadGrpcClientClass(path.join(repoRoot, "proto"), group, version);
      grpcClients.set(`${group}/${version}`, new Client(`unix:${socketPath(daemon.socketDir, group, version)}`, grpc.credentials.createInsecure()));
    }
    const mismatches: string[] = [];
    let rpcs = 0, okAnswers = 0, errorAnswers = 0;
    const seen = new Set<string>();
    try {
      prepareKubeletDir(daemon.kubeletDir);
      for (const c of cases) {
        const key = `${c.group}/${c.version}/${c.method}`;
        if (!seen.has(key)) {
          seen.add(key);
          rpcs++;
        }
        const viaGrpc = (request: unknown) => {
          const client = grpcClients.get(`${c.group}/${c.version}`)!;
          return answerWithin(record((r, cb) => client[c.method](r, cb), request));
        };
        const viaInProcess = (request: unknown) => {
          const client = inProcess.client(c.group, c.version);
          return answerWithin(record((r, cb) => client[c.method](r, cb), request));
        };
        let a: Outcome, b: Outcome;
        for (let attempt = 0; ; attempt++) {
          // Only filesystem calls change the kubelet dir: each side starts from the same layout.
          if (c.group === "filesystem") prepareKubeletDir(daemon.kubeletDir);
          a = await viaGrpc(structuredCloneOrSame(c.request));
          if (c.group === "filesystem") prepareKubeletDir(daemon.kubeletDir);
          b = await viaInProcess(structuredCloneOrSame(c.request));
          const same = isDeepStrictEqual(a, b);
          if (same || !LISTING.test(c.method) || attempt === 2) break;
        }
        if (a.ok) okAnswers++;
        else errorAnswers++;
        try {
          assert.deepStrictEqual(b, a);
        } catch {
          mismatches.push(`${key} [${c.variant}]\n  grpc-js:    ${JSON.stringify(a)}\n  in-process: ${JSON.stringify(b)}`);
        }
      }
    } finally {
      for (const client of grpcClients.values()) client.close();
    }
    assert.equal(rpcs, allEndpoints().reduce((n, { group, version }) => n + serviceOf(group, version).methods.length, 0));
    assert.ok(okAnswers > 50 && errorAnswers > 50, `both kinds of answers compared (ok ${okAnswers}, errors ${errorAnswers})`);
    assert.ok(bad >= 300, `${bad} malformed requests compared`);
    assert.ok(cases.filter((c) => /surrogate/.test(c.variant)).length >= 100 && cases.filter((c) => /4 MiB/.test(c.variant)).length >= 12, "surrogate and size cases compared");
    assert.deepEqual(mismatches, [], `${mismatches.length} of ${cases.length} cases differ`);
    console.log(`differential: ${cases.length} cases (${bad} malformed, ${rpcs} RPCs), ${okAnswers} OK and ${errorAnswers} error answers, all equal`);
  });

  it("deliberate difference, counted apart: call options null/undefined — grpc-js throws a TypeError, in-process answers INVALID_ARGUMENT", async () => {
    let counted = 0;
    for (const { group, version } of allEndpoints()) {
      const method = serviceOf(group, version).methods[0].name;
      const Client = loadGrpcClientClass(path.join(repoRoot, "proto"), group, version);
      const client = new Client(`unix:${socketPath(daemon.socketDir, group, version)}`, grpc.credentials.createInsecure());
      try {
        for (const options of [null, undefined]) {
          assert.throws(() => client[method]({}, options, () => {}), TypeError, `grpc-js ${group} ${version} ${method}`);
          const answer = await record((r, cb) => inProcess.client(group, version)[method](r, options, cb), {});
          assert.deepEqual(answer, { ok: false, code: 3, details: `call options: expected an object (or Metadata), got ${String(options)}`, message: `3 INVALID_ARGUMENT: call options: expected an object (or Metadata), got ${String(options)}`, metadata: {} });
          counted++;
        }
      } finally {
        client.close();
      }
    }
    assert.equal(counted, allEndpoints().length * 2);
  });
});

/** A call that does not answer within 30 s is recorded as such (a mismatch to report, not a hung test). */
function answerWithin(p: Promise<Outcome>, ms = 30_000): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Outcome>((resolve) => (timer = setTimeout(() => resolve({ ok: false, message: `no answer within ${ms} ms` }), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Each side gets its own copy of the request (a client must not be able to affect the other's input). */
function structuredCloneOrSame(value: unknown): unknown {
  return value === undefined ? undefined : structuredClone(value);
}
