// The RPC boundary passes the client's cancellation to the handler (CallContext.signal), and only
// a cancellation that arrives before the answer counts.
import { it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import * as net from "node:net";
import { guardedObserver } from "../helpers/internal-guard.ts";
import { serveEndpoints } from "../../src/rpc/serve-endpoints.ts";
import { Filesystem } from "../../src/gen/filesystem/v1/api_pb.ts";
import type { CallContext } from "../../src/api/handlers.ts";

it("a client's cancellation aborts the handler's signal; answered calls are never aborted", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-cancel-"));
  const address = path.join(dir, "fs.sock");
  const aborted: string[] = [];
  const guard = guardedObserver();
  const handlers = {
    pathExists: (req: { path: string }, ctx: CallContext) =>
      new Promise<{ exists: boolean }>((resolve) => {
        ctx.signal.addEventListener("abort", () => aborted.push(req.path));
        if (req.path === "/fast") resolve({ exists: true });
      }),
  };
  const serving = await serveEndpoints([{ group: "filesystem", version: "v1", address, service: Filesystem, handlers: handlers as never }], {
    observer: guard,
  });
  const sessions = new Http2SessionManager("http://localhost", {}, { createConnection: () => net.connect(address) });
  const client = createClient(Filesystem, createGrpcTransport({ baseUrl: "http://localhost", sessionManager: sessions }));
  try {
    assert.equal((await client.pathExists({ path: "/fast" })).exists, true);
    const controller = new AbortController();
    const slow = client.pathExists({ path: "/slow" }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    await assert.rejects(slow, (e) => ConnectError.from(e).code === Code.Canceled);
    for (let i = 0; i < 50 && aborted.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(aborted, ["/slow"]);
  } finally {
    sessions.abort();
    await serving.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  guard.check();
});
