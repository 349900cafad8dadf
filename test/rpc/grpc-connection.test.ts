// The HTTP/2 gRPC layer (src/rpc/grpc-connection.ts) against Node's own HTTP/2 client (nghttp2:
// Huffman-coded headers, its own flow control): statuses, deadlines, message limits, compression,
// responses larger than the client's windows, many concurrent calls, and bytes that are not HTTP/2.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import * as net from "node:net";
import { gzipSync } from "node:zlib";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { serveEndpoints, type ServingEndpoints } from "../../src/rpc/serve-endpoints.ts";
import { System, GetBIOSSerialNumberResponseSchema } from "../../src/gen/system/v1alpha1/api_pb.ts";
import { Filesystem, PathExistsRequestSchema, PathExistsResponseSchema } from "../../src/gen/filesystem/v1/api_pb.ts";
import type { CallContext } from "../../src/api/handlers.ts";
import { CsiProxyError, Code } from "../../src/errors.ts";

const frame = (message: Uint8Array, compressed = false) => {
  const out = Buffer.alloc(5 + message.length);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
};
const pathRequest = (p: string) => toBinary(PathExistsRequestSchema, create(PathExistsRequestSchema, { path: p }));

interface Reply { httpStatus: number; grpcStatus: number; message: string; body: Buffer }

function call(session: http2.ClientHttp2Session, rpcPath: string, body: Buffer, headers: http2.OutgoingHttpHeaders = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": rpcPath, "content-type": "application/grpc", te: "trailers", ...headers });
    let httpStatus = 0, grpcStatus = -1, message = "";
    const chunks: Buffer[] = [];
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h["grpc-status"] !== undefined) grpcStatus = Number(h["grpc-status"]);
      if (h["grpc-message"] !== undefined) message = decodeURIComponent(String(h["grpc-message"]));
    };
    req.on("response", (h) => ((httpStatus = Number(h[":status"])), take(h)));
    req.on("trailers", take);
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const all = Buffer.concat(chunks);
      resolve({ httpStatus, grpcStatus, message, body: all.length >= 5 ? all.subarray(5, 5 + all.readUInt32BE(1)) : all });
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("gRPC over HTTP/2 (src/rpc/grpc-connection.ts)", () => {
  let dir: string, serving: ServingEndpoints, session: http2.ClientHttp2Session;
  let fsSocket: string;
  const aborted: unknown[] = [];
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-h2-"));
    fsSocket = path.join(dir, "fs.sock");
    const fsHandlers = {
      pathExists: ({ path: p }: { path: string }, ctx: CallContext) => {
        if (p === "/hang") return new Promise(() => ctx.signal.addEventListener("abort", () => aborted.push(ctx.signal.reason)));
        if (p === "/stops-slowly") {
          // Stops 300 ms after its signal, saying what it did (as a recursive delete does).
          return new Promise((_, reject) =>
            ctx.signal.addEventListener("abort", () => setTimeout(() => reject(new CsiProxyError(Code.DeadlineExceeded, "stopped: 3 removed, 2 left")), 300)),
          );
        }
        if (p === "/rethrows") return new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
        if (p === "/denied") throw new CsiProxyError(Code.PermissionDenied, "path /denied is not within ✓ 100% [dirs]");
        if (p === "/edge") throw new CsiProxyError(Code.InvalidArgument, " starts and ends with a space: ");
        return Promise.resolve({ exists: p.endsWith("yes") });
      },
    };
    const systemHandlers = { getBIOSSerialNumber: async () => ({ serialNumber: "s".repeat(300_000) }) };
    serving = await serveEndpoints(
      [
        { group: "filesystem", version: "v1", address: fsSocket, service: Filesystem, handlers: fsHandlers as never },
        { group: "system", version: "v1alpha1", address: path.join(dir, "sys.sock"), service: System, handlers: systemHandlers as never },
      ],
      { observer: { start: () => () => {} }, maxMessageBytes: 1024 },
    );
    session = http2.connect("http://localhost", { createConnection: () => net.connect(fsSocket) });
  });
  after(async () => {
    session.close();
    await serving.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers OK with the encoded response, and coded errors as trailers-only with the percent-encoded message", async () => {
    const yes = await call(session, "/v1.Filesystem/PathExists", frame(pathRequest("/k/yes")));
    assert.deepEqual([yes.httpStatus, yes.grpcStatus, yes.message], [200, 0, "OK"]);
    assert.equal(fromBinary(PathExistsResponseSchema, yes.body).exists, true);
    const denied = await call(session, "/v1.Filesystem/PathExists", frame(pathRequest("/denied")));
    assert.deepEqual([denied.httpStatus, denied.grpcStatus, denied.message], [200, Code.PermissionDenied, "path /denied is not within ✓ 100% [dirs]"]);
    // A space at either end of a field value makes nghttp2 drop the field: upstream's texts end so
    // (`not an absolute Windows path: ` for an empty path), so those spaces are percent-encoded.
    const edge = await call(session, "/v1.Filesystem/PathExists", frame(pathRequest("/edge")));
    assert.deepEqual([edge.grpcStatus, edge.message], [Code.InvalidArgument, " starts and ends with a space: "]);
  });

  it("serves only the endpoint's own service: other methods are UNIMPLEMENTED", async () => {
    const r = await call(session, "/v1alpha1.System/GetBIOSSerialNumber", frame(new Uint8Array()));
    assert.deepEqual([r.grpcStatus, r.message], [Code.Unimplemented, "The server does not implement the method /v1alpha1.System/GetBIOSSerialNumber"]);
  });

  it("grpc-timeout: the handler's signal is aborted when it passes; the answer waits for the handler to stop", async () => {
    let t0 = performance.now();
    const r = await call(session, "/v1.Filesystem/PathExists", frame(pathRequest("/rethrows")), { "grpc-timeout": "150m" });
    assert.deepEqual([r.grpcStatus, r.message], [Code.DeadlineExceeded, "Deadline exceeded"]);
    assert.ok(performance.now() - t0 >= 140);
    // A handler that takes 300 ms to stop: its own answer, sent after it stopped.
    t0 = performance.now();
    const slow = await call(session, "/v1.Filesystem/PathExists", frame(pathRequest("/stops-slowly")), { "grpc-timeout": "150m" });
    assert.deepEqual([slow.grpcStatus, slow.message], [Code.DeadlineExceeded, "stopped: 3 removed, 2 left"]);
    assert.ok(performance.now() - t0 >= 440, `answered ${Math.round(performance.now() - t0)} ms after the call began`);
  });

  it("grpc-timeout: a handler that does not stop is answered after the grace, saying so", async () => {
    const t0 = performance.now();
    const r = await call(session, "/v1.Filesystem/PathExists", frame(pathRequest("/hang")), { "grpc-timeout": "150m" });
    assert.deepEqual([r.grpcStatus, r.message], [Code.DeadlineExceeded, "Deadline exceeded; the call's work had not stopped 2000 ms later"]);
    assert.ok(performance.now() - t0 >= 2_140);
    assert.equal((aborted.at(-1) as CsiProxyError).code, Code.DeadlineExceeded);
  });

  it("refuses a request message above the limit with RESOURCE_EXHAUSTED, and the connection stays usable", async () => {
    const big = frame(pathRequest("/" + "x".repeat(5000)));
    const r = await call(session, "/v1.Filesystem/PathExists", big);
    assert.equal(r.grpcStatus, Code.ResourceExhausted, r.message);
    assert.match(r.message, /larger than max \(\d+ vs\. 1024\)/);
    assert.equal((await call(session, "/v1.Filesystem/PathExists", frame(pathRequest("/yes")))).grpcStatus, 0);
  });

  it("accepts gzip-compressed requests (grpc-encoding: gzip)", async () => {
    const r = await call(session, "/v1.Filesystem/PathExists", frame(gzipSync(pathRequest("/k/yes")), true), { "grpc-encoding": "gzip" });
    assert.equal(r.grpcStatus, 0, r.message);
    assert.equal(fromBinary(PathExistsResponseSchema, r.body).exists, true);
  });

  it("refuses a request that is not gRPC (content-type) and a malformed message frame", async () => {
    const r = await call(session, "/v1.Filesystem/PathExists", frame(pathRequest("/yes")), { "content-type": "application/json" });
    assert.equal(r.httpStatus, 415);
    const truncated = await call(session, "/v1.Filesystem/PathExists", frame(pathRequest("/yes")).subarray(0, 7));
    assert.equal(truncated.grpcStatus, Code.Internal);
  });

  it("sends a response larger than the client's flow-control windows", async () => {
    const small = http2.connect("http://localhost", { createConnection: () => net.connect(path.join(dir, "sys.sock")), settings: { initialWindowSize: 16384 } });
    try {
      const r = await call(small, "/v1alpha1.System/GetBIOSSerialNumber", frame(new Uint8Array()));
      assert.equal(r.grpcStatus, 0, r.message);
      assert.equal(fromBinary(GetBIOSSerialNumberResponseSchema, r.body).serialNumber.length, 300_000);
    } finally {
      small.close();
    }
  });

  it("answers 500 concurrent calls on one connection", async () => {
    const replies = await Promise.all(Array.from({ length: 500 }, (_, i) => call(session, "/v1.Filesystem/PathExists", frame(pathRequest(i % 2 ? "/yes" : "/no")))));
    replies.forEach((r, i) => assert.equal(fromBinary(PathExistsResponseSchema, r.body).exists, i % 2 === 1));
  });

  it("a client's RST_STREAM before the answer aborts the handler's signal (Canceled)", async () => {
    const before = aborted.length;
    const req = session.request({ ":method": "POST", ":path": "/v1.Filesystem/PathExists", "content-type": "application/grpc" });
    req.on("error", () => {});
    req.end(frame(pathRequest("/hang")));
    await new Promise((r) => setTimeout(r, 100));
    req.close(http2.constants.NGHTTP2_CANCEL);
    for (let i = 0; i < 50 && aborted.length === before; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal((aborted.at(-1) as CsiProxyError).code, Code.Canceled);
  });

  it("closes a connection whose first bytes are not the HTTP/2 preface", async () => {
    const s = net.connect(fsSocket);
    s.on("error", () => {});
    s.resume(); // read what the server sends (its SETTINGS) so the end of the stream is seen
    s.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    await new Promise((resolve) => s.once("close", resolve));
  });

  it("ends a connection that breaks the protocol with GOAWAY, others unaffected", async () => {
    const s = net.connect(fsSocket);
    const received: Buffer[] = [];
    s.on("data", (d) => received.push(d));
    s.on("error", () => {});
    // Preface, SETTINGS, then a HEADERS frame on stream 0 (PROTOCOL_ERROR).
    s.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]), Buffer.from([0, 0, 1, 1, 5, 0, 0, 0, 0, 0x82])]));
    await new Promise((resolve) => s.once("close", resolve));
    const all = Buffer.concat(received);
    let goaway = -1;
    for (let p = 0; p + 9 <= all.length; p += 9 + all.readUIntBE(p, 3)) if (all[p + 3] === 7) goaway = all.readUInt32BE(p + 13);
    assert.equal(goaway, 1, "GOAWAY(PROTOCOL_ERROR)");
    assert.equal((await call(session, "/v1.Filesystem/PathExists", frame(pathRequest("/yes")))).grpcStatus, 0);
  });
});
