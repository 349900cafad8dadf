import { createKeyedMutex, type KeyedMutex } from "../../util/keyed-mutex.ts";
import { nodeCrypto } from "../../util/node-crypto.ts";
import { inCallScope } from "../../util/call-scope.ts";
import type { SmbService } from "./types.ts";
import type { SmbHostApi } from "./host-api.ts";
import type { PathPolicy } from "../../policy/path-policy.ts";
import type { JsonStateFile } from "../../state/atomic-file.ts";
import { StateDirRefusal } from "../../state/state-dir.ts";
import { CsiProxyError, Code, failedPrecondition, invalidArgument } from "../../errors.ts";
import { parseRemotePath, quoteForError } from "./remote-path.ts";
import { fragmentError } from "../../compat/driver-fragments.ts";
import { describeSchedule, retryUndo } from "../../util/undo-retry.ts";
import { emptySmbState, type SmbRootState, type SmbState, type SmbUser } from "./smb-state.ts";

/** Where the service reports what it did on its own (start-up reconciliation, sweeps, rollbacks). */
export interface SmbLog {
  info(msg: string): void;
  warning(msg: string): void;
}

export interface SmbServiceDeps {
  host: SmbHostApi;
  /** The filesystem group's policy: `local_path` must pass it (docs/upstream-behaviour.md, Path validation). */
  policy: PathPolicy;
  /** The reference counts' file (see smb-state.ts). */
  state: JsonStateFile<SmbState>;
  /** `-require-privacy`: new mappings demand encryption. */
  requirePrivacy: boolean;
  platform: "linux" | "win32";
  log?: SmbLog;
  /**
   * How often uses whose local link has disappeared are dropped and mappings left without users are
   * removed, in milliseconds (default 5 minutes; 0 disables the timer; the sweep also runs at start
   * and on every call for the share root concerned).
   */
  sweepIntervalMs?: number;
  /** Locks per share root and for the state file; node-wide ones (src/state/node-locks.ts) when other processes share the state dir. Default: in-process. */
  locks?: KeyedMutex;
}

/** The SMB service plus what operators and tests may inspect. */
export interface RefCountedSmbService extends SmbService {
  /** Number of recorded uses per share root (roots without uses are absent). */
  references(): Record<string, number>;
  /** Runs the stale-use sweep over every share root now (what the timer does). */
  sweep(): Promise<void>;
  /** Stops the sweep timer. */
  close(): void;
}

/** Longest accepted user name, in UTF-8 bytes (a UPN may be long; 1 KiB is far above real ones). */
export const MAX_USERNAME_BYTES = 1024;
/** Longest accepted password, in UTF-8 bytes. */
export const MAX_PASSWORD_BYTES = 1024;

/**
 * The SMB group (docs/upstream-behaviour.md, SMB) with reference counting per share root.
 *
 * NewSmbGlobalMapping: `remote_path` is normalised (`/` → `\`) and reduced to its share root
 * `\\server\share` (lower-cased); `local_path` (when given) must pass the path policy. The call is
 * recorded as one use of the root (see smb-state.ts for how uses are identified), then a healthy
 * host mapping is reused (the call's credentials are then ignored, as upstream), a mapping that
 * exists but is unhealthy or whose root is unreachable is removed and re-created, a missing one is
 * created; finally the link at `local_path` is created, pointing to the full remote path. A local
 * path that already links to this remote path (a retried call, or the link survived a restart) is
 * accepted without counting twice; anything else there is AlreadyExists. On failure the call's
 * use is withdrawn again and a mapping this call created for it alone is removed.
 *
 * RemoveSmbGlobalMapping: releases one use of the root of `remote_path`; the host mapping is
 * removed only when no use is left. Which use: first, uses whose local link has already been
 * removed are dropped (stale); if one of them asked for this very remote path, that is the
 * released use (the driver removed its link before calling). Otherwise one use with this remote
 * path is released (uses without local path first), else one of the root's. A root without any
 * recorded use but with a host mapping (made before reference counting, or by another tool) has
 * the mapping removed, as upstream does; a root with neither is NotFound.
 *
 * Uses are kept in the state file, written atomically after every change and before the host is
 * touched for a new use, so a crash leaves either nothing or a recorded use whose link does not
 * exist, which the start-up sweep drops. At start the service also finishes interrupted removals,
 * then has the host remove mapping directories no recorded root uses (SmbHostApi.removeUnusedMappingDirs).
 * Calls for one share root are serialised; different roots proceed in parallel.
 *
 * Codes: malformed input InvalidArgument; local path outside the allowed dirs PermissionDenied;
 * occupied local path AlreadyExists (carrying `ResourceExists`); unknown root NotFound (carrying
 * `No MSFT_SmbGlobalMapping objects found`; see compat/driver-fragments.ts); unreadable state file
 * FailedPrecondition (every call, until the file is fixed or moved away); host failures keep
 * the host's code. Passwords never appear in a message.
 */
export async function createSmbService(deps: SmbServiceDeps): Promise<RefCountedSmbService> {
  const { host, policy, requirePrivacy, platform } = deps;
  const log: SmbLog = deps.log ?? { info() {}, warning() {} };
  const fold = (s: string) => (platform === "win32" ? s.toLowerCase() : s);

  let state: SmbState = emptySmbState();
  let broken: CsiProxyError | undefined;
  try {
    state = (await deps.state.load()) ?? emptySmbState();
  } catch (err) {
    if (err instanceof StateDirRefusal) {
      broken = err; // the start-up check of the state directory refused it, and logged why (src/state/state-dir.ts)
    } else if (err instanceof CsiProxyError && err.code === Code.FailedPrecondition) {
      // e.g. readStateFile refusing a symbolic link: its message says what to do
      broken = failedPrecondition(`${err.message}; SMB calls are refused until this is fixed`);
    } else {
      broken = failedPrecondition(
        `SMB state file ${deps.state.path} is unreadable (${err instanceof Error ? err.message : String(err)}); ` +
          "SMB calls are refused so that no share is unmapped under its users: repair the file, or move it away to start counting afresh",
      );
    }
    if (!(err instanceof StateDirRefusal)) log.warning(broken.message);
  }
  const usable = () => {
    if (broken) throw broken;
  };
  const locks = deps.locks ?? createKeyedMutex();
  const STATE_LOCK = "smb-state";

  /**
   * Saves `root`'s record (held under its root lock) into the file as it is now: the file is read
   * again under the state file's lock and only that root's entry is replaced, so other roots'
   * records — which another process on this node may have changed meanwhile — are kept.
   */
  const save = (root: string) =>
    locks.run(STATE_LOCK, async () => {
      const onDisk = (await deps.state.load()) ?? emptySmbState();
      if (state.roots[root]) onDisk.roots[root] = state.roots[root];
      else delete onDisk.roots[root];
      await deps.state.save(onDisk);
    });

  /** Takes `root`'s record from the file (another process may have changed it since we last held the root). */
  async function refresh(root: string): Promise<void> {
    let onDisk: SmbState | null;
    try {
      onDisk = await deps.state.load();
    } catch (err) {
      throw failedPrecondition(`SMB state file ${deps.state.path} is unreadable (${err instanceof Error ? err.message : String(err)}); the call did nothing`);
    }
    const fresh = onDisk?.roots[root];
    if (fresh) state.roots[root] = fresh;
    else delete state.roots[root];
  }

  /**
   * Per-root serialisation, node-wide when `deps.locks` is (src/state/node-locks.ts): the daemon and
   * in-process users on one node take turns on a root; each turn starts from the file's record.
   */
  function withLock<T>(root: string, fn: () => Promise<T>): Promise<T> {
    return locks.run(`smb-root:${root}`, async () => {
      await refresh(root);
      return fn();
    });
  }

  /** Every root recorded in the file now (the sweep visits roots other processes added too). */
  async function knownRoots(): Promise<string[]> {
    const onDisk = await deps.state.load().catch(() => null);
    return [...new Set([...Object.keys(state.roots), ...Object.keys(onDisk?.roots ?? {})])];
  }

  /** Link texts compared loosely: trailing separators, Windows case and `\\?\` prefix do not matter. */
  const sameTarget = (a: string, b: string) => {
    const norm = (s: string) => {
      let t = s.replace(/[\\/]+$/, "");
      if (platform === "win32") t = t.replace(/^\\\\\?\\/, "").toLowerCase();
      return t;
    };
    return norm(a) === norm(b);
  };

  /** A use is stale when its local link is gone or no longer points to its remote path. Unknown → live. */
  async function isStale(user: SmbUser): Promise<boolean> {
    if (user.localPath === undefined) return false;
    try {
      const entry = await host.readDirLink(user.localPath);
      return entry === null || entry.target === null || !sameTarget(entry.target, host.linkTargetFor(user.remotePath));
    } catch {
      return false;
    }
  }

  /** Drops the stale uses of `root`; returns them. Does not save. */
  async function pruneStale(root: string): Promise<SmbUser[]> {
    const rs = state.roots[root];
    if (!rs) return [];
    const stale: SmbUser[] = [];
    for (const user of [...rs.users]) if (await isStale(user)) stale.push(user);
    if (stale.length) {
      rs.users = rs.users.filter((u) => !stale.includes(u));
      log.info(`SMB ${root}: dropped ${stale.length} use(s) whose local link is gone: ${stale.map((u) => u.localPath).join(", ")}`);
    }
    return stale;
  }

  /** Removes the host mapping of a root that has no use left, and the root's record. */
  async function tearDown(root: string): Promise<void> {
    const rs = state.roots[root] ?? (state.roots[root] = { users: [] });
    rs.removing = true;
    await save(root);
    // A refusal (FailedPrecondition: e.g. a link planted in the state directory) is the answer: the
    // removal stays owed. Other query errors mean "not mapped", as upstream.
    const mapping = await host.getMapping(root).catch((err: unknown) => {
      if (err instanceof CsiProxyError && err.code === Code.FailedPrecondition) throw err;
      return null;
    });
    if (mapping) await host.removeMapping(root);
    delete state.roots[root];
    await save(root);
    log.info(`SMB ${root}: last use released, mapping ${mapping ? "removed" : "was already gone"}`);
  }

  /**
   * Removes the mapping a failed call made, then asks the host: null when it no longer lists it (or
   * the query fails: "not mapped", as upstream), else why it is still there (the removal's error, or
   * that the host still lists it).
   */
  async function rollBackMapping(root: string): Promise<string | null> {
    const failed = await host.removeMapping(root).then(
      () => null,
      (e: unknown) => (e instanceof Error ? e.message : String(e)),
    );
    const still = await host.getMapping(root).catch(() => null); // a query error means "not mapped", as everywhere here (upstream)
    if (still === null) return null;
    return failed ?? `removed, but the host still lists it (status ${still.status})`;
  }

  /** One retry of an owed rollback (under the root's lock): done when a new use took the mapping over. */
  async function retryRollBack(root: string): Promise<{ done: true } | { done: false; left: string }> {
    const rs = state.roots[root];
    if (!rs || rs.users.length > 0 || !rs.removing) return { done: true };
    const left = await rollBackMapping(root);
    if (left !== null) return { done: false, left: `${root} still mapped at ${host.linkTargetFor(root)}: ${left}` };
    delete state.roots[root];
    await save(root);
    return { done: true };
  }

  /** Reuses a healthy mapping, re-creates a broken one, creates a missing one. Returns whether it created. */
  async function ensureMapping(root: string, username: string, password: string, creating: () => void = () => {}): Promise<boolean> {
    const mapping = await host.getMapping(root).catch(() => null); // upstream: a query error means "not mapped"
    if (mapping) {
      if (mapping.status === "OK") {
        let valid = false;
        try {
          valid = await host.isPathValid(root);
        } catch (err) {
          log.warning(`SMB ${root}: reachability check failed: ${err instanceof Error ? err.message : String(err)}`);
        }
        if (valid) return false;
        log.info(`SMB ${root}: mapping is not reachable, re-creating it`);
      } else {
        log.info(`SMB ${root}: mapping status is ${JSON.stringify(mapping.status)}, re-creating it`);
      }
      await host.removeMapping(root);
    }
    creating();
    await host.createMapping(root, username, password, requirePrivacy);
    return true;
  }

  /**
   * Sweep of one root: drop stale uses; a root whose uses all went stale, or whose removal was
   * interrupted, loses its mapping. (A record without uses for any other reason is only forgotten:
   * nothing says the mapping is ours to remove.)
   */
  async function sweepRoot(root: string): Promise<void> {
    const rs = state.roots[root];
    if (!rs) return;
    const stale = await pruneStale(root);
    if (rs.users.length > 0) {
      if (stale.length) await save(root);
    } else if (rs.removing || stale.length) {
      await tearDown(root);
    } else {
      delete state.roots[root];
      await save(root);
    }
  }

  async function sweepAll(): Promise<void> {
    if (broken) return;
    for (const root of await knownRoots()) {
      await withLock(root, () => sweepRoot(root)).catch((err) => {
        log.warning(`SMB ${root}: sweep failed: ${err instanceof Error ? err.message : String(err)}`);
      });
    }
  }

  // Start-up reconciliation against the host: finish interrupted removals, drop uses whose links
  // vanished, and report roots whose mapping is gone (after a reboot; the next NewSmbGlobalMapping
  // for them re-creates it with that call's credentials).
  await sweepAll();
  if (!broken) {
    for (const [root, rs] of Object.entries(state.roots)) {
      const mapping = await host.getMapping(root).catch(() => null);
      log.info(`SMB ${root}: ${rs.users.length} use(s) recovered, mapping ${mapping ? `present (${mapping.status})` : "absent until the next NewSmbGlobalMapping for it"}`);
    }
  }

  // Directories of mappings no recorded root uses (a daemon killed around a mount or an unmount).
  if (!broken && host.removeUnusedMappingDirs) {
    const removed = await host.removeUnusedMappingDirs(Object.keys(state.roots)).catch((err: unknown) => {
      log.warning(`SMB: the start-up sweep of mapping directories failed: ${err instanceof Error ? err.message : String(err)}`);
      return [];
    });
    if (removed.length) log.info(`SMB: removed ${removed.length} mapping director${removed.length === 1 ? "y" : "ies"} no share root uses: ${removed.join(", ")}`);
  }

  const interval = deps.sweepIntervalMs ?? 5 * 60_000;
  const timer = interval > 0 ? setInterval(() => void sweepAll(), interval) : undefined;
  timer?.unref();

  return inCallScope({
    async newSmbGlobalMapping(req) {
      const rp = parseRemotePath(req.remotePath);
      validateCredentials(req.username, req.password);
      const link = req.localPath === "" ? undefined : await policy.check(req.localPath);
      usable();
      return withLock(rp.root, async () => {
        const stale = await pruneStale(rp.root);
        let existingLink = false;
        if (link !== undefined) {
          const entry = await host.readDirLink(link);
          if (entry !== null) {
            if (entry.target === null || !sameTarget(entry.target, host.linkTargetFor(rp.remotePath))) {
              if (stale.length) await save(rp.root);
              throw fragmentError("smb-local-path-exists", `local path ${req.localPath} already exists and is not a link to ${rp.remotePath}`);
            }
            existingLink = true; // a retried call, or a link that outlived a restart: same destination
          }
        }
        const rs: SmbRootState = state.roots[rp.root] ?? (state.roots[rp.root] = { users: [] });
        const wasRemoving = rs.removing === true;
        const id = link !== undefined ? `link:${fold(link)}` : `call:${nodeCrypto().randomUUID()}`;
        let user = rs.users.find((u) => u.id === id);
        const added = user === undefined;
        if (user === undefined) {
          user = { id, remotePath: rp.remotePath, since: new Date().toISOString(), ...(link !== undefined ? { localPath: link } : {}) };
          rs.users.push(user);
        } else {
          user.remotePath = rp.remotePath;
        }
        delete rs.removing;
        await save(rp.root); // recorded before the host is touched: a crash leaves a use the sweep can judge
        let created = false;
        let attempted = false; // a mount that failed or timed out may still have happened: rolled back like a created one
        try {
          created = await ensureMapping(rp.root, req.username, req.password, () => (attempted = true));
          if (link !== undefined && !existingLink) await host.createDirLink(link, rp.remotePath);
        } catch (caught) {
          let err = caught;
          if (added) {
            rs.users = rs.users.filter((u) => u !== user);
            if (rs.users.length === 0) {
              const left = created || attempted ? await rollBackMapping(rp.root) : null;
              if (left !== null) {
                // Still mapped: the removal is owed (the sweep and the retry below finish it), and the answer says so.
                rs.removing = true;
                const failure = CsiProxyError.from(err, Code.Internal);
                err = failure;
                failure.message += `; the mapping of ${rp.root} this call made could not be removed (${left}): it is still mapped at ${host.linkTargetFor(rp.root)}; csi-proxy retries removing it (${describeSchedule()})`;
                void retryUndo(`SMB mapping ${rp.root}`, () => withLock(rp.root, () => retryRollBack(rp.root)), log);
              } else if (wasRemoving && !created) rs.removing = true; // the interrupted removal is still owed
              else delete state.roots[rp.root];
            }
            await save(rp.root).catch((e) => log.warning(`SMB state: save failed: ${e instanceof Error ? e.message : String(e)}`));
          }
          throw err;
        }
      });
    },

    async removeSmbGlobalMapping(req) {
      const rp = parseRemotePath(req.remotePath);
      usable();
      return withLock(rp.root, async () => {
        const rs = state.roots[rp.root];
        const stale = await pruneStale(rp.root);
        if (!rs || (rs.users.length === 0 && stale.length === 0 && !rs.removing)) {
          // No recorded use: a mapping made before counting started or by another tool. Upstream removes it.
          const mapping = await host.getMapping(rp.root).catch(() => null);
          if (!mapping) {
            if (rs) {
              delete state.roots[rp.root];
              await save(rp.root);
            }
            throw fragmentError("smb-no-mapping", `error remove smb mapping '${rp.root}'. err: no SMB global mapping for remote path ${rp.root}`);
          }
          await host.removeMapping(rp.root);
          if (rs) {
            delete state.roots[rp.root];
            await save(rp.root);
          }
          log.info(`SMB ${rp.root}: removed a mapping that had no recorded use`);
          return;
        }
        const same = (u: SmbUser) => u.remotePath.toLowerCase() === rp.remotePath.toLowerCase(); // SMB paths are case-insensitive
        if (!stale.some(same) && rs.users.length > 0) {
          const order = [
            (u: SmbUser) => same(u) && u.localPath === undefined,
            same,
            (u: SmbUser) => u.localPath === undefined,
            () => true,
          ];
          for (const pick of order) {
            const candidates = rs.users.filter(pick);
            if (candidates.length) {
              const released = candidates[candidates.length - 1];
              rs.users = rs.users.filter((u) => u !== released);
              break;
            }
          }
        }
        if (rs.users.length > 0) {
          await save(rp.root);
          log.info(`SMB ${rp.root}: use released, ${rs.users.length} left; mapping kept`);
          return;
        }
        await tearDown(rp.root);
      });
    },

    references() {
      return Object.fromEntries(Object.entries(state.roots).filter(([, rs]) => rs.users.length > 0).map(([root, rs]) => [root, rs.users.length]));
    },
    sweep: sweepAll,
    close() {
      if (timer) clearInterval(timer);
    },
  });
}

const CONTROL = /[\x00-\x1f\x7f]/;

/**
 * User name: at most {@link MAX_USERNAME_BYTES}, no control characters. Password: at most
 * {@link MAX_PASSWORD_BYTES}, no NUL, CR or LF (no credential store or credentials file can hold
 * them). Messages never include the password.
 */
function validateCredentials(username: string, password: string): void {
  if (Buffer.byteLength(username, "utf8") > MAX_USERNAME_BYTES) throw invalidArgument(`username is longer than ${MAX_USERNAME_BYTES} bytes`);
  if (CONTROL.test(username)) throw invalidArgument(`username ${quoteForError(username)} contains control characters`);
  if (Buffer.byteLength(password, "utf8") > MAX_PASSWORD_BYTES) throw invalidArgument(`password is longer than ${MAX_PASSWORD_BYTES} bytes`);
  if (/[\0\r\n]/.test(password)) throw invalidArgument("password contains a NUL, CR or LF character");
}
