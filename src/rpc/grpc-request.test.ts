// src/rpc/grpc-request.ts on its own: header blocks to request fields, the acceptance order, the
// message frame, decompression bounds.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { acceptRequest, decodeRequestHeaders, decompressRequest, isRefusal, unframeRequest, type Refusal } from "./grpc-request.ts";
import { HpackDecoder } from "./hpack-decoder.ts";
import { Http2ConnectionError } from "./http2-connection-error.ts";
import { hpackLiteral } from "./hpack-encoder.ts";
import { Code } from "../errors.ts";
import type { UnaryMethod } from "./grpc-service.ts";

const POST = Buffer.from([0x83]);
const block = (...fields: [string, string][]) => Buffer.concat([POST, ...fields.map(([n, v]) => hpackLiteral(n, v))]);
const methods = new Map<string, UnaryMethod>([["/v1.Filesystem/PathExists", { call: async () => new Uint8Array() } as unknown as UnaryMethod]]);
const headers = (...fields: [string, string][]) => decodeRequestHeaders(new HpackDecoder(), block([":path", "/v1.Filesystem/PathExists"], ["content-type", "application/grpc"], ...fields));
const prefixed = (flag: number, message: Buffer) => {
  const head = Buffer.alloc(5);
  head[0] = flag;
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
};

describe("gRPC request (src/rpc/grpc-request.ts)", () => {
  it("decodes the fields gRPC needs and the RFC 7541 list size", () => {
    const h = headers(["grpc-timeout", "5S"], ["grpc-encoding", "gzip"], ["x-other", "1"]);
    assert.deepEqual(h, {
      path: "/v1.Filesystem/PathExists", method: "POST", contentType: "application/grpc", timeout: "5S", encoding: "gzip", malformed: false,
      size: [[":method", "POST"], [":path", "/v1.Filesystem/PathExists"], ["content-type", "application/grpc"], ["grpc-timeout", "5S"], ["grpc-encoding", "gzip"], ["x-other", "1"]].reduce((n, [a, b]) => n + a.length + b.length + 32, 0),
    });
  });

  it("a pseudo-header after a regular field, or an uppercase name, is malformed; a bad HPACK block is COMPRESSION_ERROR", () => {
    assert.equal(headers([":authority", "x"]).malformed, true);
    assert.equal(headers(["X-Upper", "1"]).malformed, true);
    assert.throws(() => decodeRequestHeaders(new HpackDecoder(), Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])), (e) => e instanceof Http2ConnectionError && e.code === 9);
  });

  it("accepts or refuses in grpc-go's order, with its codes and texts", () => {
    const refusal = (r: ReturnType<typeof acceptRequest>) => (isRefusal(r) ? [r.code, r.message, r.httpStatus] : "accepted");
    assert.deepEqual(refusal(acceptRequest(headers(), methods, 10)), [Code.ResourceExhausted, `header list of ${headers().size} bytes exceeds 10`, undefined]);
    assert.deepEqual(refusal(acceptRequest({ ...headers(), method: "GET" }, methods, 1e6)), [Code.Internal, 'unsupported HTTP method "GET"', "405"]);
    assert.deepEqual(refusal(acceptRequest({ ...headers(), contentType: "text/plain" }, methods, 1e6)), [Code.Internal, 'unsupported content-type "text/plain"', "415"]);
    assert.deepEqual(refusal(acceptRequest({ ...headers(), path: "/x.Y/Z" }, methods, 1e6)), [Code.Unimplemented, "The server does not implement the method /x.Y/Z", undefined]);
    assert.deepEqual(refusal(acceptRequest(headers(["grpc-encoding", "br"]), methods, 1e6)), [Code.Unimplemented, 'Received message compressed with unsupported encoding "br"', undefined]);
    assert.deepEqual(refusal(acceptRequest(headers(["grpc-timeout", "soon"]), methods, 1e6)), [Code.Internal, 'invalid grpc-timeout "soon"', undefined]);
    const ok = acceptRequest(headers(["grpc-timeout", "250m"], ["grpc-encoding", "deflate"]), methods, 1e6);
    assert.ok(!isRefusal(ok));
    assert.deepEqual([ok.encoding, ok.timeoutMs], ["deflate", 250]);
    assert.equal((acceptRequest(headers(["grpc-encoding", "identity"]), methods, 1e6) as { encoding?: string }).encoding, undefined);
  });

  it("unframes exactly one message", () => {
    const m = Buffer.from("hello");
    assert.deepEqual(unframeRequest(prefixed(0, m), 100, undefined), { message: m, compressed: false });
    assert.deepEqual(unframeRequest(prefixed(1, m), 100, "gzip"), { message: m, compressed: true });
    const msg = (r: ReturnType<typeof unframeRequest>) => (r as Refusal).message;
    assert.equal(msg(unframeRequest(Buffer.alloc(3), 100, undefined)), "request message missing");
    assert.equal(msg(unframeRequest(prefixed(0, m), 4, undefined)), "Received message larger than max (5 vs. 4)");
    assert.equal(msg(unframeRequest(prefixed(0, m).subarray(0, 8), 100, undefined)), "request message truncated");
    assert.equal(msg(unframeRequest(Buffer.concat([prefixed(0, m), prefixed(0, m)]), 100, undefined)), "more than one request message for a unary method");
    assert.equal(msg(unframeRequest(prefixed(1, m), 100, undefined)), "compressed request message without grpc-encoding");
  });

  it("decompresses within the maximum; a bomb is RESOURCE_EXHAUSTED, garbage Internal", async () => {
    const run = (encoding: "gzip" | "deflate", data: Buffer, max: number) => new Promise<Uint8Array | Refusal>((resolve) => decompressRequest(encoding, data, max, resolve));
    assert.deepEqual(Buffer.from((await run("gzip", gzipSync("plain"), 100)) as Uint8Array).toString(), "plain");
    assert.deepEqual(await run("gzip", gzipSync(Buffer.alloc(1 << 20)), 1000), { code: Code.ResourceExhausted, message: "Received message after decompression larger than max (1000)" });
    assert.equal(((await run("deflate", Buffer.from("not zlib"), 1000)) as Refusal).code, Code.Internal);
  });
});
