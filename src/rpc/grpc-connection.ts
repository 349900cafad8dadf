import type { Duplex } from "node:stream";
import type { CallContext } from "../api/handlers.ts";
import { Code, CsiProxyError } from "../errors.ts";
import { HpackDecoder, HpackError } from "./hpack-decoder.ts";
import { statusMessage, type UnaryMethod } from "./grpc-service.ts";

/**
 * The server side of one HTTP/2 connection carrying unary gRPC calls (RFC 9113, gRPC over HTTP/2),
 * written directly on the socket: no nghttp2, no stream objects per call.
 *
 * Wire behaviour:
 * - any `:authority` is accepted, including the raw pipe path (`\\.\pipe\…`) grpc-go < 1.57 sends,
 *   which Node's own HTTP/2 server resets;
 * - a connection that never sends the client preface just stays idle; bytes that are not the
 *   preface close it;
 * - unknown `:path` → UNIMPLEMENTED "The server does not implement the method <path>"; a request
 *   message above `maxMessageBytes` → RESOURCE_EXHAUSTED; `grpc-timeout` → DEADLINE_EXCEEDED
 *   "Deadline exceeded" when it passes (the handler's signal is aborted); RST_STREAM from the
 *   client before the answer aborts the handler's signal (Canceled);
 * - errors are trailers-only responses (`grpc-status`, percent-encoded `grpc-message`);
 * - flow control: requests get an 8 MiB stream window (larger than any accepted message, so no
 *   per-call WINDOW_UPDATE), responses honour the client's windows and frame size;
 * - protocol violations end the connection with GOAWAY.
 */
export class GrpcConnection {
  private readonly socket: Duplex;
  private readonly methods: ReadonlyMap<string, UnaryMethod>;
  private readonly maxMessageBytes: number;
  private readonly decoder = new HpackDecoder();
  private readonly streams = new Map<number, CallStream>();
  private rest: Buffer = EMPTY;
  private prefaceDone = false;
  private lastStreamId = 0;
  /** A header block awaiting CONTINUATION frames. */
  private continuing: { id: number; flags: number; fragments: Buffer[]; size: number } | null = null;
  private peerInitialWindow = 65535;
  private peerMaxFrame = 16384;
  private connSendWindow = 65535;
  private recvUnacked = 0;
  private readonly blocked: CallStream[] = [];
  private out: Buffer[] = [];
  private flushScheduled = false;
  private closed = false;

  constructor(socket: Duplex, methods: ReadonlyMap<string, UnaryMethod>, options: { maxMessageBytes?: number } = {}) {
    this.socket = socket;
    this.methods = methods;
    this.maxMessageBytes = options.maxMessageBytes ?? 4 * 1024 * 1024;
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("close", () => this.onClose());
    socket.on("error", () => socket.destroy());
    socket.on("end", () => socket.destroy());
    this.write(SERVER_PREFACE);
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    let buf = this.rest.length ? Buffer.concat([this.rest, chunk]) : chunk;
    let pos = 0;
    if (!this.prefaceDone) {
      const have = Math.min(buf.length, PREFACE.length);
      if (buf.compare(PREFACE, 0, have, 0, have) !== 0) return void this.socket.destroy();
      if (buf.length < PREFACE.length) {
        this.rest = Buffer.from(buf);
        return;
      }
      this.prefaceDone = true;
      pos = PREFACE.length;
    }
    try {
      while (buf.length - pos >= 9 && !this.closed) {
        const length = (buf[pos] << 16) | (buf[pos + 1] << 8) | buf[pos + 2];
        if (length > MAX_FRAME_ACCEPTED) throw new ConnectionError(FRAME_SIZE_ERROR, "frame too large");
        if (buf.length - pos < 9 + length) break;
        const type = buf[pos + 3], flags = buf[pos + 4];
        const id = buf.readUInt32BE(pos + 5) & 0x7fffffff;
        this.onFrame(type, flags, id, buf, pos + 9, pos + 9 + length);
        pos += 9 + length;
      }
    } catch (err) {
      if (!(err instanceof ConnectionError)) throw err;
      return this.fail(err.code);
    }
    // Keep a copy of a partial frame so the socket's chunk is not retained.
    this.rest = pos >= buf.length ? EMPTY : Buffer.from(buf.subarray(pos));
    buf = EMPTY;
  }

  private onFrame(type: number, flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (this.continuing && type !== TYPE_CONTINUATION) throw new ConnectionError(PROTOCOL_ERROR, "expected CONTINUATION");
    switch (type) {
      case TYPE_DATA:
        return this.onDataFrame(flags, id, buf, start, end);
      case TYPE_HEADERS: {
        if (id === 0 || (id & 1) === 0) throw new ConnectionError(PROTOCOL_ERROR, "bad stream id");
        let s = start, e = end;
        if (flags & FLAG_PADDED) {
          if (e - s < 1 || buf[s] >= e - s) throw new ConnectionError(PROTOCOL_ERROR, "bad padding");
          e -= buf[s];
          s += 1;
        }
        if (flags & FLAG_PRIORITY) s += 5;
        if (s > e) throw new ConnectionError(FRAME_SIZE_ERROR, "short HEADERS");
        const fragment = buf.subarray(s, e);
        if (flags & FLAG_END_HEADERS) return this.onHeaderBlock(id, flags, fragment);
        this.continuing = { id, flags, fragments: [Buffer.from(fragment)], size: fragment.length };
        return;
      }
      case TYPE_CONTINUATION: {
        const c = this.continuing;
        if (!c || c.id !== id) throw new ConnectionError(PROTOCOL_ERROR, "unexpected CONTINUATION");
        c.size += end - start;
        if (c.size > MAX_HEADER_BLOCK) throw new ConnectionError(ENHANCE_YOUR_CALM, "header block too large");
        c.fragments.push(Buffer.from(buf.subarray(start, end)));
        if (!(flags & FLAG_END_HEADERS)) return;
        this.continuing = null;
        return this.onHeaderBlock(id, c.flags, Buffer.concat(c.fragments));
      }
      case TYPE_RST_STREAM: {
        if (id === 0 || end - start !== 4) throw new ConnectionError(PROTOCOL_ERROR, "bad RST_STREAM");
        const stream = this.streams.get(id);
        if (stream) this.cancel(stream, new CsiProxyError(Code.Canceled, "call cancelled by the client"));
        return;
      }
      case TYPE_SETTINGS:
        return this.onSettings(flags, id, buf, start, end);
      case TYPE_PING:
        if (id !== 0 || end - start !== 8) throw new ConnectionError(PROTOCOL_ERROR, "bad PING");
        if (!(flags & FLAG_ACK)) this.write(frame(TYPE_PING, FLAG_ACK, 0, buf.subarray(start, end)));
        return;
      case TYPE_WINDOW_UPDATE: {
        if (end - start !== 4) throw new ConnectionError(FRAME_SIZE_ERROR, "bad WINDOW_UPDATE");
        const increment = buf.readUInt32BE(start) & 0x7fffffff;
        if (id === 0) this.connSendWindow += increment;
        else {
          const stream = this.streams.get(id);
          if (stream) stream.sendWindow += increment;
        }
        if (this.blocked.length) this.flushBlocked();
        return;
      }
      case TYPE_PUSH_PROMISE:
        throw new ConnectionError(PROTOCOL_ERROR, "PUSH_PROMISE from a client");
      default:
        return; // PRIORITY, GOAWAY (the client closes the socket itself), extensions: nothing to do
    }
  }

  private onDataFrame(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id === 0) throw new ConnectionError(PROTOCOL_ERROR, "DATA on stream 0");
    this.recvUnacked += end - start;
    if (this.recvUnacked >= WINDOW_REPLENISH) {
      this.write(windowUpdate(0, this.recvUnacked));
      this.recvUnacked = 0;
    }
    if (flags & FLAG_PADDED) {
      if (end - start < 1 || buf[start] >= end - start) throw new ConnectionError(PROTOCOL_ERROR, "bad padding");
      end -= buf[start];
      start += 1;
    }
    const stream = this.streams.get(id);
    if (!stream) {
      if (id > this.lastStreamId) throw new ConnectionError(PROTOCOL_ERROR, "DATA on an idle stream");
      return; // a stream already answered (or reset): its remaining bytes are dropped
    }
    if (stream.remoteClosed) return this.reset(stream, STREAM_CLOSED);
    if (!stream.answered && end > start) {
      stream.bodyBytes += end - start;
      stream.chunks.push(buf.subarray(start, end));
      // Refuse as soon as the declared length is known, not after buffering it all.
      const declared = stream.bodyBytes >= 5 ? messageLength(stream.chunks) : 0;
      if (declared > this.maxMessageBytes || stream.bodyBytes > this.maxMessageBytes + 5) {
        this.finish(stream, Code.ResourceExhausted, `Received message larger than max (${Math.max(declared, stream.bodyBytes - 5)} vs. ${this.maxMessageBytes})`);
      }
    }
    if (flags & FLAG_END_STREAM) this.endOfRequest(stream);
  }

  private onHeaderBlock(id: number, flags: number, block: Buffer): void {
    let path = "", method = "", contentType = "", timeout = "", encoding = "", size = 0;
    try {
      this.decoder.decode(block, (name, value) => {
        size += name.length + value.length + 32;
        if (name.charCodeAt(0) === 58 /* ':' */) {
          if (name === ":path") path = value;
          else if (name === ":method") method = value;
        } else if (name === "content-type") contentType = value;
        else if (name === "grpc-timeout") timeout = value;
        else if (name === "grpc-encoding") encoding = value;
      });
    } catch (err) {
      if (err instanceof HpackError) throw new ConnectionError(COMPRESSION_ERROR, err.message);
      throw err;
    }
    const existing = this.streams.get(id);
    if (existing) {
      // Trailers from the client: only END_STREAM matters.
      if (flags & FLAG_END_STREAM) this.endOfRequest(existing);
      return;
    }
    if (id <= this.lastStreamId) throw new ConnectionError(PROTOCOL_ERROR, "stream id reused");
    this.lastStreamId = id;
    const stream = new CallStream(id, this.peerInitialWindow);
    if (this.streams.size >= MAX_CONCURRENT_STREAMS) {
      this.write(rstStream(id, REFUSED_STREAM));
      return;
    }
    this.streams.set(id, stream);
    if (flags & FLAG_END_STREAM) stream.remoteClosed = true;
    if (size > MAX_HEADER_LIST) return this.finish(stream, Code.ResourceExhausted, `header list of ${size} bytes exceeds ${MAX_HEADER_LIST}`);
    if (method !== "POST") return this.finish(stream, Code.Internal, `unsupported HTTP method ${JSON.stringify(method)}`, "405");
    if (!contentType.startsWith("application/grpc")) {
      return this.finish(stream, Code.Internal, `unsupported content-type ${JSON.stringify(contentType)}`, "415");
    }
    const target = this.methods.get(path);
    if (!target) return this.finish(stream, Code.Unimplemented, `The server does not implement the method ${path}`);
    stream.method = target;
    if (encoding && encoding !== "identity") {
      if (encoding !== "gzip" && encoding !== "deflate") {
        return this.finish(stream, Code.Unimplemented, `Received message compressed with unsupported encoding "${encoding}"`);
      }
      stream.encoding = encoding;
    }
    if (timeout) {
      const ms = parseTimeout(timeout);
      if (ms === undefined) return this.finish(stream, Code.Internal, `invalid grpc-timeout ${JSON.stringify(timeout)}`);
      stream.timer = setTimeout(() => this.deadline(stream), ms);
    }
    if (stream.remoteClosed) this.endOfRequest(stream);
  }

  private onSettings(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id !== 0) throw new ConnectionError(PROTOCOL_ERROR, "SETTINGS on a stream");
    if (flags & FLAG_ACK) return;
    if ((end - start) % 6) throw new ConnectionError(FRAME_SIZE_ERROR, "bad SETTINGS");
    for (let p = start; p < end; p += 6) {
      const key = buf.readUInt16BE(p), value = buf.readUInt32BE(p + 2);
      if (key === SETTINGS_INITIAL_WINDOW_SIZE) {
        if (value > 0x7fffffff) throw new ConnectionError(FLOW_CONTROL_ERROR, "window too large");
        const delta = value - this.peerInitialWindow;
        this.peerInitialWindow = value;
        for (const stream of this.streams.values()) stream.sendWindow += delta;
      } else if (key === SETTINGS_MAX_FRAME_SIZE) {
        if (value < 16384 || value > 16777215) throw new ConnectionError(PROTOCOL_ERROR, "bad max frame size");
        this.peerMaxFrame = value;
      }
    }
    this.write(SETTINGS_ACK);
    if (this.blocked.length) this.flushBlocked();
  }

  /** The client finished its request: decode the message and run the method. */
  private endOfRequest(stream: CallStream): void {
    stream.remoteClosed = true;
    if (stream.answered) return this.release(stream);
    const { chunks, method } = stream;
    if (!method) return;
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    stream.chunks = NO_CHUNKS;
    if (body.length < 5) return this.finish(stream, Code.Internal, "request message missing");
    const length = body.readUInt32BE(1);
    if (body.length !== 5 + length) return this.finish(stream, Code.Internal, body.length < 5 + length ? "request message truncated" : "more than one request message for a unary method");
    const message = body.subarray(5);
    if (body[0] === 0) return this.run(stream, method, message);
    if (!stream.encoding) return this.finish(stream, Code.Internal, "compressed request message without grpc-encoding");
    const encoding = stream.encoding;
    // zlib is loaded on first use: compressed requests are rare (no csi-proxy client compresses).
    import("node:zlib").then((zlib) =>
      (encoding === "gzip" ? zlib.gunzip : zlib.inflate)(message, { maxOutputLength: this.maxMessageBytes }, (err, plain) => {
        if (stream.answered) return;
        if (err) return this.finish(stream, Code.Internal, `cannot decompress the request message: ${err.message}`);
        this.run(stream, method, plain);
      }),
    );
  }

  private run(stream: CallStream, method: UnaryMethod, message: Uint8Array): void {
    method.call(message, stream).then(
      (response) => this.respond(stream, response),
      (err: CsiProxyError) => {
        if (!stream.answered) this.finish(stream, err.code, statusMessage(err.message));
      },
    );
  }

  private respond(stream: CallStream, response: Uint8Array): void {
    if (stream.answered || this.closed) return;
    stream.answered = true;
    if (stream.timer) clearTimeout(stream.timer);
    const payload = 5 + response.length;
    if (payload <= this.peerMaxFrame && payload <= this.connSendWindow && payload <= stream.sendWindow) {
      // One buffer: HEADERS, DATA, trailers.
      this.connSendWindow -= payload;
      const out = Buffer.allocUnsafe(9 + RESPONSE_HEADERS.length + 9 + payload + 9 + TRAILERS_OK.length);
      let p = writeFrameHeader(out, 0, RESPONSE_HEADERS.length, TYPE_HEADERS, FLAG_END_HEADERS, stream.id);
      p += RESPONSE_HEADERS.copy(out, p);
      p = writeFrameHeader(out, p, payload, TYPE_DATA, 0, stream.id);
      out[p] = 0;
      out.writeUInt32BE(response.length, p + 1);
      out.set(response, p + 5);
      p = writeFrameHeader(out, p + payload, TRAILERS_OK.length, TYPE_HEADERS, FLAG_END_HEADERS | FLAG_END_STREAM, stream.id);
      TRAILERS_OK.copy(out, p);
      this.write(out);
      return this.release(stream);
    }
    this.write(headersFrames(stream.id, RESPONSE_HEADERS, false));
    const body = Buffer.allocUnsafe(payload);
    body[0] = 0;
    body.writeUInt32BE(response.length, 1);
    body.set(response, 5);
    stream.pending = body;
    this.blocked.push(stream);
    this.flushBlocked();
  }

  /** Sends what the windows allow of blocked responses, then their trailers. */
  private flushBlocked(): void {
    while (this.blocked.length && this.connSendWindow > 0) {
      const stream = this.blocked[0];
      const pending = stream.pending!;
      while (stream.sent < pending.length && this.connSendWindow > 0 && stream.sendWindow > 0) {
        const size = Math.min(pending.length - stream.sent, this.peerMaxFrame, this.connSendWindow, stream.sendWindow);
        this.write(frame(TYPE_DATA, 0, stream.id, pending.subarray(stream.sent, stream.sent + size)));
        stream.sent += size;
        this.connSendWindow -= size;
        stream.sendWindow -= size;
      }
      if (stream.sent < pending.length) {
        if (this.connSendWindow <= 0) return;
        // This stream waits for its own window; serve the others meanwhile.
        this.blocked.push(this.blocked.shift()!);
        if (this.blocked.every((s) => s.sendWindow <= 0)) return;
        continue;
      }
      this.blocked.shift();
      stream.pending = undefined;
      this.write(headersFrames(stream.id, TRAILERS_OK, true));
      this.release(stream);
    }
  }

  /** Answers with a status only (trailers-only response) and forgets the stream. */
  private finish(stream: CallStream, code: Code, message: string, httpStatus = "200"): void {
    if (stream.answered || this.closed) return;
    stream.answered = true;
    stream.chunks = NO_CHUNKS;
    if (stream.timer) clearTimeout(stream.timer);
    this.write(headersFrames(stream.id, statusBlock(code, message, httpStatus), true));
    this.release(stream);
  }

  /** Our side is done: the stream is closed once the client's side is; otherwise it is reset (NO_ERROR) so the client stops sending. */
  private release(stream: CallStream): void {
    if (!stream.remoteClosed) {
      stream.remoteClosed = true;
      this.write(rstStream(stream.id, NO_ERROR));
    }
    this.streams.delete(stream.id);
  }

  private deadline(stream: CallStream): void {
    stream.timer = undefined;
    if (stream.answered) return;
    this.finish(stream, Code.DeadlineExceeded, "Deadline exceeded");
    stream.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded"));
  }

  private cancel(stream: CallStream, reason: CsiProxyError): void {
    this.streams.delete(stream.id);
    const i = this.blocked.indexOf(stream);
    if (i >= 0) this.blocked.splice(i, 1);
    if (stream.timer) clearTimeout(stream.timer);
    if (stream.answered) return;
    stream.answered = true;
    stream.abort(reason);
  }

  private reset(stream: CallStream, code: number): void {
    this.write(rstStream(stream.id, code));
    this.cancel(stream, new CsiProxyError(Code.Canceled, "stream reset"));
  }

  /** Connection error: GOAWAY, then close. */
  private fail(code: number): void {
    if (this.closed) return;
    this.write(goaway(this.lastStreamId, code));
    this.flush();
    this.socket.end();
    this.onClose();
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    const reason = new CsiProxyError(Code.Canceled, "connection closed");
    for (const stream of [...this.streams.values()]) this.cancel(stream, reason);
    this.blocked.length = 0;
    this.out = [];
  }

  /** Queues bytes; everything queued in one event-loop turn goes out in one write. */
  private write(bytes: Buffer): void {
    if (this.closed) return;
    this.out.push(bytes);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushNow);
    }
  }

  private readonly flushNow = () => this.flush();

  private flush(): void {
    this.flushScheduled = false;
    const out = this.out;
    if (!out.length || this.socket.destroyed) return;
    this.out = [];
    this.socket.write(out.length === 1 ? out[0] : Buffer.concat(out));
  }
}

/** One call: also its handler's CallContext (the signal is made on first use). */
class CallStream implements CallContext {
  readonly id: number;
  sendWindow: number;
  method?: UnaryMethod;
  encoding?: "gzip" | "deflate";
  chunks: Buffer[] = [];
  bodyBytes = 0;
  remoteClosed = false;
  /** Answered, failed, timed out or cancelled: nothing more is sent on it. */
  answered = false;
  timer?: NodeJS.Timeout;
  pending?: Buffer;
  sent = 0;
  private controller?: AbortController;
  private abortReason?: CsiProxyError;

  constructor(id: number, sendWindow: number) {
    this.id = id;
    this.sendWindow = sendWindow;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  abort(reason: CsiProxyError): void {
    if (this.abortReason) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }
}

class ConnectionError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** The length prefix of the message the chunks start with (at least 5 bytes in all). */
function messageLength(chunks: Buffer[]): number {
  const head = chunks[0].length >= 5 ? chunks[0] : Buffer.concat(chunks);
  return head.readUInt32BE(1);
}

/** grpc-timeout: up to 8 digits and a unit (H, M, S, m, u, n) → milliseconds, or undefined. */
function parseTimeout(value: string): number | undefined {
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (!m) return undefined;
  const n = Number(m[1]);
  const ms = { H: n * 3_600_000, M: n * 60_000, S: n * 1000, m: n, u: n / 1000, n: n / 1e6 }[m[2] as "H"];
  return Math.min(ms, 2 ** 31 - 1);
}

const EMPTY = Buffer.alloc(0);
const NO_CHUNKS: Buffer[] = [];
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

const TYPE_DATA = 0x0, TYPE_HEADERS = 0x1, TYPE_RST_STREAM = 0x3, TYPE_SETTINGS = 0x4, TYPE_PUSH_PROMISE = 0x5;
const TYPE_PING = 0x6, TYPE_GOAWAY = 0x7, TYPE_WINDOW_UPDATE = 0x8, TYPE_CONTINUATION = 0x9;
const FLAG_END_STREAM = 0x1, FLAG_ACK = 0x1, FLAG_END_HEADERS = 0x4, FLAG_PADDED = 0x8, FLAG_PRIORITY = 0x20;
const NO_ERROR = 0x0, PROTOCOL_ERROR = 0x1, FLOW_CONTROL_ERROR = 0x3, STREAM_CLOSED = 0x5, FRAME_SIZE_ERROR = 0x6;
const REFUSED_STREAM = 0x7, COMPRESSION_ERROR = 0x9, ENHANCE_YOUR_CALM = 0xb;
const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3, SETTINGS_INITIAL_WINDOW_SIZE = 0x4, SETTINGS_MAX_FRAME_SIZE = 0x5;

/** We never advertise a larger SETTINGS_MAX_FRAME_SIZE than the default. */
const MAX_FRAME_ACCEPTED = 16384;
const MAX_CONCURRENT_STREAMS = 1000;
/** Per-stream receive window advertised: above the largest accepted message, so unary requests never wait for WINDOW_UPDATE. */
const STREAM_WINDOW = 8 * 1024 * 1024;
/** Connection receive window: the default 65535 raised by this much at once, replenished in steps of WINDOW_REPLENISH. */
const CONNECTION_WINDOW_BOOST = 16 * 1024 * 1024;
const WINDOW_REPLENISH = 4 * 1024 * 1024;
/** Largest header block accepted (compressed) and header list (decoded, RFC 7541 sizes). */
const MAX_HEADER_BLOCK = 256 * 1024;
const MAX_HEADER_LIST = 64 * 1024;

function writeFrameHeader(out: Buffer, p: number, length: number, type: number, flags: number, id: number): number {
  out[p] = length >>> 16;
  out[p + 1] = (length >>> 8) & 0xff;
  out[p + 2] = length & 0xff;
  out[p + 3] = type;
  out[p + 4] = flags;
  out.writeUInt32BE(id, p + 5);
  return p + 9;
}

function frame(type: number, flags: number, id: number, payload: Buffer): Buffer {
  const out = Buffer.allocUnsafe(9 + payload.length);
  writeFrameHeader(out, 0, payload.length, type, flags, id);
  payload.copy(out, 9);
  return out;
}

function windowUpdate(id: number, increment: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(increment);
  return frame(TYPE_WINDOW_UPDATE, 0, id, payload);
}

function rstStream(id: number, code: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(code);
  return frame(TYPE_RST_STREAM, 0, id, payload);
}

function goaway(lastId: number, code: number): Buffer {
  const payload = Buffer.allocUnsafe(8);
  payload.writeUInt32BE(lastId);
  payload.writeUInt32BE(code, 4);
  return frame(TYPE_GOAWAY, 0, 0, payload);
}

/** A header block as HEADERS + CONTINUATION frames of at most 16384 bytes (every peer accepts that size). */
function headersFrames(id: number, block: Buffer, endStream: boolean): Buffer {
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

function hpackInteger(value: number, prefixBits: number, first: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  for (value -= max; value >= 128; value = Math.floor(value / 128)) out.push((value % 128) | 128);
  out.push(value);
  return out;
}

/** HPACK literal without indexing, new name (never Huffman-coded). */
function literal(name: string, value: string): Buffer {
  const n = Buffer.from(name, "latin1"), v = Buffer.from(value, "latin1");
  return Buffer.concat([Buffer.from([0]), Buffer.from(hpackInteger(n.length, 7, 0)), n, Buffer.from(hpackInteger(v.length, 7, 0)), v]);
}

/** `:status` (static index 8 is 200) and `content-type: application/grpc` (name: static index 31). */
function statusLine(httpStatus: string): Buffer {
  const status = httpStatus === "200" ? Buffer.from([0x88]) : Buffer.concat([Buffer.from([0x08, httpStatus.length]), Buffer.from(httpStatus, "latin1")]);
  return Buffer.concat([status, Buffer.from([0x0f, 0x10, 16]), Buffer.from("application/grpc", "latin1")]);
}

const RESPONSE_HEADERS = Buffer.concat([statusLine("200"), literal("grpc-accept-encoding", "identity,deflate,gzip")]);
/** As grpc-js and grpc-go send them on success. */
const TRAILERS_OK = Buffer.concat([literal("grpc-status", "0"), literal("grpc-message", "OK")]);

/**
 * gRPC's percent-encoding of grpc-message: UTF-8 bytes outside 0x20–0x7E, and '%', as %XX; a space
 * at either end too (HTTP/2 field values must not begin or end with whitespace: nghttp2-based
 * clients, Node's among them, drop such a field and the client sees no message at all).
 */
function percentEncode(message: string): string {
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

function statusBlock(code: Code, message: string, httpStatus: string): Buffer {
  const parts = [statusLine(httpStatus), literal("grpc-status", String(code))];
  if (message) parts.push(literal("grpc-message", percentEncode(message)));
  return Buffer.concat(parts);
}

const SERVER_PREFACE = Buffer.concat([
  frame(TYPE_SETTINGS, 0, 0, (() => {
    const p = Buffer.alloc(12);
    p.writeUInt16BE(SETTINGS_MAX_CONCURRENT_STREAMS, 0);
    p.writeUInt32BE(MAX_CONCURRENT_STREAMS, 2);
    p.writeUInt16BE(SETTINGS_INITIAL_WINDOW_SIZE, 6);
    p.writeUInt32BE(STREAM_WINDOW, 8);
    return p;
  })()),
  windowUpdate(0, CONNECTION_WINDOW_BOOST),
]);
const SETTINGS_ACK = frame(TYPE_SETTINGS, FLAG_ACK, 0, EMPTY);
void TYPE_GOAWAY;
