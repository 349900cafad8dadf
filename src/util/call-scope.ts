/**
 * The call a piece of host work belongs to. A group service runs each of its methods in the scope of
 * the call ({@link runInCall}, applied to a whole service by {@link inCallScope}); inside it every host
 * step that can take long finds the call's AbortSignal without each layer passing it on:
 * `runCommand` (host/exec/run-command.ts) and `PowerShellPool.call` (host/windows/powershell-pool.ts)
 * use {@link callSignal} when their options name no signal, and the operation lock
 * (util/keyed-mutex.ts) waits only as long as the call is wanted. Work that cannot be ended when the
 * call is aborted — a child still alive after SIGKILL and a bound, a storage job handed to Windows'
 * storage service — is recorded with {@link noteOutliving}; the operation lock the work runs under
 * stays held until it has ended, so no other call touches the same device meanwhile.
 * Outside a scope (start-up sweeps, tests calling a host directly) there is no signal and work runs
 * to its own bounds.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { CsiProxyError, Code } from "../errors.ts";

/** What a service method takes besides its request (every method of every group, last argument). */
export interface CallOptions {
  /** Aborted when the call's deadline passes, the client cancels or the connection is lost. Absent: the work runs to its own bounds. */
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

/**
 * Throws InvalidArgument unless `options` is undefined or `{ signal?: AbortSignal }` with a real
 * signal, by brand (the public API's check of a caller's options); never a TypeError, whatever the
 * object (a proxy whose keys cannot be listed is refused as unreadable).
 */
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

/** Host work that goes on after its call was answered because it could not be ended. */
export interface Outliving {
  /** For messages: `mkfs.ext4 -q /dev/loop3p1 (pid 4242)`, `CIM volume.format of \\?\Volume{…}\`. */
  description: string;
  /** Settles once the work has ended (the child exited, the volume is seen idle). Never rejects. */
  ended: Promise<void>;
}

interface Scope {
  readonly signal: AbortSignal | undefined;
  /** The call's identity, the same in the scopes nested in it ({@link runCollectingOutliving}): {@link callKey}. */
  readonly call: object;
  readonly outliving: Outliving[];
  /** Descriptors of the device locks the call holds (node-locks.ts), handed to the tools that write the device. */
  readonly lockFds?: readonly number[];
}

const scopes = new AsyncLocalStorage<Scope>();

/** Runs `fn` in a scope of its own carrying `options.signal` (a nested call gets a new scope; its outliving work is its own). */
export function runInCall<T>(options: CallOptions | undefined, fn: () => Promise<T>): Promise<T> {
  return scopes.run({ signal: options?.signal, call: {}, outliving: [] }, fn);
}

/** The signal of the call this code runs for, or undefined outside a call. */
export function callSignal(): AbortSignal | undefined {
  return scopes.getStore()?.signal;
}

/**
 * An object that stands for the call this code runs for (the same in scopes nested in it, e.g. under
 * an operation lock), to key what a host keeps for one call only (a WeakMap lets it go with the
 * call); undefined outside a call.
 */
export function callKey(): object | undefined {
  return scopes.getStore()?.call;
}

/** Records work of the current call that goes on after its answer (nothing outside a scope). */
export function noteOutliving(work: Outliving): void {
  scopes.getStore()?.outliving.push(work);
}

/**
 * {@link noteOutliving} for the call this runs for now, to use later from code that runs outside
 * its async context (an AbortSignal's listeners run in the context of whoever aborted it).
 */
export function outlivingRecorder(): (work: Outliving) => void {
  const scope = scopes.getStore();
  return (work) => scope?.outliving.push(work);
}

/** The device lock descriptors the current call holds (none outside a call or without node-wide locks). */
export function deviceLockFds(): readonly number[] {
  return scopes.getStore()?.lockFds ?? [];
}

/**
 * Runs `fn` in a scope of its own with the current signal; resolves with its outcome and the work it
 * left running. `lockFds`: device lock descriptors `fn` holds, added to those of the current scope.
 */
export async function runCollectingOutliving<T>(fn: () => Promise<T>, lockFds: readonly number[] = []): Promise<{ outcome: PromiseSettledResult<T>; outliving: Outliving[] }> {
  const scope: Scope = { signal: callSignal(), call: callKey() ?? {}, outliving: [], lockFds: [...deviceLockFds(), ...lockFds] };
  const outcome = await scopes.run(scope, () => fn().then((value) => ({ status: "fulfilled" as const, value }), (reason: unknown) => ({ status: "rejected" as const, reason })));
  return { outcome, outliving: scope.outliving };
}

/**
 * A service whose every method runs in the scope of its call: the method's last argument is its
 * {@link CallOptions} (methods without a request take `(req?, options?)`). Methods are wrapped as they
 * are, so the service keeps its type.
 */
export function inCallScope<S extends object>(service: S): S {
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(service)) {
    wrapped[name] =
      typeof method === "function"
        ? (req: unknown, options?: CallOptions) => runInCall(options, () => (method as (r: unknown, o?: CallOptions) => Promise<unknown>).call(service, req, options))
        : method;
  }
  return wrapped as S;
}

/** The request of a service method that takes none (it still takes {@link CallOptions} after it). */
export type NoRequest = Record<string, never>;
