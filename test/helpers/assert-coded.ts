/**
 * The one assertion for "this call fails with that code": services' CsiProxyErrors (src/errors.ts)
 * and the clients' errors of calls through the daemon (gRPC / Connect, code numbered as on the wire)
 * alike.
 */
import assert from "node:assert/strict";
import { CsiProxyError } from "../../src/errors.ts";

/** What a coded rejection carries; a Connect client error also has the message without its `[code]` prefix. */
export interface CodedError {
  code?: number;
  message: string;
  rawMessage?: string;
}

/**
 * Awaits `promise`, which must reject with `code`; returns the error. `message`, when given, is
 * checked against the error's message (`rawMessage` when the client error has one): a RegExp must
 * match it, a string must equal it. With `options.instanceOf`, the rejection must also be an
 * instance of that class.
 */
export async function rejectsWithCode<E extends CodedError = CodedError>(
  promise: Promise<unknown>,
  code: number,
  message?: RegExp | string,
  options: { instanceOf?: abstract new (...args: never[]) => E } = {},
): Promise<E> {
  let caught: E | undefined;
  await assert.rejects(promise, (err: unknown) => {
    if (options.instanceOf) assert.ok(err instanceof options.instanceOf, `expected ${options.instanceOf.name}, got ${String(err)}`);
    const e = err as E;
    const text = e.rawMessage ?? e.message ?? String(err);
    assert.equal(e.code, code, `expected code ${code}, got ${e.code}: ${text}`);
    if (typeof message === "string") assert.equal(text, message);
    else if (message) assert.match(text, message);
    caught = e;
    return true;
  });
  return caught!;
}

/** rejectsWithCode for service calls: the rejection must be a CsiProxyError with `code`. */
export const rejectsWithCsiProxyError = (promise: Promise<unknown>, code: number, message?: RegExp | string): Promise<CsiProxyError> =>
  rejectsWithCode(promise, code, message, { instanceOf: CsiProxyError });
