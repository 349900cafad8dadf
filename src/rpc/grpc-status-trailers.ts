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
  const bytes = Buffer.from(message, "utf8");
  let out = "";
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    const edgeSpace = byte === 0x20 && (i === 0 || i === bytes.length - 1);
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 && !edgeSpace ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The header block of a trailers-only response: HTTP status, content-type, grpc-status and (when not empty) grpc-message. */
export function statusTrailers(code: Code, message: string, httpStatus = "200"): Buffer {
  const parts = [hpackStatusLine(httpStatus), hpackLiteral("grpc-status", String(code))];
  if (message) parts.push(hpackLiteral("grpc-message", percentEncodeMessage(message)));
  return Buffer.concat(parts);
}
