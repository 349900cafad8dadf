/**
 * HTTP/2 frame codec and constants (RFC 9113 §4, §6, §7): frame types, flags, error codes, setting
 * identifiers, and the builders for the frames the server sends. Every builder returns a fresh
 * Buffer holding one or more complete frames (9-byte header + payload).
 */

export const CLIENT_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
/** Size of a frame header in bytes. */
export const FRAME_HEADER_BYTES = 9;

export const TYPE_DATA = 0x0, TYPE_HEADERS = 0x1, TYPE_PRIORITY = 0x2, TYPE_RST_STREAM = 0x3, TYPE_SETTINGS = 0x4;
export const TYPE_PUSH_PROMISE = 0x5, TYPE_PING = 0x6, TYPE_GOAWAY = 0x7, TYPE_WINDOW_UPDATE = 0x8, TYPE_CONTINUATION = 0x9;

export const FLAG_END_STREAM = 0x1, FLAG_ACK = 0x1, FLAG_END_HEADERS = 0x4, FLAG_PADDED = 0x8, FLAG_PRIORITY = 0x20;

export const NO_ERROR = 0x0, PROTOCOL_ERROR = 0x1, FLOW_CONTROL_ERROR = 0x3, STREAM_CLOSED = 0x5, FRAME_SIZE_ERROR = 0x6;
export const REFUSED_STREAM = 0x7, COMPRESSION_ERROR = 0x9, ENHANCE_YOUR_CALM = 0xb;

export const SETTINGS_ENABLE_PUSH = 0x2, SETTINGS_MAX_CONCURRENT_STREAMS = 0x3, SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
export const SETTINGS_MAX_FRAME_SIZE = 0x5;

/** Largest flow-control window (RFC 9113 §6.9.1): 2^31 - 1. */
export const MAX_WINDOW = 0x7fffffff;

/** Writes a 9-byte frame header at `p`; returns the offset after it. */
export function writeFrameHeader(out: Buffer, p: number, length: number, type: number, flags: number, id: number): number {
  out[p] = length >>> 16;
  out[p + 1] = (length >>> 8) & 0xff;
  out[p + 2] = length & 0xff;
  out[p + 3] = type;
  out[p + 4] = flags;
  out.writeUInt32BE(id, p + 5);
  return p + 9;
}

/** One frame with a copy of `payload`. */
export function frame(type: number, flags: number, id: number, payload: Buffer): Buffer {
  const out = Buffer.allocUnsafe(9 + payload.length);
  writeFrameHeader(out, 0, payload.length, type, flags, id);
  payload.copy(out, 9);
  return out;
}

export function windowUpdate(id: number, increment: number): Buffer {
  const out = Buffer.allocUnsafe(13);
  writeFrameHeader(out, 0, 4, TYPE_WINDOW_UPDATE, 0, id);
  out.writeUInt32BE(increment, 9);
  return out;
}

export function rstStream(id: number, code: number): Buffer {
  const out = Buffer.allocUnsafe(13);
  writeFrameHeader(out, 0, 4, TYPE_RST_STREAM, 0, id);
  out.writeUInt32BE(code, 9);
  return out;
}

/** GOAWAY with the last stream id the server processes (or will) and an error code; `debug` is ASCII debug data. */
export function goaway(lastId: number, code: number, debug = ""): Buffer {
  const data = Buffer.from(debug, "latin1");
  const out = Buffer.allocUnsafe(17 + data.length);
  writeFrameHeader(out, 0, 8 + data.length, TYPE_GOAWAY, 0, 0);
  out.writeUInt32BE(lastId, 9);
  out.writeUInt32BE(code, 13);
  data.copy(out, 17);
  return out;
}

/** A PING (or its ACK) carrying 8 opaque bytes. */
export function ping(ack: boolean, data: Buffer): Buffer {
  return frame(TYPE_PING, ack ? FLAG_ACK : 0, 0, data);
}

/** A header block as HEADERS + CONTINUATION frames of at most 16384 bytes (every peer accepts that size). */
export function headersFrames(id: number, block: Buffer, endStream: boolean): Buffer {
  if (block.length <= 16384) return frame(TYPE_HEADERS, FLAG_END_HEADERS | (endStream ? FLAG_END_STREAM : 0), id, block);
  const frames: Buffer[] = [];
  for (let p = 0; p < block.length; p += 16384) {
    const last = p + 16384 >= block.length;
    const type = p === 0 ? TYPE_HEADERS : TYPE_CONTINUATION;
    const flags = (last ? FLAG_END_HEADERS : 0) | (p === 0 && endStream ? FLAG_END_STREAM : 0);
    frames.push(frame(type, flags, id, block.subarray(p, p + 16384)));
  }
  return Buffer.concat(frames);
}

/** A SETTINGS frame from [identifier, value] pairs. */
export function settings(entries: [number, number][]): Buffer {
  const payload = Buffer.alloc(6 * entries.length);
  entries.forEach(([key, value], i) => {
    payload.writeUInt16BE(key, 6 * i);
    payload.writeUInt32BE(value, 6 * i + 2);
  });
  return frame(TYPE_SETTINGS, 0, 0, payload);
}

export const SETTINGS_ACK = frame(TYPE_SETTINGS, FLAG_ACK, 0, Buffer.alloc(0));
