/**
 * The locks a composed set of services uses: node-wide (node-locks.ts) in the node's lock directory
 * (lock-dir.ts: `-lock-dir` / `lockDir`, default /run/csi-proxy-locks or
 * %ProgramData%\csi-proxy\locks), whatever `-state-dir` this process was given, so that the daemon
 * and every in-process user on one node take turns. Failing closed: a refused lock directory
 * rejects {@link nodeLocks} (the daemon does not start; an in-process user's calls all answer
 * FailedPrecondition) — locks are never "off".
 *
 * Rolling upgrade: releases before this one locked in `<state-dir>/locks` only. During this release
 * a key is also taken there (after the lock-directory one, so no two orders meet) when the state
 * directory passed its check and is not the lock directory itself, so an older process on the node
 * and a newer one still exclude each other. Drop the old lock in the release after next, once no
 * node can run a release older than this one next to it. Device keys hand both descriptors to the
 * tools (call-scope.ts accumulates nested lock descriptors: fds 3 and 4).
 */
import * as path from "node:path";
import type { ProxyConfig } from "../proxy-config.ts";
import type { KeyedMutex } from "../util/keyed-mutex.ts";
import { noteOutliving, runCollectingOutliving, type Outliving } from "../util/call-scope.ts";
import { createNodeLocks } from "./node-locks.ts";
import { defaultLockDir, privateLockDirWarning, secureLinuxLockDir } from "./lock-dir.ts";

/** Checks the lock directory (lock-dir.ts), Windows through the state directory's DACL code; throws a CsiProxyError. */
export async function secureLockDir(dir: string, platform: "linux" | "win32", log?: ProxyConfig["logger"]): Promise<void> {
  if (platform === "linux") return secureLinuxLockDir(dir);
  const [{ secureWindowsStateDir }, { loadWin32 }] = await Promise.all([import("./state-dir-windows.ts"), import("../win32/win32.ts")]);
  const trust = await secureWindowsStateDir(dir, await loadWin32(), {
    log: { info: (m) => log?.info(m), warning: () => {} },
    noun: "lock directory",
    consequence: "no disk, volume, SMB or iSCSI call runs until this is fixed (csi-proxy keeps its node-wide locks there; fix the owner or DACL, or remove the directory: csi-proxy creates it)",
  });
  if (trust.smb) throw trust.smb;
}

/**
 * Both sets taken, `first` then `second` (see module doc). Work `fn` leaves running after its answer
 * (call-scope.ts Outliving) is noted in both sets' scopes: a set keeps its keys (and refuses later
 * calls, Aborted) until that work ended, and the in-process queue of `second` does not pass it on.
 */
export function bothLocks(first: KeyedMutex, second: KeyedMutex): KeyedMutex {
  const runAll: KeyedMutex["runAll"] = (keys, fn, options) =>
    first.runAll(
      keys,
      async () => {
        let outliving: Outliving[] = [];
        try {
          return await second.runAll(
            keys,
            async () => {
              const r = await runCollectingOutliving(fn);
              outliving = r.outliving;
              for (const w of outliving) noteOutliving(w);
              if (r.outcome.status === "rejected") throw r.outcome.reason;
              return r.outcome.value;
            },
            options,
          );
        } finally {
          for (const w of outliving) noteOutliving(w);
        }
      },
      options,
    );
  return {
    run: (key, fn, options) => runAll([key], fn, options),
    runAll,
    get size() {
      return first.size + second.size;
    },
  };
}

/**
 * The node-wide locks of `config`: secures the lock directory (throws when refused), warns when it
 * holds no daemon's marker, and adds the old `<state-dir>/locks` when `stateRefusal` is null.
 */
export async function nodeLocks(config: Pick<ProxyConfig, "stateDir" | "platform" | "logger" | "lockDir">, stateRefusal: Error | null): Promise<KeyedMutex> {
  const dir = config.lockDir ?? defaultLockDir(config.platform);
  await secureLockDir(dir, config.platform, config.logger);
  const warning = privateLockDirWarning(dir);
  if (warning) config.logger?.warning(warning);
  const locks = createNodeLocks({ dir, platform: config.platform });
  const p = config.platform === "win32" ? path.win32 : path.posix;
  const old = p.join(config.stateDir, "locks");
  const same = (a: string, b: string) => (config.platform === "win32" ? a.toLowerCase() === b.toLowerCase() : a === b);
  if (stateRefusal || same(p.resolve(old), p.resolve(dir))) return locks;
  return bothLocks(locks, createNodeLocks({ dir: old, platform: config.platform }));
}
