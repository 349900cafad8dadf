import { Code, CsiProxyError } from "../errors.ts";
import { abortError } from "./stop-if-aborted.ts";
import { callSignal, runCollectingOutliving, type Outliving } from "./call-scope.ts";

/** What a call says about the operation it runs under a lock (for the refusals of later calls). */
export interface LockOptions {
  /** The operation, for messages: `FormatVolume of volume \\?\Volume{…}\`. Default: the key. */
  what?: string;
  /** How long the caller wants it: aborting it while waiting leaves the queue. Default: the call's ({@link callSignal}). */
  signal?: AbortSignal;
}

/**
 * Serialises async work per key (the operation lock of a disk): calls with the same key run one
 * after another in call order; calls with different keys run concurrently. A failing call does not
 * block the ones queued after it. Keys with nothing queued are forgotten, so the map never grows with
 * idle keys. The lock belongs to the call and to the host work it started:
 * - a call whose signal aborts while it waits leaves the queue and rejects with the signal's code
 *   (DeadlineExceeded/Canceled) saying nothing was done; `fn` never runs for it (nor when the
 *   signal aborted before the lock was granted);
 * - work `fn` leaves running after it settled (call-scope.ts {@link Outliving}: a child that did not
 *   exit after SIGKILL, a storage job) keeps the key held until it has ended; meanwhile every call
 *   waiting for or asking for that key is refused at once with Aborted naming that work, what it
 *   belonged to and since when — never queued behind it, never run while it goes on.
 */
export interface KeyedMutex {
  /** Runs `fn` once every earlier call with the same key has settled; resolves or rejects as `fn` does. */
  run<T>(key: string, fn: () => Promise<T>, options?: LockOptions): Promise<T>;
  /** Runs `fn` holding every key in `keys` (acquired in sorted order, so two multi-key calls cannot deadlock). */
  runAll<T>(keys: readonly string[], fn: () => Promise<T>, options?: LockOptions): Promise<T>;
  /** Keys currently held or waited for (for tests and diagnostics). */
  readonly size: number;
}

interface Holder {
  what: string;
  since: Date;
  /** Set when its call settled while work of it was still running: the key is held until that work ended. */
  outliving?: { answeredAt: Date; work: Outliving[] };
}

interface Waiter {
  what: string;
  grant(): void;
  refuse(err: CsiProxyError): void;
}

interface KeyState {
  holder: Holder;
  waiters: Waiter[];
}

/** Aborted: the key is held by work whose caller was already answered. */
function heldByOutliving(key: string, what: string, holder: Holder): CsiProxyError {
  const o = holder.outliving!;
  const secs = ((Date.now() - o.answeredAt.getTime()) / 1000).toFixed(1);
  return new CsiProxyError(
    Code.Aborted,
    `cannot ${what}: an operation is pending on ${key}: ${holder.what} (started ${holder.since.toISOString()}) was answered ${secs} s ago ` +
      `but ${o.work.map((w) => w.description).join(", ")} is still running; nothing was done, retry once it has ended`,
  );
}

/** The signal's code (DeadlineExceeded/Canceled): `what` never started. */
function notStartedError(signal: AbortSignal, what: string, why: string): CsiProxyError {
  const err = abortError(signal);
  return new CsiProxyError(err.code, `${err.message}: ${what} was not started (${why}); nothing was done`, { cause: err });
}

export function createKeyedMutex(): KeyedMutex {
  const states = new Map<string, KeyState>();

  function release(key: string, state: KeyState): void {
    const next = state.waiters.shift();
    if (next) next.grant();
    else if (states.get(key) === state) states.delete(key);
  }

  /** Resolves holding `key`, or rejects (Aborted behind outliving work; the signal's code when it aborts first). */
  function acquire(key: string, what: string, signal: AbortSignal | undefined): Promise<KeyState> {
    const notStarted = (why: string) => notStartedError(signal!, what, why);
    if (signal?.aborted) return Promise.reject(notStarted("before it took the lock"));
    const state = states.get(key);
    if (!state) {
      const fresh: KeyState = { holder: { what, since: new Date() }, waiters: [] };
      states.set(key, fresh);
      return Promise.resolve(fresh);
    }
    if (state.holder.outliving) return Promise.reject(heldByOutliving(key, what, state.holder));
    return new Promise<KeyState>((resolve, reject) => {
      const onAbort = () => {
        const i = state.waiters.indexOf(waiter);
        if (i === -1) return;
        state.waiters.splice(i, 1);
        reject(notStarted(`it was waiting for ${key}, held by ${state.holder.what} since ${state.holder.since.toISOString()}`));
      };
      const waiter: Waiter = {
        what,
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          state.holder = { what, since: new Date() };
          resolve(state);
        },
        refuse: (err) => {
          signal?.removeEventListener("abort", onAbort);
          reject(err);
        },
      };
      state.waiters.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Ends a holding: at once, or — when work is left running — once it has ended, refusing every waiter meanwhile. */
  function finish(key: string, state: KeyState, outliving: Outliving[]): void {
    if (outliving.length === 0) return release(key, state);
    state.holder.outliving = { answeredAt: new Date(), work: outliving };
    for (const w of state.waiters.splice(0)) w.refuse(heldByOutliving(key, w.what, state.holder));
    void Promise.all(outliving.map((w) => w.ended)).then(() => release(key, state));
  }

  async function runAll<T>(keys: readonly string[], fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
    const sorted = [...new Set(keys)].sort();
    const signal = options.signal ?? callSignal();
    const what = options.what ?? sorted.join(", ");
    const held: [string, KeyState][] = [];
    try {
      for (const key of sorted) held.push([key, await acquire(key, what, signal)]);
      if (signal?.aborted) throw notStartedError(signal, what, "its caller went away as it got the lock");
    } catch (e) {
      for (const [key, state] of held.reverse()) release(key, state);
      throw e;
    }
    const { outcome, outliving } = await runCollectingOutliving(fn);
    for (const [key, state] of held.reverse()) finish(key, state, outliving);
    if (outcome.status === "rejected") throw outcome.reason;
    return outcome.value;
  }

  return {
    run: (key, fn, options) => runAll([key], fn, options),
    runAll,
    get size() {
      return states.size;
    },
  };
}
