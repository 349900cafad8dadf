import type { CallContext } from "../api/handlers.ts";
import type { CsiProxyError } from "../errors.ts";
import type { UnaryMethod } from "./grpc-service.ts";

/**
 * One call (one HTTP/2 stream) of a GrpcConnection; also its handler's CallContext (the signal is
 * made on first use). The request body is held in `body[0, bodyBytes)`; `bodyCharged` is the
 * capacity charged to the connection's and the process's request-data budgets.
 */
export class CallStream implements CallContext {
  readonly id: number;
  /** Our send window for this stream (may go negative after the client lowers SETTINGS_INITIAL_WINDOW_SIZE). */
  sendWindow: number;
  method?: UnaryMethod;
  encoding?: "gzip" | "deflate";
  body: Buffer | null = null;
  bodyBytes = 0;
  bodyCharged = 0;
  bodyMark = 0;
  bodyMarkAt = 0;
  /** The client ended its side (END_STREAM), or we stopped listening to it. */
  remoteClosed = false;
  /** Answered, failed, timed out or cancelled: nothing more is sent on it. */
  answered = false;
  /** In the connection's stream table (open or half-closed). */
  open = true;
  /** Its handler (or the decompression before it) is running. */
  running = false;
  timer?: NodeJS.Timeout;
  /** Response bytes waiting for flow-control window, and how many of them were sent. */
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

  /** The reason the call was aborted with (deadline or cancel), if it was. */
  get abortedWith(): CsiProxyError | undefined {
    return this.abortReason;
  }

  abort(reason: CsiProxyError): void {
    if (this.abortReason) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }
}
