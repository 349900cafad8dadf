import type { Code } from "../errors.ts";
import { hpackLiteral, hpackStatusLine } from "./hpack-encoder.ts";

/** Response headers of a successful call (encoded once): `:status 200`, content-type, grpc-accept-encoding. */
export const RESPONSE_HEADERS = Buffer.concat([hpackStatusLine("200"), hpackLiteral("grpc-accept-encoding", "identity,deflate,gzip")]);
/** Trailers of a successful call, as grpc-js and grpc-go send them. */
export const TRAILERS_OK = Buffer.concat([hpackLiteral("grpc-status", "0"), hpackLiteral("grpc-message", "OK")]);

/**
 * gRPC's percent-encoding of grpc-message: UTF-8 bytes outside 0x20–0x7E, and '%', as %XX; a space
 * at either end too (HTTP/2 field values must not begin or end with whitespace: nghttp2-based
 * clients, Node's among them, drop such a field and the client sees no message at all).
 */
export function percentEncodeMessage(message: string): string {
  if (/^(?! )[\x20-\x24\x26-\x7e]*$/.test(message) && !message.endsWith(" ")) return message;
  // One pass to size the output, one to fill it: O(n), no intermediate strings (messages may echo a 4 KB path).
  const bytes = Buffer.from(message, "utf8");
  const n = bytes.length;
  let size = 0;
  for (let i = 0; i < n; i++) size += KEPT[bytes[i]] ? 1 : 3;
  const edges = (bytes[0] === 0x20 ? 2 : 0) + (n > 1 && bytes[n - 1] === 0x20 ? 2 : 0);
  const out = Buffer.allocUnsafe(size + edges);
  let p = 0;
  for (let i = 0; i < n; i++) {
    const byte = bytes[i];
    if (KEPT[byte] && !(byte === 0x20 && (i === 0 || i === n - 1))) out[p++] = byte;
    else {
      out[p++] = 0x25;
      out[p++] = HEX[byte >> 4];
      out[p++] = HEX[byte & 15];
    }
  }
  return out.toString("latin1", 0, p);
}

const HEX = Buffer.from("0123456789ABCDEF", "latin1");
/** 1 for the bytes kept as they are (printable ASCII but '%'). */
const KEPT = new Uint8Array(256).map((_, b) => (b >= 0x20 && b <= 0x7e && b !== 0x25 ? 1 : 0));

/** The header block of a trailers-only response: HTTP status, content-type, grpc-status and (when not empty) grpc-message. */
export function statusTrailers(code: Code, message: string, httpStatus = "200"): Buffer {
  const parts = [hpackStatusLine(httpStatus), hpackLiteral("grpc-status", String(code))];
  if (message) parts.push(hpackLiteral("grpc-message", percentEncodeMessage(message)));
  return Buffer.concat(parts);
}
