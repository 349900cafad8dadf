import type { Duplex } from "node:stream";
import { Code, CsiProxyError } from "../errors.ts";
import { ByteBudget } from "./byte-budget.ts";
import { CallStream } from "./call-stream.ts";
import { statusMessage, type UnaryMethod } from "./grpc-service.ts";
import { RESPONSE_HEADERS, TRAILERS_OK, statusTrailers } from "./grpc-status-trailers.ts";
import { parseGrpcTimeout } from "./grpc-timeout.ts";
import { HpackDecoder, HpackError } from "./hpack-decoder.ts";
import { Http2ConnectionError } from "./http2-connection-error.ts";
import {
  CLIENT_PREFACE, COMPRESSION_ERROR, ENHANCE_YOUR_CALM, FLAG_ACK, FLAG_END_HEADERS, FLAG_END_STREAM, FLAG_PADDED, FLAG_PRIORITY,
  FLOW_CONTROL_ERROR, FRAME_SIZE_ERROR, MAX_WINDOW, NO_ERROR, PROTOCOL_ERROR, REFUSED_STREAM, SETTINGS_ACK, SETTINGS_ENABLE_PUSH,
  SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_CONCURRENT_STREAMS, SETTINGS_MAX_FRAME_SIZE, STREAM_CLOSED, TYPE_CONTINUATION, TYPE_DATA,
  TYPE_GOAWAY, TYPE_HEADERS, TYPE_PING, TYPE_PRIORITY, TYPE_PUSH_PROMISE, TYPE_RST_STREAM, TYPE_SETTINGS, TYPE_WINDOW_UPDATE,
  frame, goaway, headersFrames, ping, rstStream, settings, windowUpdate, writeFrameHeader,
} from "./http2-frames.ts";
import { RateBucket } from "./rate-bucket.ts";
import {
  CONNECTION_WINDOW_BOOST, CONNECTION_WINDOW_REPLENISH, DEFAULT_LIMITS, MAX_FRAME_ACCEPTED, PROCESS_BUFFERED_BYTES,
  STREAM_RECEIVE_WINDOW, type TransportLimits,
} from "./transport-limits.ts";

/**
 * The server side of one HTTP/2 connection carrying unary gRPC calls (RFC 9113, gRPC over HTTP/2),
 * written directly on the socket: no nghttp2, no stream objects beyond one CallStream per call.
 *
 * Wire behaviour:
 * - any `:authority` is accepted, including the raw pipe path (`\\.\pipe\…`) grpc-go < 1.57 sends,
 *   which Node's own HTTP/2 server resets;
 * - bytes that are not the client preface close the connection; a client that has not sent the
 *   preface and its SETTINGS within `handshakeTimeoutMs` is closed;
 * - unknown `:path` → UNIMPLEMENTED "The server does not implement the method <path>"; a request
 *   message above `maxMessageBytes` → RESOURCE_EXHAUSTED; `grpc-timeout` → DEADLINE_EXCEEDED
 *   "Deadline exceeded" when it passes (the handler's signal is aborted); RST_STREAM from the
 *   client before the answer aborts the handler's signal (Canceled);
 * - errors are trailers-only responses (`grpc-status`, percent-encoded `grpc-message`);
 * - flow control: requests get an 8 MiB stream window (larger than any accepted message, so no
 *   per-call WINDOW_UPDATE), responses honour the client's windows and frame size;
 * - protocol violations end the connection with GOAWAY (malformed requests: RST_STREAM); every
 *   bound of transport-limits.ts holds (memory, rates, streams), and an idle connection is ended
 *   with GOAWAY(NO_ERROR) without failing any call.
 * Hot-path cost of the limits: O(1) per frame (counters, no timers or clocks per call).
 * Memory held per connection: at most one partial frame (16 KiB), one header block in progress
 * (maxHeaderBlockBytes in maxHeaderBlockFrames pieces), request bodies up to
 * maxConnectionBufferedBytes (and the process-wide budget), the streams, and queued writes (reading
 * stops above writeHighWaterBytes).
 */
export class GrpcConnection {
  private readonly socket: Duplex;
  private readonly methods: ReadonlyMap<string, UnaryMethod>;
  private readonly limits: TransportLimits;
  private readonly processBudget: ByteBudget;
  private readonly decoder = new HpackDecoder();
  private readonly streams = new Map<number, CallStream>();
  /** Streams that count against maxConcurrentStreams: open, or closed while their handler runs. */
  private active = 0;
  /** Capacity of request bodies held by this connection, bytes. */
  private buffered = 0;
  private rest: Buffer = EMPTY;
  private prefaceDone = false;
  private settingsSeen = false;
  private lastStreamId = 0;
  /** A header block awaiting CONTINUATION frames. */
  private continuing: { id: number; flags: number; fragments: Buffer[]; size: number; frames: number } | null = null;
  private peerInitialWindow = 65535;
  private peerMaxFrame = 16384;
  private connSendWindow = 65535;
  private recvUnacked = 0;
  private readonly blocked: CallStream[] = [];
  private out: Buffer[] = [];
  private outBytes = 0;
  private flushScheduled = false;
  private paused = false;
  private closed = false;
  /** PING policy state (grpc-go's): strikes, when the last PING came, and whether we sent HEADERS/DATA since. */
  private pingStrikes = 0;
  private lastPingAt = -Infinity;
  private sentSincePing = false;
  private readonly resets: RateBucket;
  private readonly glitches: RateBucket;
  private timer: NodeJS.Timeout;
  /** A stream started since the idle timer last ran. */
  private touched = false;
  /** Graceful close: the first GOAWAY (2^31 - 1) was sent; `finalGoaway`: the second, with the last stream id processed. */
  private draining = false;
  private finalGoaway = false;

  constructor(socket: Duplex, methods: ReadonlyMap<string, UnaryMethod>, options: { limits?: Partial<TransportLimits>; processBudget?: ByteBudget } = {}) {
    this.socket = socket;
    this.methods = methods;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.processBudget = options.processBudget ?? new ByteBudget(PROCESS_BUFFERED_BYTES);
    this.resets = new RateBucket(this.limits.resetBurst, this.limits.resetsPerSecond);
    this.glitches = new RateBucket(this.limits.glitchBurst, this.limits.glitchesPerSecond);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("close", () => this.onClose());
    socket.on("error", () => socket.destroy());
    socket.on("end", () => socket.destroy());
    socket.on("drain", () => this.onDrain());
    this.timer = setTimeout(this.onHandshakeTimeout, this.limits.handshakeTimeoutMs);
    this.timer.unref();
    this.write(SERVER_PREFACE(this.limits.maxConcurrentStreams));
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    let buf = chunk, pos = 0;
    if (!this.prefaceDone) {
      if (this.rest.length) buf = Buffer.concat([this.rest, chunk]);
      const have = Math.min(buf.length, CLIENT_PREFACE.length);
      if (buf.compare(CLIENT_PREFACE, 0, have, 0, have) !== 0) return void this.socket.destroy();
      if (buf.length < CLIENT_PREFACE.length) {
        this.rest = Buffer.from(buf);
        return;
      }
      this.rest = EMPTY;
      this.prefaceDone = true;
      pos = CLIENT_PREFACE.length;
    } else if (this.rest.length) {
      // Complete the partial frame with the first bytes of the chunk (no copy of the whole chunk).
      pos = this.completeFrame(chunk);
      if (pos < 0) return;
    }
    try {
      if (this.rest.length) {
        const first = this.rest;
        this.rest = EMPTY;
        this.frames(first, 0);
      }
      pos = this.frames(buf, pos);
    } catch (err) {
      if (!(err instanceof Http2ConnectionError)) throw err;
      return this.fail(err.code, err.message);
    }
    // Keep a copy of a partial frame so the socket's chunk is not retained.
    if (!this.closed && pos < buf.length) this.rest = Buffer.from(buf.subarray(pos));
    // Back-pressure: answers this chunk produced wait for the client to read before more is read.
    if (this.outBytes > this.limits.writeHighWaterBytes) this.flush();
  }

  /**
   * Appends to `rest` (a partial frame) what it lacks from the start of `chunk`. Returns the offset
   * in `chunk` after the bytes taken, with `rest` then one whole frame; or -1 when the chunk did not
   * complete it (all of it is in `rest`).
   */
  private completeFrame(chunk: Buffer): number {
    let rest = this.rest, used = 0;
    if (rest.length < 9) {
      used = Math.min(9 - rest.length, chunk.length);
      rest = Buffer.concat([rest, chunk.subarray(0, used)]);
      if (rest.length < 9) {
        this.rest = rest;
        return -1;
      }
    }
    const length = (rest[0] << 16) | (rest[1] << 8) | rest[2];
    const take = Math.min(9 + Math.min(length, MAX_FRAME_ACCEPTED + 1) - rest.length, chunk.length - used);
    this.rest = Buffer.concat([rest, chunk.subarray(used, used + take)]);
    used += take;
    return this.rest.length >= 9 + length || length > MAX_FRAME_ACCEPTED ? used : -1;
  }

  /** Handles the whole frames of `buf` from `pos`; returns the offset of the first incomplete one. Throws Http2ConnectionError. */
  private frames(buf: Buffer, pos: number): number {
    while (buf.length - pos >= 9 && !this.closed) {
      const length = (buf[pos] << 16) | (buf[pos + 1] << 8) | buf[pos + 2];
      if (length > MAX_FRAME_ACCEPTED) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "frame too large");
      if (buf.length - pos < 9 + length) break;
      const type = buf[pos + 3], flags = buf[pos + 4];
      const id = buf.readUInt32BE(pos + 5) & 0x7fffffff;
      this.onFrame(type, flags, id, buf, pos + 9, pos + 9 + length);
      pos += 9 + length;
    }
    return pos;
  }

  private onFrame(type: number, flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (this.continuing && type !== TYPE_CONTINUATION) throw new Http2ConnectionError(PROTOCOL_ERROR, "expected CONTINUATION");
    if (!this.settingsSeen) {
      if (type !== TYPE_SETTINGS || flags & FLAG_ACK) throw new Http2ConnectionError(PROTOCOL_ERROR, "the client preface must start with SETTINGS");
      this.settingsSeen = true;
      this.armIdleTimer();
    }
    switch (type) {
      case TYPE_DATA:
        return this.onDataFrame(flags, id, buf, start, end);
      case TYPE_HEADERS: {
        if (id === 0 || (id & 1) === 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "bad stream id");
        let s = start, e = end;
        if (flags & FLAG_PADDED) {
          if (e - s < 1 || buf[s] >= e - s) throw new Http2ConnectionError(PROTOCOL_ERROR, "bad padding");
          e -= buf[s];
          s += 1;
        }
        if (flags & FLAG_PRIORITY) s += 5;
        if (s > e) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "short HEADERS");
        const fragment = buf.subarray(s, e);
        if (flags & FLAG_END_HEADERS) return this.onHeaderBlock(id, flags, fragment);
        if (fragment.length > this.limits.maxHeaderBlockBytes) throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "header block too large");
        this.continuing = { id, flags, fragments: [Buffer.from(fragment)], size: fragment.length, frames: 1 };
        return;
      }
      case TYPE_CONTINUATION: {
        const c = this.continuing;
        if (!c || c.id !== id) throw new Http2ConnectionError(PROTOCOL_ERROR, "unexpected CONTINUATION");
        c.size += end - start;
        if (c.size > this.limits.maxHeaderBlockBytes) throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "header block too large");
        if (++c.frames > this.limits.maxHeaderBlockFrames) throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "header block in too many frames");
        if (end > start) c.fragments.push(Buffer.from(buf.subarray(start, end)));
        if (!(flags & FLAG_END_HEADERS)) return;
        this.continuing = null;
        return this.onHeaderBlock(id, c.flags, c.fragments.length === 1 ? c.fragments[0] : Buffer.concat(c.fragments));
      }
      case TYPE_RST_STREAM: {
        if (id === 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "RST_STREAM on stream 0");
        if (end - start !== 4) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "bad RST_STREAM");
        if (id > this.lastStreamId) {
          if (this.finalGoaway) return; // a stream ignored after the final GOAWAY
          throw new Http2ConnectionError(PROTOCOL_ERROR, "RST_STREAM on an idle stream");
        }
        if (!this.resets.take()) throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "too_many_resets");
        const stream = this.streams.get(id);
        if (stream) this.cancel(stream, new CsiProxyError(Code.Canceled, "call cancelled by the client"));
        return;
      }
      case TYPE_SETTINGS:
        return this.onSettings(flags, id, buf, start, end);
      case TYPE_PING:
        if (id !== 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "PING on a stream");
        if (end - start !== 8) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "bad PING");
        if (flags & FLAG_ACK) {
          if (this.draining && !this.finalGoaway && buf.compare(GOAWAY_PING, 0, 8, start, end) === 0) this.sendFinalGoaway();
          return;
        }
        this.onPing();
        this.write(ping(true, buf.subarray(start, end)));
        return;
      case TYPE_WINDOW_UPDATE:
        return this.onWindowUpdate(id, buf, start, end);
      case TYPE_PRIORITY:
        if (id === 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "PRIORITY on stream 0");
        this.glitch();
        if (end - start !== 5) this.write(rstStream(id, FRAME_SIZE_ERROR));
        return;
      case TYPE_PUSH_PROMISE:
        throw new Http2ConnectionError(PROTOCOL_ERROR, "PUSH_PROMISE from a client");
      case TYPE_GOAWAY:
        return; // the client closes the socket itself; calls in flight still get their answers
      default:
        this.glitch(); // extension frames: ignored (RFC 9113 §5.5), but they cost a read
        return;
    }
  }

  /** One cheap frame that makes work without progress; too many: ENHANCE_YOUR_CALM. */
  private glitch(): void {
    if (!this.glitches.take()) throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "too_many_glitches");
  }

  /** grpc-go's keepalive enforcement: PINGs faster than pingMinIntervalMs with nothing sent by us in between are strikes. */
  private onPing(): void {
    const now = performance.now();
    if (this.sentSincePing) {
      this.sentSincePing = false;
      this.pingStrikes = 0;
      this.lastPingAt = -Infinity;
    }
    if (now < this.lastPingAt + this.limits.pingMinIntervalMs && ++this.pingStrikes > this.limits.maxPingStrikes) {
      throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "too_many_pings");
    }
    this.lastPingAt = now;
  }

  private onWindowUpdate(id: number, buf: Buffer, start: number, end: number): void {
    if (end - start !== 4) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "bad WINDOW_UPDATE");
    const increment = buf.readUInt32BE(start) & 0x7fffffff;
    if (id === 0) {
      if (increment === 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
      this.connSendWindow += increment;
      if (this.connSendWindow > MAX_WINDOW) throw new Http2ConnectionError(FLOW_CONTROL_ERROR, "connection window above 2^31-1");
    } else {
      if (id > this.lastStreamId) {
        if (this.finalGoaway) return;
        throw new Http2ConnectionError(PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream");
      }
      const stream = this.streams.get(id);
      if (!stream) return;
      if (increment === 0) return this.reset(stream, PROTOCOL_ERROR);
      stream.sendWindow += increment;
      if (stream.sendWindow > MAX_WINDOW) return this.reset(stream, FLOW_CONTROL_ERROR);
    }
    if (this.blocked.length) this.flushBlocked();
  }

  private onDataFrame(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id === 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "DATA on stream 0");
    this.recvUnacked += end - start;
    if (this.recvUnacked >= CONNECTION_WINDOW_REPLENISH) {
      this.write(windowUpdate(0, this.recvUnacked));
      this.recvUnacked = 0;
    }
    if (flags & FLAG_PADDED) {
      if (end - start < 1 || buf[start] >= end - start) throw new Http2ConnectionError(PROTOCOL_ERROR, "bad padding");
      end -= buf[start];
      start += 1;
    }
    if (end === start && !(flags & FLAG_END_STREAM)) this.glitch();
    const stream = this.streams.get(id);
    if (!stream) {
      if (id > this.lastStreamId && !this.finalGoaway) throw new Http2ConnectionError(PROTOCOL_ERROR, "DATA on an idle stream");
      return; // a stream already answered (or reset), or ignored after the final GOAWAY: its bytes are dropped
    }
    if (stream.remoteClosed) return this.reset(stream, STREAM_CLOSED);
    if (!stream.answered && end > start && !this.appendBody(stream, buf, start, end, (flags & FLAG_END_STREAM) !== 0)) return;
    if (flags & FLAG_END_STREAM) this.endOfRequest(stream);
  }

  /**
   * Adds request bytes to the stream's body. A body that arrives whole in one frame is used in
   * place (the call runs at once); otherwise one buffer per stream holds it: 5 bytes until the
   * length prefix is known, then the declared message size (no growth copies; pages are touched
   * only as bytes arrive), charged in full to the connection's and the process's budgets. False
   * when the call was answered instead (too large, budget exhausted).
   */
  private appendBody(stream: CallStream, buf: Buffer, start: number, end: number, last: boolean): boolean {
    const max = this.limits.maxMessageBytes;
    const total = stream.bodyBytes + (end - start);
    if (total > max + 5) {
      this.finish(stream, Code.ResourceExhausted, `Received message larger than max (${total - 5} vs. ${max})`);
      return false;
    }
    if (stream.bodyBytes === 0 && last) {
      stream.body = buf.subarray(start, end);
      stream.bodyBytes = total;
      return true;
    }
    let body = stream.body;
    if (!body || body.length < total) {
      let capacity = 5;
      if (total >= 5) {
        const declared = declaredLength(body, stream.bodyBytes, buf, start);
        if (declared > max) {
          this.finish(stream, Code.ResourceExhausted, `Received message larger than max (${declared} vs. ${max})`);
          return false;
        }
        // More bytes than declared (a second message): held up to the limit, refused at END_STREAM.
        capacity = declared + 5 >= total ? declared + 5 : max + 5;
      }
      const delta = capacity - stream.bodyCharged;
      if (this.buffered + delta > this.limits.maxConnectionBufferedBytes || !this.processBudget.tryCharge(delta)) {
        this.finish(stream, Code.ResourceExhausted, `request data buffered by the server exceeds its limit (${this.limits.maxConnectionBufferedBytes} bytes per connection, ${this.processBudget.limit} per process)`);
        return false;
      }
      this.buffered += delta;
      stream.bodyCharged = capacity;
      const grown = Buffer.allocUnsafeSlow(capacity);
      if (body) body.copy(grown, 0, 0, stream.bodyBytes);
      stream.body = body = grown;
    }
    buf.copy(body, stream.bodyBytes, start, end);
    stream.bodyBytes = total;
    return true;
  }

  /** Drops the stream's request body and returns its charge. */
  private dropBody(stream: CallStream): void {
    stream.body = null;
    stream.bodyBytes = 0;
    if (stream.bodyCharged) {
      this.buffered -= stream.bodyCharged;
      this.processBudget.release(stream.bodyCharged);
      stream.bodyCharged = 0;
    }
  }

  private onHeaderBlock(id: number, flags: number, block: Buffer): void {
    let path = "", method = "", contentType = "", timeout = "", encoding = "", size = 0;
    let regularSeen = false, malformed = false;
    try {
      this.decoder.decode(block, (name, value) => {
        size += name.length + value.length + 32;
        if (name.charCodeAt(0) === 58 /* ':' */) {
          if (regularSeen) malformed = true;
          if (name === ":path") path = value;
          else if (name === ":method") method = value;
        } else {
          regularSeen = true;
          if (name === "content-type") contentType = value;
          else if (name === "grpc-timeout") timeout = value;
          else if (name === "grpc-encoding") encoding = value;
          else if (hasUppercase(name)) malformed = true;
        }
      });
    } catch (err) {
      if (err instanceof HpackError) throw new Http2ConnectionError(COMPRESSION_ERROR, err.message);
      throw err;
    }
    const existing = this.streams.get(id);
    if (existing) {
      // Trailers from the client: they must end the stream, and only once.
      if (existing.remoteClosed) return this.reset(existing, STREAM_CLOSED);
      if (!(flags & FLAG_END_STREAM)) return this.reset(existing, PROTOCOL_ERROR);
      return this.endOfRequest(existing);
    }
    if (id <= this.lastStreamId) throw new Http2ConnectionError(PROTOCOL_ERROR, "stream id reused");
    if (this.finalGoaway) return; // above the GOAWAY's last stream id: ignored, the client retries elsewhere
    this.lastStreamId = id;
    if (malformed) {
      this.write(rstStream(id, PROTOCOL_ERROR));
      return;
    }
    if (this.active >= this.limits.maxConcurrentStreams) {
      this.glitch();
      this.write(rstStream(id, REFUSED_STREAM));
      return;
    }
    const stream = new CallStream(id, this.peerInitialWindow);
    this.streams.set(id, stream);
    this.active++;
    this.touched = true;
    if (flags & FLAG_END_STREAM) stream.remoteClosed = true;
    if (size > this.limits.maxHeaderListBytes) return this.finish(stream, Code.ResourceExhausted, `header list of ${size} bytes exceeds ${this.limits.maxHeaderListBytes}`);
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
      const ms = parseGrpcTimeout(timeout);
      if (ms === undefined) return this.finish(stream, Code.Internal, `invalid grpc-timeout ${JSON.stringify(timeout)}`);
      stream.timer = setTimeout(() => this.deadline(stream), ms);
    }
    if (stream.remoteClosed) this.endOfRequest(stream);
  }

  private onSettings(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id !== 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "SETTINGS on a stream");
    if (flags & FLAG_ACK) {
      if (end !== start) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "SETTINGS ACK with a payload");
      return;
    }
    if ((end - start) % 6) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "bad SETTINGS");
    if ((end - start) / 6 > this.limits.maxSettingsEntries) throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "too many SETTINGS entries");
    this.glitch();
    for (let p = start; p < end; p += 6) {
      const key = buf.readUInt16BE(p), value = buf.readUInt32BE(p + 2);
      if (key === SETTINGS_INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW) throw new Http2ConnectionError(FLOW_CONTROL_ERROR, "window too large");
        const delta = value - this.peerInitialWindow;
        this.peerInitialWindow = value;
        for (const stream of this.streams.values()) stream.sendWindow += delta;
      } else if (key === SETTINGS_MAX_FRAME_SIZE) {
        if (value < 16384 || value > 16777215) throw new Http2ConnectionError(PROTOCOL_ERROR, "bad max frame size");
        this.peerMaxFrame = value;
      } else if (key === SETTINGS_ENABLE_PUSH && value > 1) {
        throw new Http2ConnectionError(PROTOCOL_ERROR, "bad ENABLE_PUSH");
      }
    }
    this.write(SETTINGS_ACK);
    if (this.blocked.length) this.flushBlocked();
  }

  /** The client finished its request: decode the message and run the method. */
  private endOfRequest(stream: CallStream): void {
    stream.remoteClosed = true;
    if (stream.answered) return this.release(stream);
    const method = stream.method;
    if (!method) return;
    const held = stream.body;
    const body = !held ? EMPTY : held.length === stream.bodyBytes ? held : held.subarray(0, stream.bodyBytes);
    this.dropBody(stream);
    if (body.length < 5) return this.finish(stream, Code.Internal, "request message missing");
    const length = body.readUInt32BE(1);
    if (length > this.limits.maxMessageBytes) return this.finish(stream, Code.ResourceExhausted, `Received message larger than max (${length} vs. ${this.limits.maxMessageBytes})`);
    if (body.length !== 5 + length) return this.finish(stream, Code.Internal, body.length < 5 + length ? "request message truncated" : "more than one request message for a unary method");
    const message = body.subarray(5);
    if (body[0] === 0) return this.run(stream, method, message);
    if (!stream.encoding) return this.finish(stream, Code.Internal, "compressed request message without grpc-encoding");
    const encoding = stream.encoding;
    stream.running = true;
    // zlib is loaded on first use: compressed requests are rare (no csi-proxy client compresses).
    import("node:zlib").then((zlib) =>
      (encoding === "gzip" ? zlib.gunzip : zlib.inflate)(message, { maxOutputLength: this.limits.maxMessageBytes }, (err, plain) => {
        if (stream.answered) return this.handlerEnded(stream);
        if (err) {
          if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") {
            this.finish(stream, Code.ResourceExhausted, `Received message after decompression larger than max (${this.limits.maxMessageBytes})`);
          } else this.finish(stream, Code.Internal, `cannot decompress the request message: ${err.message}`);
          return this.handlerEnded(stream);
        }
        this.run(stream, method, plain);
      }),
    );
  }

  private run(stream: CallStream, method: UnaryMethod, message: Uint8Array): void {
    stream.running = true;
    method.call(message, stream).then(
      (response) => {
        this.respond(stream, response);
        this.handlerEnded(stream);
      },
      (err: CsiProxyError) => {
        // The deadline's own abort reason, rethrown as it is, answers as grpc-go words it.
        const message = err === stream.abortedWith && err.code === Code.DeadlineExceeded ? "Deadline exceeded" : err.message;
        if (!stream.answered) this.finish(stream, err.code, statusMessage(message));
        this.handlerEnded(stream);
      },
    );
  }

  private handlerEnded(stream: CallStream): void {
    stream.running = false;
    if (!stream.open) this.retire();
  }

  private respond(stream: CallStream, response: Uint8Array): void {
    if (stream.answered || this.closed) return;
    stream.answered = true;
    this.sentSincePing = true;
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
        this.sentSincePing = true;
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
    this.sentSincePing = true;
    this.dropBody(stream);
    if (stream.timer) clearTimeout(stream.timer);
    this.write(headersFrames(stream.id, statusTrailers(code, message, httpStatus), true));
    this.release(stream);
  }

  /** Our side is done: the stream is closed once the client's side is; otherwise it is reset (NO_ERROR) so the client stops sending. */
  private release(stream: CallStream): void {
    if (!stream.remoteClosed) {
      stream.remoteClosed = true;
      this.write(rstStream(stream.id, NO_ERROR));
    }
    this.close(stream);
  }

  /** Removes the stream from the table; it stops counting against the stream limit once its handler has ended too. */
  private close(stream: CallStream): void {
    if (!stream.open) return;
    stream.open = false;
    this.streams.delete(stream.id);
    this.dropBody(stream);
    if (!stream.running) this.retire();
  }

  private retire(): void {
    if (--this.active === 0 && this.finalGoaway && !this.closed) this.endSocket();
  }

  /**
   * The call's grpc-timeout passed: its handler's signal is aborted. A running handler is waited for
   * (at most limits.deadlineAnswerGraceMs), so the answer — its own, saying what the work did — is sent
   * only once the work has stopped; a call whose handler has not started is answered at once.
   */
  private deadline(stream: CallStream): void {
    stream.timer = undefined;
    if (stream.answered) return;
    stream.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded"));
    if (!stream.running) return this.finish(stream, Code.DeadlineExceeded, "Deadline exceeded");
    const grace = this.limits.deadlineAnswerGraceMs;
    stream.timer = setTimeout(() => {
      stream.timer = undefined;
      this.finish(stream, Code.DeadlineExceeded, `Deadline exceeded; the call's work had not stopped ${grace} ms later`);
    }, grace);
  }

  private cancel(stream: CallStream, reason: CsiProxyError): void {
    this.close(stream);
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

  private readonly onHandshakeTimeout = () => {
    if (!this.settingsSeen) this.socket.destroy();
  };

  /**
   * The idle timer: one timer per connection, run every idleTimeoutMs (no timer work per call). A
   * connection is idle when no stream started during a whole period and none is active at its end,
   * so it is ended between idleTimeoutMs and twice that after its last call.
   */
  private armIdleTimer(): void {
    clearTimeout(this.timer);
    if (!this.limits.idleTimeoutMs) return;
    this.timer = setTimeout(this.onIdleTimer, this.limits.idleTimeoutMs);
    this.timer.unref();
  }

  private readonly onIdleTimer = () => {
    if (this.closed || this.draining) return;
    if (this.active > 0 || this.touched) {
      this.touched = false;
      return this.armIdleTimer();
    }
    // grpc-go's graceful close: GOAWAY(2^31-1) and a PING; once acknowledged (or after 1 s), GOAWAY with the last stream id.
    this.draining = true;
    this.write(goaway(0x7fffffff, NO_ERROR, "max_idle"));
    this.write(ping(false, GOAWAY_PING));
    this.timer = setTimeout(() => this.sendFinalGoaway(), 1000);
    this.timer.unref();
  };

  private sendFinalGoaway(): void {
    if (this.finalGoaway || this.closed) return;
    this.finalGoaway = true;
    clearTimeout(this.timer);
    this.write(goaway(this.lastStreamId, NO_ERROR, "max_idle"));
    if (this.active === 0) this.endSocket();
  }

  private endSocket(): void {
    this.flush();
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }

  /** Connection error: GOAWAY, then close. */
  private fail(code: number, debug: string): void {
    if (this.closed) return;
    this.write(goaway(this.lastStreamId, code, code === ENHANCE_YOUR_CALM ? debug : ""));
    this.flush();
    this.socket.end();
    this.socket.pause(); // nothing more is read: a flooding client's writes block until the socket goes
    this.onClose();
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    const reason = new CsiProxyError(Code.Canceled, "connection closed");
    for (const stream of [...this.streams.values()]) this.cancel(stream, reason);
    this.blocked.length = 0;
    this.out = [];
    this.outBytes = 0;
    this.rest = EMPTY;
    this.continuing = null;
  }

  /** Queues bytes; everything queued in one event-loop turn goes out in one write. */
  private write(bytes: Buffer): void {
    if (this.closed) return;
    this.out.push(bytes);
    this.outBytes += bytes.length;
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
    this.outBytes = 0;
    this.socket.write(out.length === 1 ? out[0] : Buffer.concat(out));
    // Write back-pressure: stop reading while the client does not read what we sent.
    if (!this.paused && this.socket.writableLength > this.limits.writeHighWaterBytes) {
      this.paused = true;
      this.socket.pause();
    }
  }

  private onDrain(): void {
    if (!this.paused || this.closed) return;
    this.paused = false;
    this.socket.resume();
  }
}

/** The message length prefix once at least 5 body bytes are known: from the body held so far and the frame being added. */
function declaredLength(body: Buffer | null, held: number, buf: Buffer, start: number): number {
  const head = Buffer.allocUnsafe(5);
  for (let i = 0; i < 5; i++) head[i] = i < held ? body![i] : buf[start + i - held];
  return head.readUInt32BE(1);
}

function hasUppercase(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 65 && c <= 90) return true;
  }
  return false;
}

const EMPTY = Buffer.alloc(0);
const GOAWAY_PING = Buffer.from("csiproxy", "latin1");

/** SETTINGS (max concurrent streams, initial window) and the connection-window boost, sent first on every connection. */
const SERVER_PREFACE = (maxConcurrentStreams: number) =>
  Buffer.concat([
    settings([[SETTINGS_MAX_CONCURRENT_STREAMS, maxConcurrentStreams], [SETTINGS_INITIAL_WINDOW_SIZE, STREAM_RECEIVE_WINDOW]]),
    windowUpdate(0, CONNECTION_WINDOW_BOOST),
  ]);
