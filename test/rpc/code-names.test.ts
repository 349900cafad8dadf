// Code names as printed by the daemon's call observer (src/daemon.ts callObserver): the
// Prometheus label read from the live /metrics exposition and the V(2) log line use grpc-go's
// codes.Code.String() names — a call canceled by its client (RST_STREAM) is `Canceled`.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import * as net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { serveEndpoints, type ServingEndpoints } from "../../src/rpc/serve-endpoints.ts";
import { Filesystem, PathExistsRequestSchema } from "../../src/gen/filesystem/v1/api_pb.ts";
import type { CallContext } from "../../src/api/handlers.ts";
import { callObserver } from "../../src/daemon.ts";
import { createGrpcMetrics } from "../../src/metrics/grpc-metrics.ts";
import { serveMetrics, type MetricsServer } from "../../src/metrics/metrics-server.ts";
import { createLogger } from "../../src/log/klog.ts";

const frame = (message: Uint8Array) => {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
};

describe("code names printed by metrics and logs", () => {
  let dir: string, serving: ServingEndpoints, metricsServer: MetricsServer, metricsAddress: string;
  const logged: string[] = [];
  const logger = createLogger({ verbosity: 2, logToStderr: true, stderr: { write: (chunk, cb) => (logged.push(chunk), cb()) } });
  let aborts = 0;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-codes-"));
    const metrics = createGrpcMetrics();
    metricsServer = await serveMetrics("127.0.0.1:0", metrics.registry);
    metricsAddress = metricsServer.address;
    const handlers = {
      // Waits until the client cancels, then rejects with the signal's reason, as the groups' host calls do.
      pathExists: (_req: unknown, ctx: CallContext) =>
        new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", () => (aborts++, reject(ctx.signal.reason)))),
    };
    serving = await serveEndpoints([{ group: "filesystem", version: "v1", address: path.join(dir, "fs.sock"), service: Filesystem, handlers: handlers as never }], {
      observer: callObserver(logger, metrics),
    });
  });
  after(async () => {
    await serving.stop();
    await metricsServer.close();
    await logger.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a call canceled by its client is counted and logged as `Canceled` (grpc-go's name for code 1)", async () => {
    const session = http2.connect("http://localhost", { createConnection: () => net.connect(path.join(dir, "fs.sock")) });
    try {
      const req = session.request({ ":method": "POST", ":path": "/v1.Filesystem/PathExists", "content-type": "application/grpc", te: "trailers" });
      req.on("error", () => {});
      req.end(frame(toBinary(PathExistsRequestSchema, create(PathExistsRequestSchema, { path: "/k/x" }))));
      await new Promise((r) => setTimeout(r, 100));
      req.close(http2.constants.NGHTTP2_CANCEL);
      for (let i = 0; i < 200 && aborts === 0; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(aborts, 1, "the handler saw the cancellation");
    } finally {
      session.close();
    }
    const body = await (await fetch(`http://${metricsAddress}/metrics`)).text();
    assert.match(body, /^grpc_server_handled_total\{grpc_code="Canceled",grpc_method="PathExists",grpc_service="v1.Filesystem",grpc_type="unary"\} 1$/m);
    assert.doesNotMatch(body, /Cancelled/);
    await logger.flush();
    assert.match(logged.join(""), /\/v1\.Filesystem\/PathExists code=Canceled duration=/);
  });
});
