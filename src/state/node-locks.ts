/**
 * Locks shared by every csi-proxy on one node — the daemon and in-process users (HostProcess
 * drivers calling the library) — so that node-global state (SMB reference counts, the iSCSI
 * initiator's database and mutual CHAP secret) and per-device operations are serialised across
 * processes, per operation, instead of refusing a second instance.
 *
 * A key is `<namespace>:<name>` (`disk:3`, `smb-root:\\srv\share`); a key without `:` is its own
 * namespace. A device key (`disk:<number>`) has a lock file of its own, `<dir>/disk.<number>.lock`
 * (one per disk number ever used: bounded by the node's devices), so a device held by a long step
 * locks no other disk. Any other key maps to `<dir>/<namespace>.<stripe>.lock`, the stripe being a
 * hash of the name modulo {@link STRIPES} (a key without a name has one file): at most STRIPES
 * files per namespace. Files are created on first use (0600 on Linux; inheriting the lock
 * directory's protected DACL on Windows) and never deleted (deleting a lock file races with its next
 * user). Two keys of one stripe serialise each other, in-process and across processes.
 *
 * Holding: the in-process queue of that stripe first (createKeyedMutex), then the file lock —
 * Linux flock(2) LOCK_EX on a descriptor of its own; Windows LockFileEx on byte 0 of a handle of its
 * own — polled with LOCK_NB / LOCKFILE_FAIL_IMMEDIATELY (2 ms doubling to 50 ms between tries), so
 * a wait never blocks the event loop or a thread. The kernel drops the lock when its holder exits
 * or dies; a live holder is waited for as long as it holds (as in-process waiters wait). Several
 * keys are taken in sorted stripe order (no deadlock between multi-key calls). Released when `fn`
 * settles, by closing the descriptor (never LOCK_UN) — or, when it left work running after its call
 * was answered (a must-finish step, a tool SIGKILL did not end), once that work has ended.
 *
 * The lock passes to the tools (Linux): the descriptors of the device keys held are in `fn`'s call
 * scope (call-scope.ts deviceLockFds), and runCommand hands them to each step that writes a device
 * (host/exec/host-steps.ts) as an inherited descriptor of that one child. flock(2) locks belong to the
 * open file description, which the child's copy shares: the lock is held until the daemon's
 * descriptor and every tool's copy are closed — so it outlives the daemon's death or restart for as
 * long as an orphaned tool runs, and a retry waits for that tool instead of racing it. That is why a
 * holder only closes: LOCK_UN would drop the lock of the description, the tool's too.
 *
 * A call whose signal (LockOptions.signal, else the call's: util/call-scope.ts) aborts while it waits
 * — in the in-process queue or polling a file lock another process holds — leaves the wait with the
 * signal's code (DeadlineExceeded/Canceled) saying nothing was done; `fn` never runs for it.
 *
 * Errors: a lock file that cannot be opened or locked rejects the call with FailedPrecondition
 * naming the file (the call's work has not started).
 */
import { nodeCrypto } from "../util/node-crypto.ts";
import { constants as fsc, promises as fsp } from "node:fs";
import * as path from "node:path";
import { Code, CsiProxyError } from "../errors.ts";
import { createKeyedMutex, type KeyedMutex, type LockOptions } from "../util/keyed-mutex.ts";
import { callSignal, noteOutliving, runCollectingOutliving, type Outliving } from "../util/call-scope.ts";
import { abortError } from "../util/stop-if-aborted.ts";
import { kernel32 } from "../win32/kernel32.ts";
import { loadKoffi } from "../util/koffi-loader.ts";

/** Lock files per namespace. */
export const STRIPES = 64;
const POLL_START_MS = 2;
const POLL_MAX_MS = 50;

/** One held file lock. */
interface Held {
  /** The descriptor holding a device key's lock (Linux), handed to the tools that write the device. */
  fd?: number;
  release(): Promise<void>;
}

/** Tries once to lock `file`; resolves null while another holder has it. */
type TryLock = (file: string) => Promise<Held | null>;

/** The lock file of `key` (see module doc). */
export function lockFileName(key: string): string {
  const colon = key.indexOf(":");
  const namespace = (colon < 0 ? key : key.slice(0, colon)).replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64) || "_";
  if (colon < 0) return `${namespace}.lock`;
  if (namespace === "disk" && /^\d{1,10}$/.test(key.slice(colon + 1))) return `disk.${key.slice(colon + 1)}.lock`;
  const stripe = nodeCrypto().createHash("sha256").update(key.slice(colon + 1)).digest().readUInt32BE(0) % STRIPES;
  return `${namespace}.${stripe}.lock`;
}

const fail = (file: string, err: unknown) =>
  new CsiProxyError(Code.FailedPrecondition, `cannot take the node-wide lock ${file}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });

async function linuxTryLock(): Promise<TryLock> {
  const koffi = await loadKoffi();
  const flock = koffi.load("libc.so.6").func("int flock(int fd, int operation)") as unknown as (fd: number, op: number) => number;
  const LOCK_EX = 2, LOCK_NB = 4, EWOULDBLOCK = 11, EINTR = 4;
  return async (file) => {
    const handle = await fsp.open(file, fsc.O_RDWR | fsc.O_CREAT | fsc.O_NOFOLLOW, 0o600);
    let locked = false;
    try {
      for (;;) {
        if (flock(handle.fd, LOCK_EX | LOCK_NB) === 0) {
          locked = true;
          break;
        }
        const errno = koffi.errno();
        if (errno === EINTR) continue;
        if (errno === EWOULDBLOCK) return null;
        throw Object.assign(new Error(`flock: errno ${errno}`), { errno });
      }
    } finally {
      if (!locked) await handle.close();
    }
    return {
      fd: path.basename(file).startsWith("disk.") ? handle.fd : undefined,
      async release() {
        // Closing only: a tool handed this lock keeps it through its own copy (never LOCK_UN).
        await handle.close();
      },
    };
  };
}

async function windowsTryLock(): Promise<TryLock> {
  const koffi = await loadKoffi();
  const { lockCreateFileW: CreateFileW, LockFileEx, UnlockFileEx, lockCloseHandle: CloseHandle, GetLastError } = kernel32(koffi);
  const GENERIC_READ = 0x80000000, GENERIC_WRITE = 0x40000000, SHARE_ALL = 7, OPEN_ALWAYS = 4, FILE_ATTRIBUTE_NORMAL = 0x80;
  const LOCKFILE_FAIL_IMMEDIATELY = 1, LOCKFILE_EXCLUSIVE_LOCK = 2, ERROR_LOCK_VIOLATION = 33, ERROR_IO_PENDING = 997;
  const INVALID = [-1, -1n];
  return async (file) => {
    const h = CreateFileW(file, (GENERIC_READ | GENERIC_WRITE) >>> 0, SHARE_ALL, null, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, null);
    if (INVALID.includes(h as never)) throw Object.assign(new Error(`CreateFileW: error ${GetLastError()}`), { code: "EACCES" });
    const overlapped = Buffer.alloc(32); // OVERLAPPED, offset 0
    if (!LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, overlapped)) {
      const err = GetLastError();
      CloseHandle(h);
      if (err === ERROR_LOCK_VIOLATION || err === ERROR_IO_PENDING) return null;
      throw new Error(`LockFileEx: error ${err}`);
    }
    return {
      async release() {
        UnlockFileEx(h, 0, 1, 0, Buffer.alloc(32));
        CloseHandle(h);
      },
    };
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The node-wide locks kept in `dir` (created 0700 when missing). */
export function createNodeLocks(options: { dir: string; platform: "linux" | "win32" }): KeyedMutex {
  const local = createKeyedMutex();
  let tryLock: Promise<TryLock> | undefined;
  let dirReady: Promise<void> | undefined;

  async function hold(name: string, what: string, signal: AbortSignal | undefined): Promise<Held> {
    const file = path.join(options.dir, name);
    let attempt: TryLock;
    try {
      dirReady ??= fsp.mkdir(options.dir, { recursive: true, mode: 0o700 }).then(() => {});
      await dirReady;
      attempt = await (tryLock ??= options.platform === "win32" ? windowsTryLock() : linuxTryLock());
    } catch (err) {
      dirReady = undefined;
      throw fail(file, err);
    }
    for (let wait = POLL_START_MS; ; wait = Math.min(POLL_MAX_MS, wait * 2)) {
      let held: Held | null;
      try {
        held = await attempt(file);
      } catch (err) {
        throw fail(file, err);
      }
      if (held) return held;
      if (signal?.aborted) {
        const why = abortError(signal);
        throw new CsiProxyError(why.code, `${why.message}: ${what} was not started (it was waiting for the node-wide lock ${file}, held by another csi-proxy process on this node); nothing was done`, { cause: why });
      }
      await sleep(wait);
    }
  }

  /**
   * The file locks are released when `fn` settles — or, when it left work running after its answer
   * (call-scope.ts Outliving: a tool SIGKILL did not end), once that work has ended: another process
   * on the node never gets the device while it goes on. The work is passed on to the caller's scope,
   * so the in-process queue holds the key as long.
   */
  async function runAll<T>(keys: readonly string[], fn: () => Promise<T>, lockOptions: LockOptions = {}): Promise<T> {
    const names = [...new Set(keys.map(lockFileName))].sort();
    const what = lockOptions.what ?? keys.join(", ");
    const signal = lockOptions.signal ?? callSignal();
    return local.runAll(
      names,
      async () => {
        const held: Held[] = [];
        const releaseAll = async () => {
          for (const h of held.reverse()) await h.release().catch(() => {});
        };
        let outliving: Outliving[] = [];
        try {
          for (const name of names) held.push(await hold(name, what, signal));
          if (signal?.aborted) {
            const why = abortError(signal);
            throw new CsiProxyError(why.code, `${why.message}: ${what} was not started (its caller went away as it got the node-wide lock); nothing was done`, { cause: why });
          }
          const r = await runCollectingOutliving(fn, held.flatMap((h) => (h.fd === undefined ? [] : [h.fd])));
          outliving = r.outliving;
          for (const w of outliving) noteOutliving(w);
          if (r.outcome.status === "rejected") throw r.outcome.reason;
          return r.outcome.value;
        } finally {
          if (outliving.length === 0) await releaseAll();
          else void Promise.all(outliving.map((w) => w.ended)).then(releaseAll);
        }
      },
      { what, signal },
    );
  }

  return {
    run: (key, fn, lockOptions) => runAll([key], fn, lockOptions),
    runAll,
    get size() {
      return local.size;
    },
  };
}
