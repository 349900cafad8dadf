/**
 * The few HPACK (RFC 7541) representations the server sends: every field a literal without
 * indexing (the server never touches the client's view of its dynamic table), never Huffman-coded.
 */

/** An HPACK integer with an N-bit prefix (§5.1), `first` holding the representation's high bits. */
export function hpackInteger(value: number, prefixBits: number, first: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  for (value -= max; value >= 128; value = Math.floor(value / 128)) out.push((value % 128) | 128);
  out.push(value);
  return out;
}

/** Literal header field without indexing, new name (§6.2.2); name and value as latin1 octets. */
export function hpackLiteral(name: string, value: string): Buffer {
  const n = Buffer.from(name, "latin1"), v = Buffer.from(value, "latin1");
  return Buffer.concat([Buffer.from([0]), Buffer.from(hpackInteger(n.length, 7, 0)), n, Buffer.from(hpackInteger(v.length, 7, 0)), v]);
}

/** `:status` (static index 8 is 200, else a literal with indexed name 8) and `content-type: application/grpc` (name: static index 31). */
export function hpackStatusLine(httpStatus: string): Buffer {
  const status = httpStatus === "200" ? Buffer.from([0x88]) : Buffer.concat([Buffer.from([0x08, httpStatus.length]), Buffer.from(httpStatus, "latin1")]);
  return Buffer.concat([status, Buffer.from([0x0f, 0x10, 16]), Buffer.from("application/grpc", "latin1")]);
}
