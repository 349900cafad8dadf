/**
 * A directory only the daemon's user may write, for what others must not replace or hold: the
 * endpoints' sockets (api/socket-dir.ts) and the node-wide locks (state/lock-dir.ts).
 *
 * Contract of {@link securePrivateDir} (Linux; synchronous, at start-up or set-up): a missing
 * directory is created 0700, one level at a time (so the kernel's own error shows: EROFS stays
 * EROFS). An existing one is refused — never repaired — when it is a symbolic link, not a
 * directory, owned by another uid, or group- or world-writable; so is one under a parent that
 * another uid (not root) owns or others can write without the sticky bit (the parents are resolved
 * first, so system links such as /var/run → /run are fine, and a per-user directory may sit in a
 * 1777 /tmp). Each refusal is one FailedPrecondition line naming what is wrong and the fix.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { Code, CsiProxyError } from "../errors.ts";

export interface PrivateDirNames {
  /** How messages name the directory, e.g. `-socket-dir /run/csi-proxy`. */
  label: string;
  /** The flag that chooses it, named in the fixes: `-socket-dir`. */
  flag: string;
  /** Whose uid it must be, in messages: "the daemon's", "csi-proxy's". */
  owner: string;
  /** The refusal: what is wrong and the fix, as one FailedPrecondition. */
  refuse: (what: string, fix: string) => CsiProxyError;
}

const modeText = (mode: number) => `0${(mode & 0o7777).toString(8).padStart(3, "0")}`;

/** Checks (creating it when missing) the absolute directory `dir` for `uid`; throws a CsiProxyError. */
export function securePrivateDir(dir: string, names: PrivateDirNames, uid: number = process.getuid?.() ?? 0): void {
  const missing: string[] = [];
  for (let p = dir; !fs.existsSync(p) && p !== path.dirname(p); p = path.dirname(p)) missing.unshift(p);
  for (const p of missing) {
    try {
      fs.mkdirSync(p, { mode: p === dir ? 0o700 : 0o755 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") continue;
      throw new CsiProxyError(Code.FailedPrecondition, `${names.label}: cannot create ${p}: ${(err as Error).message}`, { cause: err });
    }
  }
  const { refuse, flag } = names;
  const st = fs.lstatSync(dir);
  if (st.isSymbolicLink()) throw refuse(`is a symbolic link to ${fs.readlinkSync(dir)}`, `rm ${dir} (csi-proxy creates it), or pass the real directory as ${flag}`);
  if (!st.isDirectory()) throw refuse("is not a directory", `rm ${dir} (csi-proxy creates it), or choose another ${flag}`);
  if (st.uid !== uid) throw refuse(`is owned by uid ${st.uid}, not ${names.owner} uid ${uid}`, `chown ${uid} ${dir} && chmod 0700 ${dir}`);
  if ((st.mode & 0o022) !== 0) throw refuse(`is group- or world-writable (mode ${modeText(st.mode)})`, `chmod 0700 ${dir}`);
  const owners = uid === 0 ? "only root owns" : `only root or uid ${uid} own`;
  for (let p = fs.realpathSync(path.dirname(dir)); ; p = path.dirname(p)) {
    const ps = fs.statSync(p);
    if (ps.uid !== 0 && ps.uid !== uid) throw refuse(`has a parent ${p} owned by uid ${ps.uid}`, `chown 0 ${p}, or choose a ${flag} under directories ${owners}`);
    if ((ps.mode & 0o022) !== 0 && (ps.mode & 0o1000) === 0) throw refuse(`has a parent ${p} writable by others without the sticky bit (mode ${modeText(ps.mode)})`, `chmod go-w ${p}`);
    if (p === path.dirname(p)) break;
  }
}
