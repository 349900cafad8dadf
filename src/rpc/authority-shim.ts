import { Duplex } from "node:stream";
import hpack from "hpack.js";

/**
 * Makes old Go clients work: grpc-go < 1.57 sends the raw pipe path (`\\.\pipe\csi-proxy-…`) as the
 * HTTP/2 `:authority`, which Node's nghttp2 rejects with RST_STREAM(PROTOCOL_ERROR) before any
 * handler runs, and Node has no switch for that check.
 *
 * The shim sits between the client's byte stream and the HTTP/2 server. It decodes the connection's
 * first header block; when its authority is valid (every modern client) it passes the rest of the
 * connection through untouched. Otherwise it re-encodes every header block of the connection with
 * the authority percent-encoded (as grpc-go ≥ 1.57 does), as HPACK literals without indexing so the
 * server's decoder table never depends on the client's. Server→client bytes are never touched.
 * Connections that never send the preface (upstream's client opens one to probe) just stay idle.
 */
export function withAuthorityCompat(socket: Duplex): Duplex {
  return new AuthorityShim(socket);
}

/** nghttp2's accepted `:authority` characters (nghttp2_check_authority). */
const validAuthority = /^[A-Za-z0-9\-._~!$&'()*+,;=:@[\]%]*$/;

/** Percent-encodes what nghttp2 rejects, keeping what it accepts; `authority` holds one byte per char (latin1, as HPACK decodes). */
export function encodeAuthority(authority: string): string {
  if (validAuthority.test(authority)) return authority;
  let out = "";
  for (const byte of Buffer.from(authority, "latin1")) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x80 && ch !== "%" && validAuthority.test(ch) ? ch : "%" + byte.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

const PREFACE_LENGTH = 24;
const FRAME_HEADER = 9;
const TYPE_HEADERS = 0x1;
const TYPE_CONTINUATION = 0x9;
const FLAG_END_STREAM = 0x1;
const FLAG_END_HEADERS = 0x4;
const FLAG_PADDED = 0x8;
const FLAG_PRIORITY = 0x20;
/** SETTINGS_MAX_FRAME_SIZE default: re-encoded blocks are split into frames of at most this size. */
const MAX_FRAME = 16384;

interface HeaderBlock {
  stream: number;
  flags: number;
  priority?: Buffer;
  fragments: Buffer[];
}

type Mode = "deciding" | "passthrough" | "rewrite";

class AuthorityShim extends Duplex {
  private mode: Mode = "deciding";
  private pending: Buffer = Buffer.alloc(0);
  private readonly socket: Duplex;
  private prefaceSeen = false;
  private block: HeaderBlock | null = null;
  private readonly decoder = hpack.decompressor.create({ table: { maxSize: 4096 } });

  constructor(socket: Duplex) {
    super();
    this.socket = socket;
    socket.on("data", (chunk: Buffer) => {
      if (!this.onClientBytes(chunk)) socket.pause();
    });
    // A client's EOF ends the connection (HTTP/2 clients never half-close). Passing it on as a
    // half-close lets Node 22's http2 write after its shutdown request, which trips an internal
    // assertion in JSStreamSocket and kills the process (seen with node.exe 22 on named pipes).
    socket.on("end", () => this.destroy());
    socket.on("error", (err) => this.destroy(err));
    socket.on("close", () => this.destroy());
  }

  override _read(): void {
    this.socket.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.socket.write(chunk, cb);
  }

  override _final(cb: () => void): void {
    this.socket.end(cb);
  }

  override _destroy(err: Error | null, cb: (err: Error | null) => void): void {
    this.socket.destroy();
    cb(err);
  }

  /** Returns false when the consumer wants no more data for now (backpressure). */
  private onClientBytes(chunk: Buffer): boolean {
    if (this.mode === "passthrough") return this.push(chunk);
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: Buffer[] = [];
    if (!this.prefaceSeen) {
      if (this.pending.length < PREFACE_LENGTH) return true;
      out.push(this.pending.subarray(0, PREFACE_LENGTH));
      this.pending = this.pending.subarray(PREFACE_LENGTH);
      this.prefaceSeen = true;
    }
    while (!this.passthrough() && this.pending.length >= FRAME_HEADER) {
      const length = this.pending.readUIntBE(0, 3);
      if (this.pending.length < FRAME_HEADER + length) break;
      const frame = this.pending.subarray(0, FRAME_HEADER + length);
      this.pending = this.pending.subarray(FRAME_HEADER + length);
      const type = frame[3], flags = frame[4];
      if (type === TYPE_HEADERS) {
        this.block = parseHeadersFrame(frame, flags);
      } else if (type === TYPE_CONTINUATION && this.block) {
        this.block.fragments.push(frame.subarray(FRAME_HEADER));
        this.block.flags |= flags & FLAG_END_HEADERS;
      } else {
        out.push(frame);
        continue;
      }
      if (!(this.block.flags & FLAG_END_HEADERS)) continue;
      const block = this.block;
      this.block = null;
      out.push(...this.processBlock(block, frame));
    }
    if (this.passthrough() && this.pending.length) {
      out.push(this.pending);
      this.pending = Buffer.alloc(0);
    }
    return out.length ? this.push(out.length === 1 ? out[0] : Buffer.concat(out)) : true;
  }

  private passthrough(): boolean {
    return this.mode === "passthrough";
  }

  /** Decodes a complete header block and returns the frames to forward for it. */
  private processBlock(block: HeaderBlock, lastFrame: Buffer): Buffer[] {
    const headers = this.decode(Buffer.concat(block.fragments));
    if (this.mode === "deciding") {
      const authority = headers.find(([name]) => name === ":authority")?.[1] ?? "";
      if (validAuthority.test(authority)) {
        // The original frames (one HEADERS + CONTINUATIONs) pass unchanged; only a single-frame
        // block can be re-emitted from its last frame, otherwise rebuild it verbatim.
        this.mode = "passthrough";
        return block.fragments.length === 1 && !(block.flags & FLAG_PADDED) ? [lastFrame] : encodeFrames(block, Buffer.concat(block.fragments));
      }
      this.mode = "rewrite";
    }
    for (const header of headers) if (header[0] === ":authority" || header[0] === "host") header[1] = encodeAuthority(header[1]);
    return encodeFrames(block, encodeLiterals(headers));
  }

  private decode(fragment: Buffer): [string, string][] {
    let failure: Error | undefined;
    const onError = (err: Error) => (failure = err);
    this.decoder.once("error", onError);
    this.decoder.write(fragment);
    this.decoder.execute();
    this.decoder.removeListener("error", onError);
    if (failure) throw failure;
    const headers: [string, string][] = [];
    for (let h = this.decoder.read(); h; h = this.decoder.read()) headers.push([h.name, h.value]);
    return headers;
  }
}

function parseHeadersFrame(frame: Buffer, flags: number): HeaderBlock {
  let start = FRAME_HEADER, end = frame.length;
  if (flags & FLAG_PADDED) {
    end -= frame[start];
    start += 1;
  }
  const priority = flags & FLAG_PRIORITY ? frame.subarray(start, start + 5) : undefined;
  if (priority) start += 5;
  return { stream: frame.readUInt32BE(5) & 0x7fffffff, flags, priority, fragments: [frame.subarray(start, end)] };
}

/** Frames a header block as HEADERS (+ CONTINUATION), without padding, keeping END_STREAM and PRIORITY. */
function encodeFrames(block: HeaderBlock, payload: Buffer): Buffer[] {
  let rest = block.priority ? Buffer.concat([block.priority, payload]) : payload;
  const frames: Buffer[] = [];
  let first = true;
  do {
    const part = rest.subarray(0, MAX_FRAME);
    rest = rest.subarray(MAX_FRAME);
    const header = Buffer.alloc(FRAME_HEADER);
    header.writeUIntBE(part.length, 0, 3);
    header[3] = first ? TYPE_HEADERS : TYPE_CONTINUATION;
    header[4] = (first ? (block.flags & FLAG_END_STREAM) | (block.priority ? FLAG_PRIORITY : 0) : 0) | (rest.length ? 0 : FLAG_END_HEADERS);
    header.writeUInt32BE(block.stream, 5);
    frames.push(header, part);
    first = false;
  } while (rest.length);
  return frames;
}

/** HPACK "literal header field without indexing — new name" for every header (RFC 7541 §6.2.2). */
function encodeLiterals(headers: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of headers) parts.push(Buffer.from([0]), encodeString(name), encodeString(value));
  return Buffer.concat(parts);
}

function encodeString(s: string): Buffer {
  const bytes = Buffer.from(s, "latin1");
  return Buffer.concat([Buffer.from(encodeInteger(bytes.length, 7, 0)), bytes]);
}

function encodeInteger(value: number, prefixBits: number, firstByte: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [firstByte | value];
  const out = [firstByte | max];
  for (value -= max; value >= 128; value >>= 7) out.push((value & 127) | 128);
  out.push(value);
  return out;
}
