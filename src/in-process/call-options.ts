import { CsiProxyError, Code } from "../errors.ts";

/** Per-call options: `signal` cancels the call's work (the call answers once that work stopped). */
export interface CallOptions {
  signal?: AbortSignal;
}

/** AbortSignal.prototype's `aborted` getter, called only with an explicit receiver (Reflect.apply). */
const abortedGetter = (Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted") as { get: (this: unknown) => boolean }).get;

/**
 * True for a real AbortSignal, by brand: AbortSignal.prototype's `aborted` getter runs only on one
 * (an object merely inheriting from AbortSignal.prototype passes `instanceof` but is refused here).
 */
export function isAbortSignal(value: unknown): value is AbortSignal {
  if (typeof value !== "object" || value === null) return false;
  try {
    Reflect.apply(abortedGetter, value, []);
    return true;
  } catch {
    return false;
  }
}

/** Throws InvalidArgument unless `options` is undefined or `{ signal?: AbortSignal }` (a real one, by brand). */
export function checkCallOptions(options: unknown): AbortSignal | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new CsiProxyError(Code.InvalidArgument, `options: expected an object { signal?: AbortSignal }, got ${options === null ? "null" : typeof options}`);
  }
  let signal: unknown;
  try {
    for (const key of Object.keys(options)) if (key !== "signal") throw new CsiProxyError(Code.InvalidArgument, `options.${key.slice(0, 100)}: unknown option (options: signal)`);
    signal = (options as { signal?: unknown }).signal;
  } catch (e) {
    if (e instanceof CsiProxyError) throw e;
    throw new CsiProxyError(Code.InvalidArgument, "options: expected a plain object { signal?: AbortSignal }, got one that cannot be read");
  }
  if (signal !== undefined && !isAbortSignal(signal)) throw new CsiProxyError(Code.InvalidArgument, "options.signal: expected an AbortSignal");
  return signal;
}
