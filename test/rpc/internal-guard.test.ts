// The "no Internal" guard of the test helpers can fail: an in-process server whose handler throws
// an uncoded error (→ Internal at the boundary) trips guardedObserver, and the daemon's error line
// for such an answer trips assertNoInternalAnswers, while OK and coded answers trip neither.
import { it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import * as net from "node:net";
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { assertNoInternalAnswers, guardedObserver, internalAnswers } from "../helpers/internal-guard.ts";
import { serveEndpoints } from "../../src/rpc/serve-endpoints.ts";
import { Filesystem } from "../../src/gen/filesystem/v1/api_pb.ts";
import { notFound } from "../../src/errors.ts";

it("guardedObserver records Internal answers and check() fails; coded failures pass", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-guard-"));
  const address = path.join(dir, "fs.sock");
  const handlers = {
    pathExists: async (req: { path: string }) => {
      if (req.path === "/bug") throw new TypeError("x is undefined"); // an uncoded error: our bug
      if (req.path === "/missing") throw notFound("no such path");
      return { exists: true };
    },
  };
  const guard = guardedObserver();
  const serving = await serveEndpoints([{ group: "filesystem", version: "v1", address, service: Filesystem, handlers: handlers as never }], { observer: guard });
  const sessions = new Http2SessionManager("http://localhost", {}, { createConnection: () => net.connect(address) });
  const client = createClient(Filesystem, createGrpcTransport({ baseUrl: "http://localhost", sessionManager: sessions }));
  try {
    await client.pathExists({ path: "/ok" });
    await assert.rejects(client.pathExists({ path: "/missing" }), (e) => ConnectError.from(e).code === Code.NotFound);
    guard.check(); // OK and NotFound: clean
    await assert.rejects(client.pathExists({ path: "/bug" }), (e) => ConnectError.from(e).code === Code.Internal);
    assert.throws(() => guard.check(), /answered 1 call\(s\) with Internal\/Unknown:\n\/v1\.Filesystem\/PathExists code=Internal error=x is undefined/);
  } finally {
    sessions.abort();
    await serving.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

it("assertNoInternalAnswers finds the daemon's Internal/Unknown lines and nothing else", () => {
  const log = [
    "I1123 20:00:00.000001   42 daemon.ts:1] /csi.v1.disk.Disk/ListDiskIDs code=OK duration=1.000ms",
    'I1123 20:00:00.000002   42 daemon.ts:1] /csi.v1.disk.Disk/GetDiskStats request={"path":"code=Internal duration="}',
    'E1123 20:00:00.000003   42 daemon.ts:1] /csi.v1.volume.Volume/FormatVolume code=Internal duration=2.000ms error="boom"',
    'E1123 20:00:00.000004   42 daemon.ts:1] /csi.v1.smb.Smb/NewSmbGlobalMapping code=Unknown duration=3.000ms',
  ].join("\n");
  assert.deepEqual(internalAnswers(log), [
    '/csi.v1.volume.Volume/FormatVolume code=Internal duration=2.000ms error="boom"',
    "/csi.v1.smb.Smb/NewSmbGlobalMapping code=Unknown duration=3.000ms",
  ]);
  assert.throws(() => assertNoInternalAnswers(log), /answered 2 call\(s\) with Internal\/Unknown/);
  assertNoInternalAnswers(log.split("\n").slice(0, 2).join("\n"));
});
