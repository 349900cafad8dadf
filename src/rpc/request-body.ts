import type { ByteBudget } from "./byte-budget.ts";
import { messageTooLarge } from "./transport-limits.ts";

/** The request-body state a stream carries (CallStream has it): `body[0, bodyBytes)` held, `bodyCharged` bytes charged. */
export interface BodyHolder {
  body: Buffer | null;
  bodyBytes: number;
  bodyCharged: number;
}

/**
 * The request bodies of one connection, against two budgets: `maxConnectionBytes` for this
 * connection and `processBudget` shared by every connection of the process. A body that arrives
 * whole in one frame is used in place (the call runs at once); otherwise one buffer per stream
 * holds it: 5 bytes until the length prefix is known, then the declared message size (no growth
 * copies; pages are touched only as bytes arrive), charged in full to both budgets.
 */
export class RequestBodies {
  private readonly maxMessageBytes: number;
  private readonly maxConnectionBytes: number;
  private readonly processBudget: ByteBudget;
  /** Capacity of the bodies held by this connection, bytes. */
  private buffered = 0;

  constructor(options: { maxMessageBytes: number; maxConnectionBytes: number; processBudget: ByteBudget }) {
    this.maxMessageBytes = options.maxMessageBytes;
    this.maxConnectionBytes = options.maxConnectionBytes;
    this.processBudget = options.processBudget;
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
        capacity = declared + 5 >= total ? declared + 5 : max + 5;
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
    return undefined;
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
