import { Code } from "../errors.ts";
import type { UnaryMethod } from "./grpc-service.ts";
import { parseGrpcTimeout } from "./grpc-timeout.ts";
import { HpackError, type HpackDecoder } from "./hpack-decoder.ts";
import { Http2ConnectionError } from "./http2-connection-error.ts";
import { COMPRESSION_ERROR } from "./http2-frames.ts";
import { messageTooLarge } from "./transport-limits.ts";

/** The request header fields gRPC needs, from one header block (grpc-go's http_util.go, server side). */
export interface RequestHeaders {
  path: string;
  method: string;
  contentType: string;
  timeout: string;
  encoding: string;
  /** RFC 7541 size of the whole list: name + value + 32 per field. */
  size: number;
  /** A pseudo-header after a regular field, or an uppercase field name (RFC 9113 §8.2, §8.3): the stream is reset PROTOCOL_ERROR. */
  malformed: boolean;
}

/** A call refused before its handler: answered trailers-only with this status (and HTTP status). */
export interface Refusal {
  code: Code;
  message: string;
  httpStatus?: string;
}

/** What an accepted request runs with. */
export interface AcceptedRequest {
  method: UnaryMethod;
  encoding?: "gzip" | "deflate";
  /** grpc-timeout in ms, when sent. */
  timeoutMs?: number;
}

/** Decodes a header block (the decoder's dynamic table is the connection's). Throws Http2ConnectionError(COMPRESSION_ERROR). */
export function decodeRequestHeaders(decoder: HpackDecoder, block: Buffer): RequestHeaders {
  const h: RequestHeaders = { path: "", method: "", contentType: "", timeout: "", encoding: "", size: 0, malformed: false };
  let regularSeen = false;
  try {
    decoder.decode(block, (name, value) => {
      h.size += name.length + value.length + 32;
      if (name.charCodeAt(0) === 58 /* ':' */) {
        if (regularSeen) h.malformed = true;
        if (name === ":path") h.path = value;
        else if (name === ":method") h.method = value;
      } else {
        regularSeen = true;
        if (name === "content-type") h.contentType = value;
        else if (name === "grpc-timeout") h.timeout = value;
        else if (name === "grpc-encoding") h.encoding = value;
        else if (hasUppercase(name)) h.malformed = true;
      }
    });
  } catch (err) {
    if (err instanceof HpackError) throw new Http2ConnectionError(COMPRESSION_ERROR, err.message);
    throw err;
  }
  return h;
}

/**
 * Decides whether a request starts a call, in grpc-go's order: header list size, POST, gRPC
 * content-type, a method this endpoint serves (UNIMPLEMENTED with grpc-go's text otherwise),
 * a supported grpc-encoding, a valid grpc-timeout.
 */
export function acceptRequest(h: RequestHeaders, methods: ReadonlyMap<string, UnaryMethod>, maxHeaderListBytes: number): AcceptedRequest | Refusal {
  if (h.size > maxHeaderListBytes) return { code: Code.ResourceExhausted, message: `header list of ${h.size} bytes exceeds ${maxHeaderListBytes}` };
  if (h.method !== "POST") return { code: Code.Internal, message: `unsupported HTTP method ${JSON.stringify(h.method)}`, httpStatus: "405" };
  if (!h.contentType.startsWith("application/grpc")) {
    return { code: Code.Internal, message: `unsupported content-type ${JSON.stringify(h.contentType)}`, httpStatus: "415" };
  }
  const method = methods.get(h.path);
  if (!method) return { code: Code.Unimplemented, message: `The server does not implement the method ${h.path}` };
  const accepted: AcceptedRequest = { method };
  if (h.encoding && h.encoding !== "identity") {
    if (h.encoding !== "gzip" && h.encoding !== "deflate") {
      return { code: Code.Unimplemented, message: `Received message compressed with unsupported encoding "${h.encoding}"` };
    }
    accepted.encoding = h.encoding;
  }
  if (h.timeout) {
    const ms = parseGrpcTimeout(h.timeout);
    if (ms === undefined) return { code: Code.Internal, message: `invalid grpc-timeout ${JSON.stringify(h.timeout)}` };
    accepted.timeoutMs = ms;
  }
  return accepted;
}

export const isRefusal = <T extends object>(r: T | Refusal): r is Refusal => "code" in r;

/**
 * The one message of a unary request body (5-byte prefix: compressed flag, big-endian length):
 * the message bytes and whether they are compressed, or the refusal (missing, too large,
 * truncated, more than one message, compressed without grpc-encoding).
 */
export function unframeRequest(body: Buffer, maxMessageBytes: number, encoding: string | undefined): { message: Buffer; compressed: boolean } | Refusal {
  if (body.length < 5) return { code: Code.Internal, message: "request message missing" };
  const length = body.readUInt32BE(1);
  if (length > maxMessageBytes) return { code: Code.ResourceExhausted, message: messageTooLarge(length, maxMessageBytes) };
  if (body.length !== 5 + length) return { code: Code.Internal, message: body.length < 5 + length ? "request message truncated" : "more than one request message for a unary method" };
  const message = body.subarray(5);
  if (body[0] === 0) return { message, compressed: false };
  if (!encoding) return { code: Code.Internal, message: "compressed request message without grpc-encoding" };
  return { message, compressed: true };
}

/** Decompressions running at once in the process; more wait in order (each holds a zlib stream, ~50 KB, and a pool thread). */
export const MAX_CONCURRENT_DECOMPRESSIONS = 4;
let decompressing = 0;
const queued: (() => void)[] = [];

/**
 * Decompresses a request message (zlib on the thread pool, output capped at `maxMessageBytes`, at
 * most MAX_CONCURRENT_DECOMPRESSIONS at once); `done` gets the plain message or the refusal. zlib is
 * loaded on first use: compressed requests are rare (no csi-proxy client compresses).
 */
export function decompressRequest(encoding: "gzip" | "deflate", message: Buffer, maxMessageBytes: number, done: (result: Uint8Array | Refusal) => void): void {
  const start = () => {
    decompressing++;
    void import("node:zlib").then((zlib) =>
      (encoding === "gzip" ? zlib.gunzip : zlib.inflate)(message, { maxOutputLength: maxMessageBytes }, (err, plain) => {
        decompressing--;
        queued.shift()?.();
        if (!err) return done(plain);
        if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") {
          return done({ code: Code.ResourceExhausted, message: `Received message after decompression larger than max (${maxMessageBytes})` });
        }
        done({ code: Code.Internal, message: `cannot decompress the request message: ${err.message}` });
      }),
    );
  };
  if (decompressing < MAX_CONCURRENT_DECOMPRESSIONS) start();
  else queued.push(start);
}

function hasUppercase(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 65 && c <= 90) return true;
  }
  return false;
}
