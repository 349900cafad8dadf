import type { Duplex } from "node:stream";
import type { FlowControl, WindowedStream } from "./flow-control.ts";
import { RESPONSE_HEADERS, TRAILERS_OK } from "./grpc-status-trailers.ts";
import { FLAG_END_HEADERS, FLAG_END_STREAM, TYPE_DATA, TYPE_HEADERS, frame, headersFrames, writeFrameHeader } from "./http2-frames.ts";

/** A stream whose answer the scheduler sends (CallStream is one). */
export interface ScheduledStream extends WindowedStream {
  readonly id: number;
  /** Response bytes (length-prefixed message) waiting for flow-control window, and how many of them were sent. */
  pending?: Buffer;
  sent: number;
}

/**
 * The write side of one connection (grpc-go's loopyWriter, golang/net's write scheduler, for unary
 * answers): every frame queued in one event-loop turn goes out in one socket write; an answer that
 * fits the client's windows goes out as one buffer (HEADERS, DATA, trailers), a larger one waits for
 * WINDOW_UPDATE and goes out in frames of the client's size, round robin (one frame per stream per
 * round) over the answers whose stream window is open; answers whose stream window is spent wait
 * apart, so no frame costs a walk over every waiting answer. What it holds
 * unsent (`socketUnsent`, `pendingBytes`) is what the connection's outbound budget counts;
 * `onFlushed` runs after each socket write so the budget can measure it.
 */
export class SendScheduler<S extends ScheduledStream = ScheduledStream> {
  private readonly socket: Duplex;
  private readonly flow: FlowControl;
  /** Called after each socket write. */
  private readonly onFlushed: () => void;
  /** Called when HEADERS or DATA is queued (the PING policy counts it). */
  private readonly onSent: () => void;
  /** Called once a stream's whole answer (trailers included) is queued. */
  private readonly onAnswered: (stream: S) => void;
  /** Waiting answers whose stream window is open, in round-robin order (a Set keeps insertion order; re-adding moves to the back). */
  private readonly ready = new Set<S>();
  /** Waiting answers whose stream window is spent: untouched until a WINDOW_UPDATE on their stream. */
  private readonly stalled = new Set<S>();
  private out: Buffer[] = [];
  private outBytes = 0;
  private pending = 0;
  private flushScheduled = false;
  private closed = false;
  /** Stall watch: answers wait for window and no DATA went out for `stallMs` → onStalled (0: never). */
  private readonly stallMs: number;
  private readonly onStalled: () => void;
  private lastProgressAt = 0;
  private stallTimer?: NodeJS.Timeout;

  constructor(socket: Duplex, flow: FlowControl, options: { onSent: () => void; onAnswered: (stream: S) => void; onFlushed?: () => void; stallMs?: number; onStalled?: () => void }) {
    this.stallMs = options.stallMs ?? 0;
    this.onStalled = options.onStalled ?? (() => {});
    this.socket = socket;
    this.flow = flow;
    this.onSent = options.onSent;
    this.onAnswered = options.onAnswered;
    this.onFlushed = options.onFlushed ?? (() => {});
  }

  /** Bytes queued in this turn, not yet handed to the socket. */
  get queuedBytes(): number {
    return this.outBytes;
  }

  /** Bytes queued in this turn plus those the socket has not written yet (the client does not read). */
  get socketUnsent(): number {
    return this.outBytes + this.socket.writableLength;
  }

  /** Answer bytes waiting for the client's flow-control window. */
  get pendingBytes(): number {
    return this.pending;
  }

  /** Queues bytes; everything queued in one event-loop turn goes out in one write. */
  write(bytes: Buffer): void {
    if (this.closed) return;
    this.out.push(bytes);
    this.outBytes += bytes.length;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushNow);
    }
  }

  private readonly flushNow = () => this.flush();

  /** Hands what is queued to the socket now. */
  flush(): void {
    this.flushScheduled = false;
    const out = this.out;
    if (!out.length || this.socket.destroyed) return;
    this.out = [];
    this.outBytes = 0;
    this.socket.write(out.length === 1 ? out[0] : Buffer.concat(out));
    this.onFlushed();
  }

  /** Queues a successful answer: HEADERS, the length-prefixed message as DATA, trailers OK. */
  respond(stream: S, response: Uint8Array): void {
    this.onSent();
    const payload = 5 + response.length;
    if (this.flow.fitsWhole(stream, payload)) {
      // One buffer: HEADERS, DATA, trailers.
      this.flow.take(stream, payload);
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
      return this.onAnswered(stream);
    }
    this.write(headersFrames(stream.id, RESPONSE_HEADERS, false));
    const body = Buffer.allocUnsafe(payload);
    body[0] = 0;
    body.writeUInt32BE(response.length, 1);
    body.set(response, 5);
    stream.pending = body;
    this.pending += payload;
    if (!this.hasBlocked) this.watchStall();
    (stream.sendWindow > 0 ? this.ready : this.stalled).add(stream);
    this.flushBlocked();
  }

  /** True when some answer waits for window. */
  get hasBlocked(): boolean {
    return this.ready.size > 0 || this.stalled.size > 0;
  }

  /** Answers waiting for window: those whose stream window is open (only the connection's is missing), those whose stream window is spent. */
  get blockedCounts(): { ready: number; stalled: number } {
    return { ready: this.ready.size, stalled: this.stalled.size };
  }

  /**
   * The stream's own window grew (WINDOW_UPDATE on it): it moves from the stalled set to the back of
   * the round robin, then what the windows allow goes out. O(1) plus the frames sent.
   */
  streamWindowOpened(stream: S): void {
    if (stream.sendWindow > 0 && this.stalled.delete(stream)) this.ready.add(stream);
    this.flushBlocked();
  }

  /** Every stream window moved (the client's SETTINGS_INITIAL_WINDOW_SIZE): stalled streams with window again rejoin the round robin. O(stalled). */
  windowsReset(): void {
    for (const stream of this.stalled) {
      if (stream.sendWindow > 0) {
        this.stalled.delete(stream);
        this.ready.add(stream);
      }
    }
    this.flushBlocked();
  }

  /**
   * Sends what the windows allow of waiting answers, one frame per stream per round (round robin
   * over the streams whose own window is open), then their trailers. A stream whose window is spent
   * leaves the round robin until a WINDOW_UPDATE on it (streamWindowOpened), so the work is O(1)
   * per frame sent plus one step per stream that runs out of window: never a walk over every waiting answer.
   */
  flushBlocked(): void {
    while (this.flow.connection > 0) {
      const next = this.ready.values().next();
      if (next.done) return;
      const stream = next.value;
      const pending = stream.pending!;
      const size = this.flow.take(stream, pending.length - stream.sent);
      if (size === 0) {
        // Its own window is spent (the connection's is not): it waits apart.
        this.ready.delete(stream);
        this.stalled.add(stream);
        continue;
      }
      this.write(frame(TYPE_DATA, 0, stream.id, pending.subarray(stream.sent, stream.sent + size)));
      this.onSent();
      stream.sent += size;
      this.pending -= size;
      this.lastProgressAt = performance.now();
      this.ready.delete(stream);
      if (stream.sent < pending.length) {
        this.ready.add(stream); // to the back: the others get their frame first
        continue;
      }
      stream.pending = undefined;
      this.write(headersFrames(stream.id, TRAILERS_OK, true));
      this.onAnswered(stream);
    }
  }

  /**
   * Answers started waiting for window: from now, some DATA must go out at least every stallMs
   * while any waits (checked every stallMs / 2 by one unref'd interval, stopped once none waits).
   */
  private watchStall(): void {
    this.lastProgressAt = performance.now();
    if (!this.stallMs || this.stallTimer) return;
    this.stallTimer = setInterval(() => {
      if (!this.hasBlocked) {
        clearInterval(this.stallTimer);
        this.stallTimer = undefined;
      } else if (performance.now() - this.lastProgressAt >= this.stallMs) this.onStalled();
    }, this.stallMs / 2);
    this.stallTimer.unref();
  }

  /** Forgets a stream's waiting answer (the stream was reset or the connection closed). O(1). */
  drop(stream: S): void {
    if (!this.ready.delete(stream) && !this.stalled.delete(stream)) return;
    this.pending -= stream.pending!.length - stream.sent;
    stream.pending = undefined;
  }

  /** The connection closed: nothing more is queued or sent. */
  close(): void {
    this.closed = true;
    clearInterval(this.stallTimer);
    this.ready.clear();
    this.stalled.clear();
    this.pending = 0;
    this.out = [];
    this.outBytes = 0;
  }
}
