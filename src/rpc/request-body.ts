import type { ByteBudget } from "./byte-budget.ts";
import { messageTooLarge } from "./transport-limits.ts";

/** The request-body state a stream carries (CallStream has it): `body[0, bodyBytes)` held, `bodyCharged` bytes charged. */
export interface BodyHolder {
  body: Buffer | null;
  bodyBytes: number;
  bodyCharged: number;
  /** Progress check of a partial body: `bodyBytes` at the last check, and when it was (performance.now(), ms). */
  bodyMark?: number;
  bodyMarkAt?: number;
}

/**
 * A partial body must gain at least this many bytes (or all it still lacks) in each period of
 * TransportLimits.requestBodyStallMs; otherwise its call is answered RESOURCE_EXHAUSTED and its
 * charge returned. 64 KiB per 10 s: a client on any link our windows allow is far above it.
 */
export const REQUEST_BODY_MIN_PROGRESS_BYTES = 64 * 1024;

/**
 * The request bodies of one connection, against two budgets: `maxConnectionBytes` for this
 * connection and `processBudget` shared by every connection of the process. A body that arrives
 * whole in one frame is used in place (the call runs at once); otherwise one buffer per stream
 * holds it, grown geometrically as bytes arrive (5 bytes until the length prefix is known, then
 * twice the capacity or what arrived, at most the declared size), its capacity charged to both
 * budgets: what a body holds is at most twice what its client sent, never a declared size alone.
 * A connection holds at most `maxConnectionBytes` (half the process's budget by default). A partial
 * body held by time: one that does not gain REQUEST_BODY_MIN_PROGRESS_BYTES (or complete) within
 * `stallMs` is reported to `onStalled` (checked every stallMs / 2, so between stallMs and 1.5 ×
 * stallMs after its last progress; one unref'd interval per connection, only while partial bodies exist).
 */
export class RequestBodies {
  private readonly maxMessageBytes: number;
  private readonly maxConnectionBytes: number;
  private readonly processBudget: ByteBudget;
  /** Capacity of the bodies held by this connection, bytes. */
  private buffered = 0;
  private readonly stallMs: number;
  private readonly onStalled: (holder: BodyHolder) => void;
  /** Bodies held in a buffer of their own (charged), checked for progress. */
  private readonly partial = new Set<BodyHolder>();
  private sweeper?: NodeJS.Timeout;

  constructor(options: { maxMessageBytes: number; maxConnectionBytes: number; processBudget: ByteBudget; stallMs?: number; onStalled?: (holder: BodyHolder) => void }) {
    this.maxMessageBytes = options.maxMessageBytes;
    this.maxConnectionBytes = options.maxConnectionBytes;
    this.processBudget = options.processBudget;
    this.stallMs = options.stallMs ?? 0;
    this.onStalled = options.onStalled ?? (() => {});
  }

  /** Bytes charged by this connection's bodies. */
  get bufferedBytes(): number {
    return this.buffered;
  }

  /**
   * Adds the request bytes `buf[start, end)` to the stream's body (`last`: the frame ends the
   * stream). Returns undefined when held, or the RESOURCE_EXHAUSTED message the call must be
   * answered with (message too large, a budget exhausted); nothing is then held for it.
   */
  append(stream: BodyHolder, buf: Buffer, start: number, end: number, last: boolean): string | undefined {
    const max = this.maxMessageBytes;
    const total = stream.bodyBytes + (end - start);
    if (total > max + 5) return messageTooLarge(total - 5, max);
    if (stream.bodyBytes === 0 && last) {
      stream.body = buf.subarray(start, end);
      stream.bodyBytes = total;
      return undefined;
    }
    let body = stream.body;
    if (!body || body.length < total) {
      let capacity = 5;
      if (total >= 5) {
        const declared = declaredLength(body, stream.bodyBytes, buf, start);
        if (declared > max) return messageTooLarge(declared, max);
        // More bytes than declared (a second message): held up to the limit, refused at END_STREAM.
        const ceiling = declared + 5 >= total ? declared + 5 : max + 5;
        capacity = Math.min(ceiling, Math.max(total, 2 * (body?.length ?? 0)));
      }
      const delta = capacity - stream.bodyCharged;
      if (this.buffered + delta > this.maxConnectionBytes || !this.processBudget.tryCharge(delta)) {
        return `request data buffered by the server exceeds its limit (${this.maxConnectionBytes} bytes per connection, ${this.processBudget.limit} per process)`;
      }
      this.buffered += delta;
      stream.bodyCharged = capacity;
      const grown = Buffer.allocUnsafeSlow(capacity);
      if (body) body.copy(grown, 0, 0, stream.bodyBytes);
      stream.body = body = grown;
    }
    buf.copy(body, stream.bodyBytes, start, end);
    stream.bodyBytes = total;
    if (this.stallMs > 0 && !this.partial.has(stream)) this.watch(stream);
    return undefined;
  }

  private watch(stream: BodyHolder): void {
    stream.bodyMark = stream.bodyBytes;
    stream.bodyMarkAt = performance.now();
    this.partial.add(stream);
    if (!this.sweeper) {
      this.sweeper = setInterval(this.sweep, this.stallMs / 2);
      this.sweeper.unref();
    }
  }

  /** Reports the partial bodies that gained too little in their last period (each is dropped by the owner). */
  private readonly sweep = () => {
    const now = performance.now();
    const stalled: BodyHolder[] = [];
    for (const s of this.partial) {
      if (now - s.bodyMarkAt! < this.stallMs) continue;
      // What it still lacks of its declared message (more than declared: it must end, so the full minimum).
      const lacking = s.bodyBytes < 5 ? 5 - s.bodyBytes : s.body!.readUInt32BE(1) + 5 - s.bodyBytes;
      const needed = lacking > 0 ? Math.min(REQUEST_BODY_MIN_PROGRESS_BYTES, lacking) : REQUEST_BODY_MIN_PROGRESS_BYTES;
      if (s.bodyBytes - s.bodyMark! < needed) stalled.push(s);
      s.bodyMark = s.bodyBytes;
      s.bodyMarkAt = now;
    }
    for (const s of stalled) {
      this.onStalled(s);
      this.drop(s);
    }
  };

  /** The body is complete (its call waits to start): no more progress checks, its charge kept until take() or drop(). */
  settle(stream: BodyHolder): void {
    if (this.partial.delete(stream) && this.partial.size === 0) this.stop();
  }

  /** Stops the progress checks (the connection closed). */
  stop(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    this.partial.clear();
  }

  /** The body received (empty when none), and the stream's charge returned. */
  take(stream: BodyHolder): Buffer {
    const held = stream.body;
    const body = !held ? EMPTY : held.length === stream.bodyBytes ? held : held.subarray(0, stream.bodyBytes);
    this.drop(stream);
    return body;
  }

  /** Drops the stream's body and returns its charge. Idempotent. */
  drop(stream: BodyHolder): void {
    if (this.partial.delete(stream) && this.partial.size === 0) this.stop();
    stream.body = null;
    stream.bodyBytes = 0;
    if (stream.bodyCharged) {
      this.buffered -= stream.bodyCharged;
      this.processBudget.release(stream.bodyCharged);
      stream.bodyCharged = 0;
    }
  }
}

/** The message length prefix once at least 5 body bytes are known: from the body held so far and the frame being added. */
function declaredLength(body: Buffer | null, held: number, buf: Buffer, start: number): number {
  const head = Buffer.allocUnsafe(5);
  for (let i = 0; i < 5; i++) head[i] = i < held ? body![i] : buf[start + i - held];
  return head.readUInt32BE(1);
}

const EMPTY = Buffer.alloc(0);
