/**
 * The SMB group's reference counts: who uses which share root (smb-state.ts), held in memory and in
 * the state file, and the locks that keep the two agreeing across processes.
 *
 * - Loaded once ({@link openSmbReferences}); a file that cannot be read refuses every SMB call with
 *   FailedPrecondition ({@link SmbReferences.usable}) until it is repaired or moved away, so that no
 *   share is unmapped under users it no longer knows.
 * - A root's record is changed only while its lock is held ({@link SmbReferences.withRoot}; node-wide
 *   when the locks are: src/state/node-locks.ts), and each turn starts from the file's record: the
 *   daemon and in-process users on one node take turns on a root.
 * - {@link SmbReferences.save} writes one root's record (the file read again under the state file's
 *   lock, only that root's entry replaced, so other roots' records, which another process may have
 *   changed, are kept); {@link SmbReferences.saveRoots} does the same for many roots in one write.
 *   A save is bookkeeping of work already started: it does not give up when the call's deadline
 *   passes while it waits for the state file's lock.
 * - A use is stale when its local link is gone or no longer points to its remote path
 *   ({@link SmbReferences.isStale}: one readDirLink, an lstat/readlink, no tool run; an error means
 *   "live").
 */
import type { KeyedMutex } from "../../util/keyed-mutex.ts";
import type { JsonStateFile } from "../../state/atomic-file.ts";
import { StateDirRefusal } from "../../state/state-dir-trust.ts";
import { CsiProxyError, Code, failedPrecondition } from "../../errors.ts";
import type { SmbHostApi } from "./host-api.ts";
import { emptySmbState, type SmbRootState, type SmbState, type SmbUser } from "./smb-state.ts";

/** Where the group reports what it did on its own (start-up reconciliation, sweeps, rollbacks). */
export interface SmbLog {
  info(msg: string): void;
  warning(msg: string): void;
}

export interface SmbReferences {
  /** The state file's path, for messages. */
  readonly path: string;
  /** Whether the state file was refused at start (every call then answers {@link usable}'s error). */
  readonly refused: boolean;
  /** Throws the start-up refusal (FailedPrecondition) when there is one. */
  usable(): void;
  /** Runs `fn` holding `root`'s lock, the root's record taken from the file first. */
  withRoot<T>(root: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Runs `fn` holding the locks of `roots` (node-wide locks map them onto at most their stripe count
   * of lock files), their records taken from the file in one read. `fn` must change no other root.
   */
  withRoots<T>(roots: readonly string[], fn: () => Promise<T>): Promise<T>;
  /** Every root recorded in the file or in memory now, with its record (the file's when it has one); read without a lock. */
  snapshot(): Promise<Map<string, SmbRootState>>;
  /** `root`'s record in memory (undefined: no record). */
  record(root: string): SmbRootState | undefined;
  /** `root`'s record, created empty when missing. */
  ensure(root: string): SmbRootState;
  /** Drops `root`'s record from memory (saved by the next {@link save}). */
  forget(root: string): void;
  /** Writes `root`'s record (or its absence) into the file. */
  save(root: string): Promise<void>;
  /** {@link save} for several roots, in one write. */
  saveRoots(roots: readonly string[]): Promise<void>;
  /** Uses per root (roots without uses are absent). */
  counts(): Record<string, number>;
  /** Whether the link text `target` points where a link for `remotePath` does (trailing separators, and on Windows case and `\\?\`, aside). */
  linksTo(target: string, remotePath: string): boolean;
  /** Whether `user`'s local link is gone or points elsewhere (an error reading it: live). */
  isStale(user: SmbUser): Promise<boolean>;
  /** Drops `root`'s stale uses from memory, logs them, returns them. Does not save. */
  pruneStale(root: string): Promise<SmbUser[]>;
}

export interface SmbReferencesDeps {
  /** The reference counts' file (smb-state.ts). */
  state: JsonStateFile<SmbState>;
  locks: KeyedMutex;
  /** The link reads of stale-use judgement. */
  host: Pick<SmbHostApi, "readDirLink" | "linkTargetFor">;
  platform: "linux" | "win32";
  log: SmbLog;
}

const STATE_LOCK = "smb-state";
const rootKey = (root: string) => `smb-root:${root}`;
/** Saves finish once started: no caller's deadline cuts them off between the host's change and its record. */
const UNTIL_DONE: AbortSignal = new AbortController().signal;

/** Loads the state file (a refusal is remembered, logged, and answered by every call). */
export async function openSmbReferences(deps: SmbReferencesDeps): Promise<SmbReferences> {
  const { host, locks, log, platform } = deps;
  const file = deps.state;
  let state: SmbState = emptySmbState();
  let broken: CsiProxyError | undefined;
  try {
    state = (await file.load()) ?? emptySmbState();
  } catch (err) {
    if (err instanceof StateDirRefusal) {
      broken = err; // the start-up check of the state directory refused it, and logged why (src/state/state-dir.ts)
    } else if (err instanceof CsiProxyError && err.code === Code.FailedPrecondition) {
      // e.g. readStateFile refusing a symbolic link: its message says what to do
      broken = failedPrecondition(`${err.message}; SMB calls are refused until this is fixed`);
    } else {
      broken = failedPrecondition(
        `SMB state file ${file.path} is unreadable (${err instanceof Error ? err.message : String(err)}); ` +
          "SMB calls are refused so that no share is unmapped under its users: repair the file, or move it away to start counting afresh",
      );
    }
    if (!(err instanceof StateDirRefusal)) log.warning(broken.message);
  }

  async function loadFresh(): Promise<SmbState | null> {
    try {
      return await file.load();
    } catch (err) {
      throw failedPrecondition(`SMB state file ${file.path} is unreadable (${err instanceof Error ? err.message : String(err)}); the call did nothing`);
    }
  }

  /** Takes `roots`' records from `onDisk` (another process may have changed them since we last held them). */
  function adopt(onDisk: SmbState | null, roots: readonly string[]): void {
    for (const root of roots) {
      const fresh = onDisk?.roots[root];
      if (fresh) state.roots[root] = fresh;
      else delete state.roots[root];
    }
  }

  const saveRoots = (roots: readonly string[]) =>
    locks.run(
      STATE_LOCK,
      async () => {
        const onDisk = (await file.load()) ?? emptySmbState();
        for (const root of roots) {
          if (state.roots[root]) onDisk.roots[root] = state.roots[root];
          else delete onDisk.roots[root];
        }
        await file.save(onDisk);
      },
      { signal: UNTIL_DONE, what: `saving ${file.path}` },
    );

  const norm = (s: string) => {
    let t = s.replace(/[\\/]+$/, "");
    if (platform === "win32") t = t.replace(/^\\\\\?\\/, "").toLowerCase();
    return t;
  };
  const linksTo = (target: string, remotePath: string) => norm(target) === norm(host.linkTargetFor(remotePath));

  async function isStale(user: SmbUser): Promise<boolean> {
    if (user.localPath === undefined) return false;
    try {
      const entry = await host.readDirLink(user.localPath);
      return entry === null || entry.target === null || !linksTo(entry.target, user.remotePath);
    } catch {
      return false;
    }
  }

  return {
    path: file.path,
    get refused() {
      return broken !== undefined;
    },
    usable() {
      if (broken) throw broken;
    },
    withRoot: (root, fn) =>
      locks.run(rootKey(root), async () => {
        adopt(await loadFresh(), [root]);
        return fn();
      }),
    withRoots: (roots, fn) =>
      locks.runAll(roots.map(rootKey), async () => {
        adopt(await loadFresh(), roots);
        return fn();
      }),
    async snapshot() {
      const onDisk = await file.load().catch(() => null);
      return new Map(Object.entries({ ...state.roots, ...onDisk?.roots }));
    },
    record: (root) => state.roots[root],
    ensure: (root) => (state.roots[root] ??= { users: [] }),
    forget(root) {
      delete state.roots[root];
    },
    save: (root) => saveRoots([root]),
    saveRoots,
    counts: () => Object.fromEntries(Object.entries(state.roots).filter(([, rs]) => rs.users.length > 0).map(([root, rs]) => [root, rs.users.length])),
    linksTo,
    isStale,
    async pruneStale(root) {
      const rs = state.roots[root];
      if (!rs) return [];
      const stale: SmbUser[] = [];
      for (const user of [...rs.users]) if (await isStale(user)) stale.push(user);
      if (stale.length) {
        rs.users = rs.users.filter((u) => !stale.includes(u));
        log.info(`SMB ${root}: dropped ${stale.length} use(s) whose local link is gone: ${stale.map((u) => u.localPath).join(", ")}`);
      }
      return stale;
    },
  };
}
