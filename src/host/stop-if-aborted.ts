import { Code, CsiProxyError } from "../errors.ts";

/**
 * The coded error an aborted signal stands for: its reason when that is a CsiProxyError (the RPC
 * layer aborts with DeadlineExceeded or Cancelled), DeadlineExceeded for a timeout
 * (`AbortSignal.timeout`), Cancelled otherwise.
 */
export function abortError(signal: AbortSignal): CsiProxyError {
  const r: unknown = signal.reason;
  if (r instanceof CsiProxyError) return r;
  if ((r as Error | undefined)?.name === "TimeoutError") return new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded");
  return new CsiProxyError(Code.Canceled, "cancelled");
}

/** Throws {@link abortError} when `signal` is aborted; nothing otherwise (also without a signal). */
export function stopIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError(signal);
}
