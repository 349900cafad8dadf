/**
 * How a Win32 function is declared through koffi, typed: one binding module per DLL
 * (kernel32.ts, advapi32.ts) declares each function once per koffi instance with its kind, and the
 * call modules (files.ts, volumes.ts, security.ts, tokens.ts, scm.ts, service.ts) use those
 * declarations. The kinds (checked by test/windows/win32-layout.test.ts):
 * - `io`: the call touches a path, a file or a device handle, or may ask a domain controller, so it
 *   can block for as long as a dead SMB server or a stuck disk does. It has no synchronous call
 *   signature: it runs only through {@link Win32Calls.io} (win32-calls.ts), on koffi's worker threads,
 *   bounded by io-limiter.ts.
 * - `mem`: memory-only or local kernel-object calls that answer at once (SDDL conversion, the
 *   process token, our own pipe's DACL); synchronous on the JS thread.
 * - `local`: a metadata query of a path on a fixed local drive, synchronous on the JS thread; only
 *   host/windows/local-lookup.ts calls it, under that module's bounds.
 * - `scm`: a Service Control Manager client call (scm.ts), synchronous: the SCM is a local RPC
 *   server that answers at once, or after at most the SCM's own 30 s bound.
 * - `service`: service mode (service.ts): the dispatcher runs on a koffi worker thread, the others
 *   on the SCM's callbacks.
 * - `lock`: the node-wide lock files in the state directory (state/node-locks.ts): opened, locked
 *   with LOCKFILE_FAIL_IMMEDIATELY (never waits), unlocked and closed synchronously.
 */
import type { Koffi } from "../util/koffi-loader.ts";

export type DeclKind = "io" | "mem" | "local" | "scm" | "service" | "lock";

/** A koffi-declared function of kind `io`: only its asynchronous form, `(...args, callback)`. */
export interface IoFn<A extends unknown[], R> {
  readonly kind: "io";
  readonly fnName: string;
  /** koffi's asynchronous call; the callback runs on the JS thread with the worker's last error restored. */
  async(...args: [...A, (err: unknown, result: R) => void]): void;
}

/** A koffi-declared function called synchronously on the JS thread (kinds other than `io`). */
export interface SyncFn<A extends unknown[], R, K extends Exclude<DeclKind, "io"> = Exclude<DeclKind, "io">> {
  (...args: A): R;
  readonly kind: K;
  readonly fnName: string;
  /** koffi's asynchronous form (used by service mode's dispatcher only). */
  async(...args: [...A, (err: unknown, result: R) => void]): void;
}

/** A loaded DLL. */
export type Library = ReturnType<Koffi["load"]>;

/** The name of the function a koffi prototype declares (`uint32_t __stdcall GetLastError()` → GetLastError). */
export function protoName(proto: string): string {
  const m = /(\w+)\s*\(/.exec(proto);
  if (!m) throw new Error(`unparsable prototype ${proto}`);
  return m[1];
}

/** Declares an `io` function of `lib`. */
export function io<A extends unknown[], R>(lib: Library, proto: string): IoFn<A, R> {
  return Object.assign(lib.func(proto) as unknown as object, { kind: "io" as const, fnName: protoName(proto) }) as unknown as IoFn<A, R>;
}

/** Declares a synchronous function of `lib` of kind `kind`. */
export function sync<A extends unknown[], R, K extends Exclude<DeclKind, "io">>(kind: K, lib: Library, proto: string): SyncFn<A, R, K> {
  return Object.assign(lib.func(proto) as unknown as object, { kind, fnName: protoName(proto) }) as unknown as SyncFn<A, R, K>;
}

/** `build(koffi)` once per koffi instance (a DLL's declarations are made once and shared). */
export function oncePerKoffi<T>(build: (koffi: Koffi) => T): (koffi: Koffi) => T {
  const cache = new WeakMap<object, T>();
  return (koffi) => {
    let v = cache.get(koffi);
    if (v === undefined) cache.set(koffi, (v = build(koffi)));
    return v;
  };
}
