// The grpc-style client's executeRPC and the typed API's call find methods by own properties only:
// every unknown name — names of Object.prototype included — answers UNIMPLEMENTED, promptly, as a
// coded error (never a hang, never a TypeError); messages are bounded as the transport bounds a
// status message (4096 characters then "… (truncated)").
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createInProcessClient, type InProcessCsiProxyClient } from "../../src/in-process/in-process-client.ts";
import { createInProcessApi, type InProcessApi } from "../../src/in-process/typed-api.ts";
import { CsiProxyError, Code } from "../../src/errors.ts";
import type { ProxyConfig } from "../../src/proxy-config.ts";

/** Longest message an error may carry: the transport's status bound plus its truncation mark. */
const BOUND = 4096 + "… (truncated)".length;

const PROTO_NAMES = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "isPrototypeOf", "propertyIsEnumerable", "toLocaleString", "__defineGetter__", "__lookupGetter__", "assign", "keys"];

/** Settles `p` or fails after `ms`: a hang is a failure, not a stuck test. */
function settled<T>(p: Promise<T>, ms = 2000): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms)));
  return Promise.race([p.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error })), timeout]).finally(() => clearTimeout(timer));
}

function label(value: unknown): string {
  try {
    return String(value).slice(0, 40);
  } catch {
    return `(a ${typeof value})`;
  }
}

let root: string, config: ProxyConfig;
before(() => {
  root = mkdtempSync(path.join(tmpdir(), "csi-proxy-lookup-"));
  mkdirSync(path.join(root, "kubelet"));
  config = { platform: "linux", kubeletPath: path.join(root, "kubelet"), workingDirs: [], socketDir: path.join(root, "sockets"), requirePrivacy: true, defaultFsType: "ext4", stateDir: path.join(root, "state"), allowedServices: [] };
});
after(() => rmSync(root, { recursive: true, force: true }));

describe("executeRPC: lookup by own properties", () => {
  let client: InProcessCsiProxyClient;
  before(async () => {
    client = await createInProcessClient(config);
  });

  it("answers UNIMPLEMENTED for every prototype name as service or method, never hangs, never a TypeError", async () => {
    const pairs: [unknown, unknown][] = [];
    for (const a of PROTO_NAMES) {
      pairs.push([a, "PathExists"], ["filesystem", a]);
      for (const b of PROTO_NAMES) pairs.push([a, b]);
    }
    pairs.push([Symbol("s"), "x"], ["filesystem", Symbol("m")], [{ toString: () => { throw new Error("boom"); } }, "x"], [null, undefined], [5, 6]);
    for (const [service, method] of pairs) {
      const what = `executeRPC(${label(service)}, ${label(method)})`;
      const r = await settled(client.executeRPC(service as string, method as string, {}));
      assert.equal(r.ok, false, `${what} resolved`);
      const e = (r as { error: Error & { code?: number; details?: string } }).error;
      assert.ok(!(e instanceof TypeError), `${what}: TypeError ${e.message}`);
      assert.equal(e.code, Code.Unimplemented, `${what}: ${e.message}`);
      assert.match(e.details!, /^csi-proxy has no method /);
    }
    assert.deepEqual(await client.executeRPC("filesystem", "PathExists", { path: config.kubeletPath }), { exists: true });
  });

  it("bounds the message of an unknown name as the transport bounds a status message", async () => {
    const r = await settled(client.executeRPC("filesystem", "x".repeat(5_000_000), {}));
    const e = (r as { error: Error & { code: number; details: string } }).error;
    assert.equal(e.code, Code.Unimplemented);
    assert.ok(e.details.length <= BOUND + 200, `details ${e.details.length} characters`);
    assert.ok(e.message.length <= BOUND + 250, `message ${e.message.length} characters`);
  });
});

describe("typed API: lookup and bounded messages", () => {
  let api: InProcessApi;
  before(async () => {
    api = await createInProcessApi(config);
  });

  it("answers Unimplemented for prototype names as group, version or method", async () => {
    for (const name of PROTO_NAMES) {
      for (const [g, v, m] of [[name, "v1", "PathExists"], ["filesystem", name, "PathExists"], ["filesystem", "v1", name]]) {
        const r = await settled(api.call(g, v, m, {}));
        const e = (r as { error: unknown }).error;
        assert.ok(e instanceof CsiProxyError, `${g} ${v} ${m}: ${String(e)}`);
        assert.equal(e.code, Code.Unimplemented, `${g} ${v} ${m}: ${e.message}`);
      }
    }
    const r = await settled(api.call("filesystem", "v1", "y".repeat(5_000_000), {}));
    const e = (r as { error: CsiProxyError }).error;
    assert.equal(e.code, Code.Unimplemented);
    assert.ok(e.message.length <= BOUND + 200, `message ${e.message.length} characters`);
  });

  it("bounds the message of a service error that echoes a huge request field", async () => {
    const volumeId = "v".repeat(8 * 1024 * 1024);
    const r = await settled(api.volume.v1.resizeVolume({ volumeId, sizeBytes: 1n << 30n }), 20_000);
    const e = (r as { error: unknown }).error;
    assert.ok(e instanceof CsiProxyError, String(e));
    assert.ok(e.message.length <= BOUND, `message ${e.message.length} characters (code ${e.code})`);
  });
});
