import type { Duplex } from "node:stream";
import { Code, CsiProxyError } from "../errors.ts";
import { noteSocketRead } from "./read-collector.ts";
import { ByteBudget } from "./byte-budget.ts";
import { CallStream } from "./call-stream.ts";
import { ConnectionPolicy } from "./connection-policy.ts";
import { FlowControl, serverPreface } from "./flow-control.ts";
import { FrameReader, type FrameHandler } from "./frame-reader.ts";
import { acceptRequest, decodeRequestHeaders, isRefusal, type Refusal } from "./grpc-request.ts";
import type { UnaryMethod } from "./grpc-service.ts";
import { statusTrailers } from "./grpc-status-trailers.ts";
import { HpackDecoder } from "./hpack-decoder.ts";
import { Http2ConnectionError } from "./http2-connection-error.ts";
import {
  ENHANCE_YOUR_CALM, FLAG_END_STREAM, FRAME_SIZE_ERROR, NO_ERROR, PROTOCOL_ERROR, REFUSED_STREAM, SETTINGS_ACK, STREAM_CLOSED,
  goaway, headersFrames, ping, rstStream, windowUpdate,
} from "./http2-frames.ts";
import type { AdmissionEntry } from "./connection-admission.ts";
import { ConnectionLifetime } from "./connection-lifetime.ts";
import { OutboundAccount, OutboundBudget } from "./outbound-budget.ts";
import { REQUEST_BODY_MIN_PROGRESS_BYTES, RequestBodies } from "./request-body.ts";
import { SendScheduler } from "./send-scheduler.ts";
import { runUnaryCall, type CallOutcome } from "./unary-call.ts";
import { DEFAULT_LIMITS, PROCESS_BUFFERED_BYTES, PROCESS_OUTBOUND_BYTES, type TransportLimits } from "./transport-limits.ts";

/**
 * The server side of one HTTP/2 connection carrying unary gRPC calls (RFC 9113, gRPC over HTTP/2),
 * written directly on the socket (no nghttp2): the stream state machine, as grpc-go's
 * http2_server.go. Its parts: frame-reader.ts (preface, frames, header blocks),
 * connection-policy.ts (abuse accounting), request-body.ts (request bytes against the budgets),
 * grpc-request.ts (headers, message, decompression), flow-control.ts and send-scheduler.ts
 * (windows, writes), outbound-budget.ts (answer memory), connection-lifetime.ts (timeouts, GOAWAY).
 * Wire behaviour: any `:authority` is accepted (also grpc-go < 1.57's raw pipe path); unknown
 * `:path` → UNIMPLEMENTED "The server does not implement the method <path>"; `grpc-timeout` →
 * DEADLINE_EXCEEDED "Deadline exceeded" and the client's RST_STREAM → Canceled (the handler's signal
 * aborted); errors are trailers-only (`grpc-status`, percent-encoded `grpc-message`); protocol
 * violations: GOAWAY (malformed requests: RST_STREAM); every bound of transport-limits.ts holds.
 * Each stream is one CallStream, in the table from its HEADERS until answered and the client's side
 * is closed; it counts against maxConcurrentStreams until its handler has ended too. O(1) per frame.
 */
export class GrpcConnection implements FrameHandler {
  private readonly decoder = new HpackDecoder();
  private readonly policy: ConnectionPolicy;
  private readonly reader: FrameReader;
  private readonly bodies: RequestBodies;
  private readonly flow = new FlowControl();
  private readonly sender: SendScheduler<CallStream>;
  private readonly outbound: OutboundAccount;
  private readonly streams = new Map<number, CallStream>();
  /** Calls whose request is complete, waiting for the outbound budget (at most maxConcurrentStreams), in arrival order. */
  private waiting: CallStream[] = [];
  /** Calls whose handler (or decompression) runs: at most limits.maxCallsInFlight. */
  private running = 0;
  /** Streams that count against maxConcurrentStreams: open, or closed while their handler runs. */
  private active = 0;
  private lastStreamId = 0;
  private closed = false;
  private readonly lifetime: ConnectionLifetime;

  private readonly socket: Duplex;
  private readonly methods: ReadonlyMap<string, UnaryMethod>;
  private readonly limits: TransportLimits;

  constructor(socket: Duplex, methods: ReadonlyMap<string, UnaryMethod>, options: { limits?: Partial<TransportLimits>; processBudget?: ByteBudget; outboundBudget?: OutboundBudget; admission?: AdmissionEntry } = {}) {
    this.socket = socket;
    this.methods = methods;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.policy = new ConnectionPolicy(this.limits);
    this.outbound = new OutboundAccount(options.outboundBudget ?? new OutboundBudget(PROCESS_OUTBOUND_BYTES), {
      connectionLimit: this.limits.maxConnectionOutboundBytes, highWaterBytes: this.limits.writeHighWaterBytes, reserveBytes: this.limits.streamReserveBytes,
    }, {
      socketUnsent: () => this.sender.socketUnsent, pendingUnsent: () => this.sender.pendingBytes, pauseSocket: () => socket.pause(),
      resumeSocket: () => socket.resume(), resumeFrames: () => this.read(() => this.reader.resume()), evict: () => socket.destroy(),
      startWaiting: () => this.startWaiting(),
    });
    this.reader = new FrameReader(this, this.policy, { mayRead: () => this.outbound.mayRead(), paused: () => this.outbound.pause() });
    const processBudget = options.processBudget ?? new ByteBudget(PROCESS_BUFFERED_BYTES);
    this.bodies = new RequestBodies({
      maxMessageBytes: this.limits.maxMessageBytes, maxConnectionBytes: this.limits.maxConnectionBufferedBytes, processBudget,
      stallMs: this.limits.requestBodyStallMs, onStalled: (stream) => this.bodyStalled(stream as CallStream),
    });
    this.sender = new SendScheduler<CallStream>(socket, this.flow, {
      onSent: () => this.policy.sent(), onAnswered: (stream) => this.release(stream), onFlushed: () => this.outbound.sync(),
      stallMs: this.limits.answerStallMs, onStalled: () => this.fail(ENHANCE_YOUR_CALM, "answers_stalled"),
    });
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("close", () => this.onClose());
    socket.on("error", () => socket.destroy());
    socket.on("end", () => socket.destroy());
    socket.on("drain", () => this.outbound.sync());
    this.lifetime = new ConnectionLifetime(socket, this.sender, this.limits, {
      active: () => this.active, lastStreamId: () => this.lastStreamId, closed: () => this.closed, handshakeComplete: () => this.reader.handshakeComplete,
    }, options.admission);
    this.sender.write(serverPreface(this.limits.maxConcurrentStreams));
  }

  private onData(chunk: Buffer): void {
    noteSocketRead(chunk.length);
    if (!this.closed && !this.read(() => this.reader.push(chunk))) this.socket.destroy();
  }

  /** Runs the reader (false: not the HTTP/2 preface); a connection error ends the connection. */
  private read(step: () => boolean | void): boolean {
    try {
      if (step() === false) return false;
    } catch (err) {
      if (!(err instanceof Http2ConnectionError)) throw err;
      this.fail(err.code, err.message);
    }
    // Back-pressure: answers the frames produced go to the socket now, so the budget sees what the client leaves unread.
    if (this.sender.queuedBytes > this.limits.writeHighWaterBytes) this.sender.flush();
    return true;
  }

  data(id: number, endStream: boolean, buf: Buffer, start: number, end: number, frameLength: number): void {
    const increment = this.flow.received(frameLength);
    if (increment) this.sender.write(windowUpdate(0, increment));
    const stream = this.streams.get(id);
    if (!stream) return void this.idle(id, "DATA"); // answered or reset: its bytes are dropped
    if (stream.remoteClosed) return this.reset(stream, STREAM_CLOSED);
    if (!stream.answered && end > start) {
      const refused = this.bodies.append(stream, buf, start, end, endStream);
      if (refused !== undefined) return this.finish(stream, { code: Code.ResourceExhausted, message: refused });
    }
    if (endStream) this.endOfRequest(stream);
  }

  /** A partial request body gained too little for requestBodyStallMs: its call ends, its budget is returned. */
  private bodyStalled(stream: CallStream): void {
    const held = stream.bodyBytes;
    this.finish(stream, {
      code: Code.ResourceExhausted,
      message: `request body stalled: ${held} bytes received, less than ${REQUEST_BODY_MIN_PROGRESS_BYTES} more in ${this.limits.requestBodyStallMs} ms; its buffer was released`,
    });
  }

  /** A frame on a stream above the last one opened: ignored (true) after the final GOAWAY, else PROTOCOL_ERROR. */
  private idle(id: number, frame: string): boolean {
    if (id <= this.lastStreamId) return false;
    if (this.lifetime.finalGoaway) return true;
    throw new Http2ConnectionError(PROTOCOL_ERROR, `${frame} on an idle stream`);
  }

  rstStream(id: number): void {
    if (this.idle(id, "RST_STREAM")) return;
    this.policy.reset();
    const stream = this.streams.get(id);
    if (stream) this.cancel(stream, new CsiProxyError(Code.Canceled, "call cancelled by the client"));
  }

  settings(initialWindow: number | undefined, maxFrameSize: number | undefined): void {
    if (initialWindow !== undefined) this.flow.setInitialWindow(initialWindow, this.streams.values());
    if (maxFrameSize !== undefined) this.flow.maxFrame = maxFrameSize;
    this.sender.write(SETTINGS_ACK);
    if (this.sender.hasBlocked) this.sender.windowsReset();
  }

  ping(buf: Buffer, start: number, end: number): void {
    this.policy.ping(performance.now(), this.active > 0);
    this.sender.write(ping(true, buf.subarray(start, end)));
  }

  pingAck = (buf: Buffer, start: number, end: number) => this.lifetime.pingAck(buf, start, end);
  handshakeDone = () => this.lifetime.handshakeDone();

  /** O(1) plus the frames it lets out (send-scheduler.ts); beyond the credit the policy gives a reading client, a glitch. */
  windowUpdate(id: number, increment: number): void {
    this.policy.windowUpdate();
    if (id === 0) {
      this.flow.connectionUpdate(increment);
      if (this.sender.hasBlocked) this.sender.flushBlocked();
      return;
    }
    if (this.idle(id, "WINDOW_UPDATE")) return;
    const stream = this.streams.get(id);
    if (!stream) return;
    const error = this.flow.streamUpdate(stream, increment);
    if (error) return this.reset(stream, error);
    if (stream.pending) this.sender.streamWindowOpened(stream);
  }

  priority = (id: number, wellFormed: boolean) => void (wellFormed || this.sender.write(rstStream(id, FRAME_SIZE_ERROR)));

  headerBlock(id: number, flags: number, block: Buffer): void {
    const headers = decodeRequestHeaders(this.decoder, block);
    const existing = this.streams.get(id);
    if (existing) {
      // Trailers from the client: they must end the stream, and only once.
      if (existing.remoteClosed) return this.reset(existing, STREAM_CLOSED);
      if (!(flags & FLAG_END_STREAM)) return this.reset(existing, PROTOCOL_ERROR);
      return this.endOfRequest(existing);
    }
    if (id <= this.lastStreamId) throw new Http2ConnectionError(PROTOCOL_ERROR, "stream id reused");
    if (this.lifetime.finalGoaway) return; // above the GOAWAY's last stream id: ignored, the client retries elsewhere
    this.lastStreamId = id;
    if (headers.malformed) return this.sender.write(rstStream(id, PROTOCOL_ERROR));
    if (this.active >= this.limits.maxConcurrentStreams) {
      this.policy.glitch(); // above the limit we advertised: the client's fault
      return this.sender.write(rstStream(id, REFUSED_STREAM));
    }
    const stream = new CallStream(id, this.flow.initialStreamWindow);
    this.streams.set(id, stream);
    this.active++;
    this.lifetime.streamStarted();
    if (flags & FLAG_END_STREAM) stream.remoteClosed = true;
    const accepted = acceptRequest(headers, this.methods, this.limits.maxHeaderListBytes);
    if (isRefusal(accepted)) return this.finish(stream, accepted);
    stream.method = accepted.method;
    stream.encoding = accepted.encoding;
    if (accepted.timeoutMs !== undefined) stream.timer = setTimeout(() => this.deadline(stream), accepted.timeoutMs);
    if (stream.remoteClosed) this.endOfRequest(stream);
  }

  /** The client finished its request: the call runs (unless already answered), or waits for the outbound budget. */
  private endOfRequest(stream: CallStream): void {
    stream.remoteClosed = true;
    if (stream.answered) return this.release(stream);
    if (!stream.method) return;
    if (this.waiting.length || !this.mayStart()) {
      this.bodies.settle(stream);
      this.waiting.push(stream);
      return this.outbound.awaitStart();
    }
    this.run(stream);
  }

  /** One more call may start: under maxCallsInFlight on this connection and within the outbound budgets. */
  private mayStart(): boolean {
    return this.running < this.limits.maxCallsInFlight && this.outbound.mayStart();
  }

  private run(stream: CallStream): void {
    runUnaryCall(stream, this.bodies.take(stream), this.limits.maxMessageBytes, this.outcome);
    if (!stream.running) return;
    this.running++;
    this.outbound.reserve(); // held until the handler ends
  }

  /** Starts the calls waiting for the outbound budget, in arrival order, while it has room (those answered meanwhile — deadline, reset — are skipped). */
  private startWaiting(): void {
    let started = 0;
    while (started < this.waiting.length && !this.closed) {
      const stream = this.waiting[started];
      if (stream.answered) {
        started++;
        continue;
      }
      if (!this.mayStart()) break;
      started++;
      this.run(stream);
    }
    this.waiting.splice(0, started);
    if (this.waiting.length && !this.closed) this.outbound.awaitStart();
  }

  private readonly outcome: CallOutcome = {
    respond: (stream, response) => this.respond(stream, response),
    refuse: (stream, status) => this.finish(stream, status),
    ended: (stream) => {
      this.running--;
      this.outbound.release();
      if (!stream.open) this.retire();
    },
  };

  private respond(stream: CallStream, response: Uint8Array): void {
    if (stream.answered || this.closed) return;
    stream.answered = true;
    if (stream.timer) clearTimeout(stream.timer);
    this.sender.respond(stream, response);
  }

  /** Answers with a status only (trailers-only response) and forgets the stream. */
  private finish(stream: CallStream, status: Refusal): void {
    if (stream.answered || this.closed) return;
    stream.answered = true;
    this.policy.sent();
    this.bodies.drop(stream);
    if (stream.timer) clearTimeout(stream.timer);
    this.sender.write(headersFrames(stream.id, statusTrailers(status.code, status.message, status.httpStatus), true));
    this.release(stream);
  }

  /** Our side is done: the stream is closed once the client's side is; otherwise it is reset (NO_ERROR) so the client stops sending. */
  private release(stream: CallStream): void {
    if (!stream.remoteClosed) {
      stream.remoteClosed = true;
      this.sender.write(rstStream(stream.id, NO_ERROR));
    }
    this.close(stream);
  }

  /** Removes the stream from the table; it stops counting against the stream limit once its handler has ended too. */
  private close(stream: CallStream): void {
    if (!stream.open) return;
    stream.open = false;
    this.streams.delete(stream.id);
    this.bodies.drop(stream);
    if (!stream.running) this.retire();
  }

  private retire(): void {
    if (--this.active === 0) this.lifetime.idle();
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
    if (!stream.running) return this.finish(stream, { code: Code.DeadlineExceeded, message: "Deadline exceeded" });
    const grace = this.limits.deadlineAnswerGraceMs;
    stream.timer = setTimeout(() => {
      stream.timer = undefined;
      this.finish(stream, { code: Code.DeadlineExceeded, message: `Deadline exceeded; the call's work had not stopped ${grace} ms later` });
    }, grace);
  }

  private cancel(stream: CallStream, reason: CsiProxyError): void {
    this.close(stream);
    this.sender.drop(stream);
    if (stream.timer) clearTimeout(stream.timer);
    if (!stream.answered) stream.abort(reason);
    stream.answered = true;
  }

  private reset(stream: CallStream, code: number): void {
    this.sender.write(rstStream(stream.id, code));
    this.cancel(stream, new CsiProxyError(Code.Canceled, "stream reset"));
  }

  /** Connection error: GOAWAY, then close. */
  private fail(code: number, debug: string): void {
    if (this.closed) return;
    this.sender.write(goaway(this.lastStreamId, code, code === ENHANCE_YOUR_CALM ? debug : ""));
    this.sender.flush();
    this.socket.end();
    this.socket.pause(); // nothing more is read: a flooding client's writes block until the socket goes
    this.onClose();
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.reader.clear();
    this.lifetime.stop();
    this.bodies.stop();
    const reason = new CsiProxyError(Code.Canceled, "connection closed");
    for (const stream of [...this.streams.values()]) this.cancel(stream, reason);
    this.waiting = [];
    this.sender.close();
    this.outbound.close();
  }
}

