/**
 * The runner every Win32 call module (files.ts, volumes.ts, security.ts, tokens.ts) goes through:
 * the two DLLs' declarations (kernel32.ts, advapi32.ts) and the `io` limiter.
 *
 * An `io` declaration runs on koffi's worker threads (`fn.async`), never on the JS thread; at most
 * MAX_IO_CALLS run at once (they share libuv's thread pool with fs), a call waits at most
 * IO_QUEUE_TIMEOUT_MS for a slot (then Unavailable; io-limiter.ts). GetLastError is read in koffi's
 * completion callback, where koffi (≥ 3.3) has restored the worker thread's last error onto the JS
 * thread. Other kinds are called directly (binding.ts); their last error is read right after.
 *
 * Failures throw {@link Win32Error} (win32-errors.ts) in the call modules.
 */
import { CsiProxyError, Code } from "../errors.ts";
import { advapi32, type Advapi32 } from "./advapi32.ts";
import type { IoFn } from "./binding.ts";
import { IoLimiter } from "./io-limiter.ts";
import { kernel32, type Kernel32 } from "./kernel32.ts";
import type { Koffi } from "../util/koffi-loader.ts";

export type { Handle } from "./kernel32.ts";

/** True for the handle values CreateFileW/ReOpenFile/FindFirstFileW return on failure (INVALID_HANDLE_VALUE, NULL). */
export const invalidHandle = (h: number | bigint): boolean => Number(h) === -1 || Number(h) === 0;

/** Decodes a NUL-terminated UTF-16LE string from a buffer. */
export function utf16z(buf: Buffer): string {
  const s = buf.toString("utf16le");
  const nul = s.indexOf("\0");
  return nul === -1 ? s : s.slice(0, nul);
}

export interface IoOptions {
  maxIoCalls?: number;
  ioQueueTimeoutMs?: number;
}

export class Win32Calls {
  readonly koffi: Koffi;
  readonly k32: Kernel32;
  readonly adv: Advapi32;
  readonly #limiter: IoLimiter;

  constructor(koffi: Koffi, options: IoOptions = {}) {
    this.koffi = koffi;
    this.k32 = kernel32(koffi);
    this.adv = advapi32(koffi);
    this.#limiter = new IoLimiter(options);
  }

  /** GetLastError, right after a synchronous call. */
  lastError(): number {
    return this.k32.GetLastError();
  }

  /**
   * An `io` declaration on a koffi worker thread, under the limiter: resolves with its result and
   * the thread's last error (read inside koffi's completion callback, where koffi has restored it).
   */
  async io<A extends unknown[], R>(fn: IoFn<A, R>, ...args: A): Promise<{ r: R; err: number }> {
    if (fn.kind !== "io") throw new CsiProxyError(Code.Internal, `${fn.fnName} is not an io declaration`);
    await this.#limiter.acquire(fn.fnName);
    try {
      return await new Promise((resolve, reject) => {
        fn.async(...args, (e: unknown, r: R) => {
          const err = this.k32.GetLastError();
          if (e) reject(e);
          else resolve({ r, err });
        });
      });
    } finally {
      this.#limiter.release();
    }
  }

  /** LocalFree of memory Windows allocated for us (no-op for null). */
  localFree(p: unknown): void {
    if (p) this.k32.LocalFree(p);
  }
}
