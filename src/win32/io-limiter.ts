/**
 * The bound on concurrent `io` Win32 calls (win32-calls.ts): at most {@link MAX_IO_CALLS} run at once,
 * because they share libuv's thread pool with Node's fs; a call that finds every slot held waits at
 * most {@link IO_QUEUE_TIMEOUT_MS}, then fails Unavailable. Slots are granted in arrival order.
 */
import { CsiProxyError, Code } from "../errors.ts";

/** At most this many `io` calls run at once (libuv's pool has 4 threads, also used by fs). */
export const MAX_IO_CALLS = 2;
/** How long an `io` call waits for a slot while others are held, in ms (then Unavailable). */
export const IO_QUEUE_TIMEOUT_MS = 30_000;

export class IoLimiter {
  #running = 0;
  readonly #waiting: (() => void)[] = [];
  readonly #maxIo: number;
  readonly #ioQueueTimeoutMs: number;

  constructor(options: { maxIoCalls?: number; ioQueueTimeoutMs?: number } = {}) {
    this.#maxIo = options.maxIoCalls ?? MAX_IO_CALLS;
    this.#ioQueueTimeoutMs = options.ioQueueTimeoutMs ?? IO_QUEUE_TIMEOUT_MS;
  }

  /**
   * Waits for a slot for the call `name`; Unavailable (naming it) after the queue timeout. Every
   * resolved acquire must be matched by one {@link release}.
   */
  acquire(name: string): Promise<void> {
    if (this.#running < this.#maxIo) {
      this.#running++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        clearTimeout(timer);
        this.#running++;
        resolve();
      };
      const timer = setTimeout(() => {
        const i = this.#waiting.indexOf(grant);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(new CsiProxyError(Code.Unavailable, `${name}: ${this.#maxIo} Win32 path or device calls have not returned for ${this.#ioQueueTimeoutMs / 1000} s (a path or device is not answering)`));
      }, this.#ioQueueTimeoutMs);
      this.#waiting.push(grant);
    });
  }

  /** Gives a slot back; the longest-waiting call gets it. */
  release(): void {
    this.#running--;
    this.#waiting.shift()?.();
  }
}
