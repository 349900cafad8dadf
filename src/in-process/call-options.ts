import { CsiProxyError, Code } from "../errors.ts";

/** Per-call options: `signal` cancels the call's work (the call answers once that work stopped). */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Throws InvalidArgument unless `options` is undefined or `{ signal?: AbortSignal }`. */
export function checkCallOptions(options: unknown): AbortSignal | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new CsiProxyError(Code.InvalidArgument, `options: expected an object { signal?: AbortSignal }, got ${options === null ? "null" : typeof options}`);
  }
  for (const key of Object.keys(options)) if (key !== "signal") throw new CsiProxyError(Code.InvalidArgument, `options.${key}: unknown option (options: signal)`);
  const { signal } = options as { signal?: unknown };
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new CsiProxyError(Code.InvalidArgument, "options.signal: expected an AbortSignal");
  return signal;
}

