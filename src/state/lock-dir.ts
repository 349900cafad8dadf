/**
 * The node-wide lock directory (`-lock-dir`, in-process `lockDir`): where every csi-proxy on the
 * node — the daemon and each in-process user — takes its node-wide locks (node-locks.ts), whatever
 * `-state-dir` each was given. One fixed place per node:
 *
 *   - Linux `/run/csi-proxy-locks`: a directory of its own under /run (tmpfs: flock(2) locks need no
 *     persistence). Not /run/lock (world-writable: anyone could plant or hold the files) and not the
 *     unit's RuntimeDirectory /run/csi-proxy (systemd empties it at every restart of the unit,
 *     while an orphaned tool may still hold a lock there).
 *   - Windows `%ProgramData%\csi-proxy\locks` (C:\ProgramData\csi-proxy\locks).
 *
 * Checked before any lock is taken (compose/linux.ts, compose/windows.ts; the daemon also before it
 * listens, server-main.ts). Refused, never repaired and never "locks off" (failing closed): the
 * daemon does not start (exit 2), an in-process user's every call answers FailedPrecondition.
 *
 * Linux contract ({@link secureLinuxLockDir}): absolute; a missing directory is created 0700
 * (missing parents 0755); as found it is a directory, not a symbolic link, owned by csi-proxy's uid
 * (root), writable by nobody else (no group/other write bit); each parent (symlinks resolved) is
 * owned by root or that uid and writable by others only with the sticky bit. Windows: the state
 * directory's checks and DACL (state-dir-windows.ts, SYSTEM and Administrators only, set at
 * creation), a refusal failing closed here. A refusal is one line with the fix.
 *
 * The marker ({@link LOCK_DIR_MARKER}) is written by the daemon at start: an in-process user that
 * finds none warns that the directory may be private to its pod (a hostPath mount is missing), in
 * which case it excludes no other csi-proxy of the node. Shown by src/state/lock-dir.test.ts.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { Code, CsiProxyError } from "../errors.ts";
import { securePrivateDir } from "../util/private-dir.ts";

/** The daemon's mark in the lock directory (its pid and start time, one line). */
export const LOCK_DIR_MARKER = ".csi-proxy-daemon";

/**
 * The node-wide lock directory of `platform` when none is given: /run/csi-proxy-locks for root; a
 * daemon of another user (which can do no disk work) uses its own, beside its default socket
 * directory: $XDG_RUNTIME_DIR/csi-proxy-locks, else /tmp/csi-proxy-locks-<uid>.
 */
export function defaultLockDir(platform: "linux" | "win32", uid: number = process.getuid?.() ?? 0): string {
  if (platform === "win32") return path.win32.join(process.env.ProgramData || "C:\\ProgramData", "csi-proxy", "locks");
  if (uid === 0) return "/run/csi-proxy-locks";
  const runtime = process.env.XDG_RUNTIME_DIR;
  return runtime ? path.join(runtime, "csi-proxy-locks") : `/tmp/csi-proxy-locks-${uid}`;
}

/** FailedPrecondition naming the lock directory, what is wrong, and the fix. */
export const lockDirRefusal = (dir: string, what: string, fix: string) =>
  new CsiProxyError(Code.FailedPrecondition, `lock directory ${dir} (-lock-dir) ${what}: others could take or hold csi-proxy's node-wide locks; refusing it, no disk, volume, SMB or iSCSI call runs (fix: ${fix})`);

/** Checks (and when missing, creates) the Linux lock directory `dir`; throws a CsiProxyError. */
export function secureLinuxLockDir(dir: string, uid: number = process.getuid?.() ?? 0): void {
  if (!path.isAbsolute(dir)) throw new CsiProxyError(Code.InvalidArgument, `lock directory ${JSON.stringify(dir)} (-lock-dir) must be an absolute path`);
  securePrivateDir(dir, { label: `lock directory ${dir} (-lock-dir)`, flag: "-lock-dir", owner: "csi-proxy's", refuse: (what, fix) => lockDirRefusal(dir, what, fix) }, uid);
}

/** The daemon's start: writes the marker (0600) in the secured lock directory. */
export function markLockDir(dir: string): void {
  const file = path.join(dir, LOCK_DIR_MARKER);
  try {
    fs.rmSync(file, { force: true });
    fs.writeFileSync(file, `pid ${process.pid} started ${new Date().toISOString()}\n`, { mode: 0o600, flag: "wx" });
  } catch (err) {
    // Another daemon starting at the same moment wrote it: marked all the same.
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return;
    throw new CsiProxyError(Code.FailedPrecondition, `lock directory ${dir} (-lock-dir): cannot write ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/** A warning when `dir` holds no daemon's marker (it may be private to a pod); null when it does. */
export function privateLockDirWarning(dir: string): string | null {
  if (fs.existsSync(path.join(dir, LOCK_DIR_MARKER))) return null;
  return (
    `lock directory ${dir} has no mark of a csi-proxy daemon (${LOCK_DIR_MARKER}): if this process runs in a pod, mount the node's ${dir} there (hostPath, type DirectoryOrCreate), ` +
    `else its node-wide locks exclude no other csi-proxy on the node (fine when no daemon runs there)`
  );
}
