/**
 * Admission of host operations on request paths, per mount, so that a mount whose syscalls never
 * return (a dead NFS/SMB server, a stopped FUSE daemon) cannot take the threads every other call needs.
 *
 * Node's async fs calls, koffi's `.async` calls and zlib all run on libuv's one thread pool
 * (src/boot/thread-pool-size.ts). A syscall blocked in the kernel cannot be cancelled from JavaScript: its
 * thread is lost until the filesystem answers. So an operation passed to {@link MountGate.run} is
 * admitted only while
 * - fewer than `perMount` operations under the same mount are running (the rest wait in a bounded
 *   per-mount queue, in arrival order), and
 * - fewer than `total` gated operations run in all (`total` is below the pool's size: the difference
 *   is reserved for everything not gated — state files, /proc and /sys reads, libblkid, zlib).
 * At most `perMount` threads can thus be blocked by one dead mount, `total` by all of them together.
 *
 * Watchdog: when an operation has run for `notRespondingAfterMs` and nothing under its mount has
 * answered since it started, the mount is "not responding": its waiting calls and every later call
 * under it fail at once with Unavailable, naming the mount and how long it has not answered. The
 * mount answers again when any operation under it returns, or the probe does: one `statfs` of the
 * mount point (which the filesystem itself must answer, never the kernel's caches), started when the
 * mount is marked and again on a later call once the previous probe returned, run in a free slot of
 * the mount (so it never adds a thread beyond `perMount`). A call waiting for a slot waits at most
 * `notRespondingAfterMs`, then fails Unavailable too (the slots are held by operations that have not
 * returned: one path that hangs on an otherwise answering mount).
 *
 * Operations still running after `notRespondingAfterMs` are "blocked": counted per mount
 * ({@link MountGate.blocked}, the Prometheus gauge of src/metrics/blocked-host-operations.ts) and
 * bounded by `perMount` per mount and `total` overall.
 */
import { Code, CsiProxyError } from "../errors.ts";
import { reachedMount } from "./reached-mount.ts";

export interface MountGateOptions {
  /** The mount point of the mount `path` lies on (lexically: the longest mount point prefix). */
  mountOf(path: string): Promise<string>;
  /**
   * When given, a path's symbolic links are followed component by component (reached-mount.ts) and
   * the call counts against the mount it reaches, each component's look-up against the mount it lies
   * on; without it, `mountOf(path)` is the call's mount. A link's target when `path` is a link, null
   * when not.
   */
  readLink?(path: string): Promise<string | null>;
  /** A kept answer of `readLink` for `path` (undefined when none): taken without a look-up or a slot. */
  knownLink?(path: string): string | null | undefined;
  /** Asks the filesystem mounted at `mountPoint` something it must answer itself (statfs). */
  probe(mountPoint: string): Promise<unknown>;
  /** Operations running at once under one mount (probe included). Default {@link DEFAULT_PER_MOUNT}. */
  perMount?: number;
  /** Gated operations running at once in all. Default: three quarters of libuv's pool. */
  total?: number;
  /** Default {@link NOT_RESPONDING_AFTER_MS}. */
  notRespondingAfterMs?: number;
  /** Calls waiting for a slot per mount; more fail Unavailable at once. Default {@link MAX_WAITING_PER_MOUNT}. */
  maxWaitingPerMount?: number;
}

export const DEFAULT_PER_MOUNT = 3;
export const NOT_RESPONDING_AFTER_MS = 5_000;
export const MAX_WAITING_PER_MOUNT = 1024;

/** Three quarters of libuv's pool (UV_THREADPOOL_SIZE as this process started it), at least 1. */
export function defaultTotal(): number {
  const size = Number(process.env["UV_THREADPOOL_SIZE"] ?? 4);
  return Math.max(1, Math.floor(((Number.isFinite(size) && size > 0 ? Math.min(size, 1024) : 4) * 3) / 4));
}

interface Running {
  readonly started: number;
  timer: NodeJS.Timeout | undefined;
}

interface Waiter {
  start(): void;
  fail(err: Error): void;
}

interface MountState {
  readonly mountPoint: string;
  readonly running: Set<Running>;
  readonly waiting: Waiter[];
  /** When an operation under the mount last returned (ms, Date.now()). */
  lastAnswer: number;
  /** Set while the mount is not responding: since when it has not answered. */
  silentSince: number | undefined;
  probing: boolean;
}

export interface MountGate {
  /**
   * Runs `op` (host work on `path`) once admitted; rejects Unavailable when the mount is not
   * responding. `followLast: false`: `op` does not follow the path's last component (lstat, symlink),
   * so a link there counts against the mount it lies on, not the one it points into.
   */
  run<T>(path: string, op: () => Promise<T>, signal?: AbortSignal, options?: { followLast?: boolean }): Promise<T>;
  /**
   * Runs `op` under the key `key` itself (no path resolution): a whole disk's key (linux/block/device-gate.ts,
   * {@link DEVICE_KEY_PREFIX}), so device I/O shares this gate's slots, watchdog and `total` budget.
   */
  runKey<T>(key: string, op: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Per mount point: operations running longer than the watchdog's threshold. */
  blocked(): Map<string, number>;
  /** Mount points marked not responding now, with since when (ms). */
  notResponding(): Map<string, number>;
  /** Operations admitted and not yet returned, on every mount. */
  running(): number;
  /** How long (ms) the oldest operation running under `key` has gone without anything under `key` answering; 0 when none is waiting for an answer. */
  stalledMs(key: string): number;
}

export function createMountGate(options: MountGateOptions): MountGate {
  const perMount = options.perMount ?? DEFAULT_PER_MOUNT;
  const total = options.total ?? defaultTotal();
  const thresholdMs = options.notRespondingAfterMs ?? NOT_RESPONDING_AFTER_MS;
  const maxWaiting = options.maxWaitingPerMount ?? MAX_WAITING_PER_MOUNT;
  const mounts = new Map<string, MountState>();
  let runningTotal = 0;

  const stateOf = (mountPoint: string): MountState => {
    let s = mounts.get(mountPoint);
    if (s === undefined) {
      s = { mountPoint, running: new Set(), waiting: [], lastAnswer: 0, silentSince: undefined, probing: false };
      mounts.set(mountPoint, s);
    }
    return s;
  };

  const seconds = (ms: number) => (ms / 1000).toFixed(1);

  /** How a key is named in answers: a mount's filesystem, or a whole disk (linux/block/device-gate.ts). */
  const named = (key: string) => (key.startsWith(DEVICE_KEY_PREFIX) ? `disk ${key.slice(DEVICE_KEY_PREFIX.length)}` : `the filesystem mounted at ${key}`);

  const silentError = (s: MountState) =>
    new CsiProxyError(
      Code.Unavailable,
      `${named(s.mountPoint)} is not responding: it has not answered for ${seconds(Date.now() - s.silentSince!)} s ` +
        `(${s.running.size} host operation(s) on it have not returned); calls under it fail until it answers again`,
    );

  const hasSlot = (s: MountState) => s.running.size < perMount && runningTotal < total;

  /** Starts waiters that can run now: this mount's first, then any mount's (global slots freed). */
  const dispatch = (first: MountState | undefined) => {
    const order = first ? [first, ...[...mounts.values()].filter((m) => m !== first)] : [...mounts.values()];
    for (const s of order) {
      while (s.waiting.length > 0 && hasSlot(s)) s.waiting.shift()!.start();
      if (runningTotal >= total) return;
    }
    for (const s of order) forget(s);
  };

  /** Drops the record of an idle, answering mount (the table stays as small as the busy mounts). */
  const forget = (s: MountState) => {
    if (s.running.size === 0 && s.waiting.length === 0 && s.silentSince === undefined && !s.probing) mounts.delete(s.mountPoint);
  };

  const answered = (s: MountState) => {
    s.lastAnswer = Date.now();
    s.silentSince = undefined;
  };

  /** Runs `op` in a slot of `s` (the caller checked hasSlot), with the watchdog on it. */
  const occupy = <T>(s: MountState, op: () => Promise<T>): Promise<T> => {
    const r: Running = { started: Date.now(), timer: undefined };
    s.running.add(r);
    runningTotal++;
    r.timer = setTimeout(() => {
      r.timer = undefined;
      if (!s.running.has(r) || s.lastAnswer >= r.started || s.silentSince !== undefined) return;
      s.silentSince = r.started;
      for (const w of s.waiting.splice(0)) w.fail(silentError(s));
    }, thresholdMs);
    r.timer.unref();
    const release = () => {
      if (r.timer) clearTimeout(r.timer);
      s.running.delete(r);
      runningTotal--;
      answered(s);
      dispatch(s);
    };
    let p: Promise<T>;
    try {
      p = op();
    } catch (e) {
      p = Promise.reject(e);
    }
    return p.finally(release);
  };

  const startProbe = (s: MountState) => {
    if (s.probing || !hasSlot(s)) return;
    s.probing = true;
    void occupy(s, () => options.probe(s.mountPoint))
      .catch(() => {}) // an error is an answer too
      .finally(() => {
        s.probing = false;
        forget(s);
      });
  };

  const blockedNow = () => {
    const now = Date.now();
    const out = new Map<string, number>();
    for (const s of mounts.values()) {
      const n = [...s.running].filter((r) => now - r.started >= thresholdMs).length;
      if (n > 0) out.set(s.mountPoint, n);
    }
    return out;
  };

  /** The mount a call on `path` reaches: its links followed when the gate has `readLink`, else {@link MountGateOptions.mountOf}. */
  const mountOfCall = (path: string, signal?: AbortSignal, followLast = true): Promise<string> => {
    if (!options.readLink) return options.mountOf(path);
    return reachedMount(path, {
      mountOf: (p) => options.mountOf(p),
      readLink: (p) => options.readLink!(p),
      known: (p) => options.knownLink?.(p),
      isSilent: (m) => mounts.get(m)?.silentSince !== undefined,
      lookAt: (m, op) => admit(stateOf(m), op, signal),
    }, { followLast });
  };

  /** Runs `op` in a slot of `s` once one is free (in arrival order); Unavailable when `s` is not responding. */
  const admit = <T>(s: MountState, op: () => Promise<T>, signal?: AbortSignal): Promise<T> => {
    if (s.silentSince !== undefined) {
      startProbe(s);
      throw silentError(s);
    }
    if (s.waiting.length === 0 && hasSlot(s)) return occupy(s, op);
    if (s.waiting.length >= maxWaiting) {
      throw new CsiProxyError(Code.Unavailable, `${s.waiting.length} calls are already waiting for host operations under ${s.mountPoint}`);
    }
    return new Promise<T>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        const i = s.waiting.indexOf(w);
        if (i >= 0) s.waiting.splice(i, 1);
      };
      const w: Waiter = {
        start() {
          done();
          occupy(s, op).then(resolve, reject);
        },
        fail(err) {
          done();
          reject(err);
          forget(s);
        },
      };
      const onAbort = () => w.fail(signal!.reason instanceof Error ? signal!.reason : new CsiProxyError(Code.Canceled, "the call was cancelled"));
      const timer = setTimeout(() => {
        const oldest = Math.min(...[...s.running].map((r) => r.started));
        const why =
          s.running.size > 0
            ? `${s.running.size} running there, the oldest for ${seconds(Date.now() - oldest)} s`
            : `all ${total} threads for host path operations are held under other mounts (${[...blockedNow().keys()].join(", ") || "none blocked"})`;
        w.fail(new CsiProxyError(Code.Unavailable, `no host operation could start ${s.mountPoint.startsWith(DEVICE_KEY_PREFIX) ? `on ${named(s.mountPoint)}` : `under ${s.mountPoint}`} for ${seconds(thresholdMs)} s: ${why}`));
      }, thresholdMs);
      timer.unref();
      signal?.addEventListener("abort", onAbort, { once: true });
      s.waiting.push(w);
    });
  };

  return {
    async run<T>(path: string, op: () => Promise<T>, signal?: AbortSignal, runOptions: { followLast?: boolean } = {}): Promise<T> {
      signal?.throwIfAborted();
      return admit(stateOf(await mountOfCall(path, signal, runOptions.followLast !== false)), op, signal);
    },
    async runKey<T>(key: string, op: () => Promise<T>, signal?: AbortSignal): Promise<T> {
      signal?.throwIfAborted();
      return admit(stateOf(key), op, signal);
    },
    blocked: () => blockedNow(),
    running: () => runningTotal,
    stalledMs(key) {
      const s = mounts.get(key);
      if (!s || s.running.size === 0) return 0;
      const oldest = Math.min(...[...s.running].map((r) => r.started));
      return s.lastAnswer >= oldest ? 0 : Date.now() - oldest;
    },
    notResponding() {
      const out = new Map<string, number>();
      for (const s of mounts.values()) if (s.silentSince !== undefined) out.set(s.mountPoint, s.silentSince);
      return out;
    },
  };
}

/** The mount point of the longest mount whose point is `p` or a directory above it (lexically). */
export function mountPointOf(mountPoints: Iterable<string>, p: string, sep = "/"): string {
  let best = "";
  for (const m of mountPoints) {
    if (m.length <= best.length) continue;
    if (p === m || (p.startsWith(m) && (m.endsWith(sep) || p[m.length] === sep))) best = m;
  }
  return best === "" ? sep : best;
}

const gates = new Set<MountGate>();

/** Makes `gate` part of {@link blockedHostOperations} for the life of the process; returns it. */
export function registerMountGate(gate: MountGate): MountGate {
  gates.add(gate);
  return gate;
}

/** Operations admitted and not yet returned, over every registered gate (a stop checks what is left). */
export function runningHostOperations(): number {
  let n = 0;
  for (const g of gates) n += g.running();
  return n;
}

/** Gate keys of whole disks (linux/block/device-gate.ts) start with this; every other key is a mount point or root. */
export const DEVICE_KEY_PREFIX = "device:";

/** Blocked operations per mount point (`devices`: per whole disk's device node instead), summed over every registered gate. */
export function blockedHostOperations(options: { devices?: boolean } = {}): Map<string, number> {
  const out = new Map<string, number>();
  for (const g of gates) {
    for (const [m, n] of g.blocked()) {
      if (m.startsWith(DEVICE_KEY_PREFIX) !== (options.devices === true)) continue;
      const key = options.devices ? m.slice(DEVICE_KEY_PREFIX.length) : m;
      out.set(key, (out.get(key) ?? 0) + n);
    }
  }
  return out;
}
