// The in-process client is constructed as a grpc-js client is: synchronously, with or without
// `new`, usable at once; a bad config throws synchronously as a coded error; a set-up that fails
// later fails each call with a coded error (nothing done), and its `ready` promise never becomes an
// unhandled rejection. The earlier async form still works.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { InProcessCsiProxyClient, createInProcessClient } from "../../src/in-process/in-process-client.ts";
import { InProcessMetadata } from "../../src/in-process/grpc-style-client.ts";
import { CsiProxyError, Code } from "../../src/errors.ts";
import type { Services } from "../../src/groups/services.ts";
import { createServices } from "../../src/compose/compose.ts";

let root: string, kubelet: string;
const quiet = { info: () => {}, warning: () => {} };
before(() => {
  root = mkdtempSync(path.join(tmpdir(), "csi-proxy-construct-"));
  kubelet = path.join(root, "kubelet");
  mkdirSync(kubelet);
});
after(() => rmSync(root, { recursive: true, force: true }));

const config = () => ({ kubeletPath: kubelet, stateDir: path.join(root, "state"), logger: quiet });

/** One grpc-style call as a promise of { err, res }. */
function call(fn: (req: unknown, cb: (err: unknown, res?: unknown) => void) => unknown, request: unknown) {
  return new Promise<{ err: (Error & { code: number; details: string }) | null; res?: unknown }>((resolve) => {
    fn(request, (err, res) => resolve({ err: err as never, res }));
  });
}

/** Counts 'unhandledRejection' events while `body` runs and a few turns after it. */
async function unhandledDuring(body: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const onRejection = (reason: unknown) => seen.push(reason);
  process.on("unhandledRejection", onRejection);
  try {
    await body();
    await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off("unhandledRejection", onRejection);
  }
  return seen;
}

describe("InProcessCsiProxyClient: constructed like a grpc-js client", () => {
  it("returns synchronously, plain call or new, and its clients are usable at once", async () => {
    const plain = InProcessCsiProxyClient(config());
    const constructed = new InProcessCsiProxyClient(config(), { services: { filesystem: { version: "v1beta1", connection: "ignored" } }, pipe_prefix: "csi-proxy" });
    assert.equal(typeof plain.clients.filesystem.PathExists, "function");
    // Called before anything was awaited: the call waits for set-up and answers.
    const first = call(plain.clients.filesystem.PathExists, { path: kubelet });
    const beta = call(constructed.clients.filesystem.PathExists, { path: kubelet });
    const dir = path.join(kubelet, "made-at-once");
    const viaRpc = constructed.executeRPC("filesystem", "Mkdir", { path: dir });
    assert.deepEqual(await first, { err: null, res: { exists: true } });
    assert.deepEqual(await beta, { err: null, res: { error: "", exists: true } }); // v1beta1 answers carry an error field
    assert.deepEqual(await viaRpc, { error: "" });
    assert.ok(existsSync(dir));
    await plain.ready;
    await constructed.ready;
  });

  it("has no prototype in clients or in a group's client: a driver's own clients[name][method] lookup finds no function for prototype names", () => {
    const client = InProcessCsiProxyClient(config());
    const lookup = (service: string, method: string): unknown => (client.clients as unknown as Record<string, Record<string, unknown> | undefined>)[service]?.[method];
    for (const name of ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"]) {
      assert.equal(lookup(name, "toString"), undefined, `clients[${name}]`);
      assert.equal(lookup("filesystem", name), undefined, `clients.filesystem[${name}]`);
    }
    assert.equal(typeof lookup("filesystem", "PathExists"), "function");
  });

  it("throws a bad config or bad options synchronously as an InvalidArgument CsiProxyError", () => {
    const cases: [string, () => unknown, RegExp][] = [
      ["relative kubeletPath", () => InProcessCsiProxyClient({ ...config(), kubeletPath: "kubelet" }), /^config\.kubeletPath: expected an absolute path/],
      ["workingDirs a string", () => new InProcessCsiProxyClient({ ...config(), workingDirs: "/tmp" as never }), /^config\.workingDirs: expected an array/],
      ["unknown version", () => InProcessCsiProxyClient(config(), { services: { filesystem: { version: "v9" } } }), /^options\.services\.filesystem\.version: expected a version csi-proxy serves/],
      ["unknown group", () => InProcessCsiProxyClient(config(), { services: { nfs: {} } as never }), /^options\.services: unknown group "nfs"/],
    ];
    for (const [what, make, text] of cases) {
      assert.throws(make, (e: unknown) => {
        assert.ok(e instanceof CsiProxyError, `${what}: ${String(e)}`);
        assert.equal(e.code, Code.InvalidArgument, what);
        assert.match(e.message, text, what);
        return true;
      });
    }
  });

  it("a set-up that fails later fails every call with UNAVAILABLE, nothing done, and ready is never an unhandled rejection", async () => {
    const warnings: string[] = [];
    const dir = path.join(kubelet, "never-made");
    const unhandled = await unhandledDuring(async () => {
      const failing = Promise.reject(new CsiProxyError(Code.FailedPrecondition, "host layer cannot start"));
      const client = InProcessCsiProxyClient({ ...config(), logger: { info: () => {}, warning: (m: string) => warnings.push(m) } }, { groupServices: failing });
      const a = await call(client.clients.filesystem.Mkdir, { path: dir });
      const b = await client.executeRPC("disk", "ListDiskLocations", {}).then(() => null, (e: Error & { code: number; details: string }) => e);
      for (const err of [a.err, b]) {
        assert.ok(err, "the call failed");
        assert.equal(err.code, Code.Unavailable);
        assert.equal(err.details, "csi-proxy in-process set-up failed (FailedPrecondition): host layer cannot start; nothing was done");
        assert.equal(err.message, `14 UNAVAILABLE: ${err.details}`);
        const metadata = (err as unknown as { metadata: unknown }).metadata;
        assert.ok(metadata instanceof InProcessMetadata);
        assert.deepEqual(metadata.getMap(), {}, "a client-side status: no trailers");
      }
      // A second client whose ready nobody ever looks at.
      InProcessCsiProxyClient(config(), { groupServices: Promise.reject(new Error("never awaited")) });
      await assert.rejects(client.ready, { code: Code.Unavailable });
    });
    assert.deepEqual(unhandled, []);
    assert.ok(!existsSync(dir));
    assert.deepEqual(warnings, ["csi-proxy in-process set-up failed (FailedPrecondition): host layer cannot start; nothing was done; every call answers UNAVAILABLE"]);
  });

  it("calls made while set-up runs wait for it", async () => {
    let finish!: (s: Services) => void;
    const pending = new Promise<Services>((resolve) => (finish = resolve));
    const client = InProcessCsiProxyClient(config(), { groupServices: pending });
    let answered = false;
    const answer = call(client.clients.filesystem.PathExists, { path: kubelet }).then((r) => ((answered = true), r));
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(answered, false);
    finish(await createServices({ platform: "linux", kubeletPath: kubelet, workingDirs: [], socketDir: "", requirePrivacy: true, defaultFsType: "ext4", stateDir: path.join(root, "state"), allowedServices: [], logger: quiet }));
    assert.deepEqual(await answer, { err: null, res: { exists: true } });
  });

  it("keeps the async form: createInProcessClient resolves once set up, rejects a bad config or a failed set-up with its coded error", async () => {
    const client = await createInProcessClient(config());
    assert.deepEqual(await client.executeRPC("filesystem", "PathExists", { path: kubelet }), { exists: true });
    await assert.rejects(createInProcessClient({ ...config(), stateDir: "state" }), (e: unknown) => e instanceof CsiProxyError && e.code === Code.InvalidArgument && e.message.startsWith("config.stateDir: expected an absolute path"));
    await assert.rejects(createInProcessClient(config(), { groupServices: Promise.reject(new Error("boom")) }), { code: Code.Unavailable, details: "csi-proxy in-process set-up failed (Internal): boom; nothing was done" });
  });
});
