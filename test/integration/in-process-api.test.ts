// The typed in-process API and createServices are strict: every bad input is a CsiProxyError with a
// gRPC code and nothing runs; the grpc-style client's own call controls (deadline, cancel, executeRPC).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createInProcessApi, type InProcessApi } from "../../src/in-process/typed-api.ts";
import { createInProcessClient } from "../../src/in-process/in-process-client.ts";
import { createCheckedServices, createServices } from "../../src/compose/compose.ts";
import { NO_REQUEST, REQUESTS } from "../../src/groups/service-guard.ts";
import { CsiProxyError, Code } from "../../src/errors.ts";
import type { ProxyConfig } from "../../src/proxy-config.ts";
import type { Services } from "../../src/groups/services.ts";

let root: string, kubelet: string, config: ProxyConfig;
before(() => {
  root = mkdtempSync(path.join(tmpdir(), "csi-proxy-inproc-"));
  kubelet = path.join(root, "kubelet");
  mkdirSync(kubelet);
  config = { platform: "linux", kubeletPath: kubelet, workingDirs: [], socketDir: path.join(root, "sockets"), requirePrivacy: true, defaultFsType: "ext4", stateDir: path.join(root, "state"), allowedServices: [] };
});
after(() => rmSync(root, { recursive: true, force: true }));

async function rejectsCoded(p: Promise<unknown>, code: number, text?: RegExp) {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof CsiProxyError, `a CsiProxyError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    if (text) assert.match(err.message, text);
    return true;
  });
}

describe("typed in-process API", () => {
  let api: InProcessApi;
  before(async () => {
    api = await createInProcessApi(config);
  });

  it("runs the versioned RPCs and answers protobuf-es messages", async () => {
    const dir = path.join(kubelet, "typed/a");
    await api.filesystem.v1.mkdir({ path: dir });
    assert.ok(existsSync(dir));
    const res = await api.filesystem.v1.pathExists({ path: dir });
    assert.equal(res.$typeName, "v1.PathExistsResponse");
    assert.equal(res.exists, true);
    assert.deepEqual(await api.call("filesystem", "v1beta1", "IsMountPoint", { path: dir }), await api.filesystem.v1beta1.isMountPoint({ path: dir }));
    await rejectsCoded(api.filesystem.v1.mkdir({ path: "/etc/csi-proxy-typed" }), Code.PermissionDenied);
  });

  it("refuses every malformed request with InvalidArgument before anything runs", async () => {
    const target = path.join(kubelet, "never");
    const bad: [string, unknown][] = [
      ["null", null], ["a number", 5], ["an array", [{ path: target }]], ["a string path as number", { path: 5 }],
      ["path null", { path: null }], ["unknown field", { path: target, nope: 1 }], ["foreign $typeName", { $typeName: "v1.Other", path: target }],
      ["a Map", new Map([["path", target]])], ["a lone surrogate", { path: `${target}\uD800` }], ["a lone low surrogate", { path: "\uDC00" }],
    ];
    for (const [what, request] of bad) await rejectsCoded(api.filesystem.v1.mkdir(request as never), Code.InvalidArgument, /request/).catch((e: Error) => assert.fail(`${what}: ${e.message}`));
    for (const request of [{ diskNumber: -1 }, { diskNumber: 1.5 }, { diskNumber: "1" }, { diskNumber: 2 ** 32 }]) {
      await rejectsCoded(api.disk.v1.partitionDisk(request as never), Code.InvalidArgument, /request\.diskNumber/);
    }
    await rejectsCoded(api.volume.v1.resizeVolume({ volumeId: "x", sizeBytes: "1" } as never), Code.InvalidArgument, /sizeBytes/);
    await rejectsCoded(api.volume.v1.resizeVolume({ volumeId: "x", sizeBytes: 2n ** 63n }), Code.InvalidArgument, /out of range/);
    await rejectsCoded(api.iscsi.v1alpha2.connectTarget({ iqn: "iqn.x", authType: 99 } as never), Code.InvalidArgument, /authType/);
    await rejectsCoded(api.iscsi.v1alpha2.addTargetPortal({ targetPortal: { targetAddress: 1 } } as never), Code.InvalidArgument, /targetPortal\.targetAddress/);
    await rejectsCoded(api.disk.v1.listDiskLocations(null as never), Code.InvalidArgument);
    assert.ok(!existsSync(target));
  });

  it("accepts only { signal?: AbortSignal } as options; an aborted signal runs nothing", async () => {
    const dir = path.join(kubelet, "rm-me");
    mkdirSync(dir);
    for (const options of [{ signal: {} }, { signal: "x" }, "x", null, { timeout: 5 }, { signal: new EventTarget() }]) {
      await rejectsCoded(api.filesystem.v1.rmdir({ path: dir, force: true }, options as never), Code.InvalidArgument, /options/);
    }
    const aborted = new AbortController();
    aborted.abort();
    await rejectsCoded(api.filesystem.v1.rmdir({ path: dir, force: true }, { signal: aborted.signal }), Code.Canceled, /nothing was done/);
    assert.ok(existsSync(dir));
    await api.filesystem.v1.rmdir({ path: dir, force: true }, { signal: new AbortController().signal });
    assert.ok(!existsSync(dir));
  });

  it("answers Unimplemented for an unknown group, version or method", async () => {
    await rejectsCoded(api.call("filesystem", "v1", "Format", {}), Code.Unimplemented);
    await rejectsCoded(api.call("filesystem", "v9", "Mkdir", {}), Code.Unimplemented);
    await rejectsCoded(api.call("nfs", "v1", "Mkdir", {}), Code.Unimplemented);
    await rejectsCoded(api.call("filesystem", "v1", "__proto__", {}), Code.Unimplemented);
    await rejectsCoded(api.call(null as never, {} as never, 5 as never), Code.Unimplemented);
  });
});

describe("createServices (library entry) checks its arguments", () => {
  let services: Services;
  before(async () => {
    services = await createCheckedServices(config);
  });

  it("refuses wrong types, null and a non-AbortSignal signal with InvalidArgument", async () => {
    await rejectsCoded(services.filesystem.pathExists({ path: 5 } as never), Code.InvalidArgument, /filesystem\.pathExists request\.path/);
    await rejectsCoded(services.filesystem.pathExists(null as never), Code.InvalidArgument);
    await rejectsCoded(services.filesystem.mkdir({} as never), Code.InvalidArgument);
    await rejectsCoded(services.filesystem.rmdir({ path: path.join(kubelet, "x"), force: true }, { signal: {} } as never), Code.InvalidArgument, /signal/);
    await rejectsCoded(services.volume.resizeVolume({ volumeId: "v", sizeBytes: 5 } as never), Code.InvalidArgument, /sizeBytes/);
    await rejectsCoded(services.iscsi.connectTarget({ iqn: "iqn.x", authType: "OTHER", chapUsername: "", chapSecret: "" } as never), Code.InvalidArgument, /authType/);
    await rejectsCoded((services.disk.listDiskLocations as (o: unknown) => Promise<unknown>)(5), Code.InvalidArgument);
    assert.equal((await services.filesystem.pathExists({ path: kubelet })).exists, true);
  });

  it("knows every method of every service (a new one must be added to its tables)", async () => {
    const raw = await createServices(config);
    for (const [group, service] of Object.entries(raw) as [keyof Services, object][]) {
      const methods = new Set<string>();
      for (let o: object | null = service; o && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
        for (const k of Object.getOwnPropertyNames(o)) if (k !== "constructor" && typeof (service as Record<string, unknown>)[k] === "function") methods.add(k);
      }
      const known = new Set([...Object.keys(REQUESTS[group]), ...(NO_REQUEST[group] as string[]), "references", "sweep", "close"]);
      assert.deepEqual([...methods].filter((m) => !known.has(m)), [], group);
    }
  });
});

describe("grpc-style in-process client: call controls", () => {
  it("executeRPC resolves the response and rejects a ServiceError shaped as grpc-js's", async () => {
    const client = await createInProcessClient(config);
    assert.deepEqual(await client.executeRPC("Filesystem", "PathExists", { path: kubelet }), { exists: true });
    await assert.rejects(client.executeRPC("filesystem", "Mkdir", { path: "/etc/x" }), (e: Error & { code: number; details: string }) => {
      assert.ok(e instanceof Error);
      assert.equal(e.code, 7);
      assert.equal(e.message, `7 PERMISSION_DENIED: ${e.details}`);
      return true;
    });
    await assert.rejects(client.executeRPC("filesystem", "Format", {}), { code: 12 });
    await assert.rejects(client.executeRPC("filesystem", "constructor", {}), { code: 12 });
    assert.throws(() => client.clients.filesystem.PathExists({ path: kubelet }), /Incorrect arguments passed/);
  });

  it("a cancelled call answers CANCELLED; a passed deadline DEADLINE_EXCEEDED", async () => {
    const client = await createInProcessClient(config);
    const tree = path.join(kubelet, "big");
    for (let i = 0; i < 200; i++) mkdirSync(path.join(tree, String(i), "a"), { recursive: true });
    const cancelled = await new Promise<{ code: number; details: string }>((resolve) => {
      const call = client.client("filesystem", "v1").Rmdir({ path: tree, force: true }, (err: unknown) => resolve(err as never));
      call.cancel();
    });
    assert.deepEqual([cancelled.code, cancelled.details], [1, "Cancelled on client"]);
    const late = await new Promise<{ code: number; details: string }>((resolve) => {
      client.clients.filesystem.PathExists({ path: kubelet }, { deadline: Date.now() - 1 }, (err: unknown) => resolve(err as never));
    });
    assert.deepEqual([late.code, late.details], [4, "Deadline exceeded"]);
    rmSync(tree, { recursive: true, force: true });
  });
});
