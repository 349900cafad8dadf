/**
 * The socket directory (Linux `-socket-dir`) is refused, never repaired, when anyone but the daemon's
 * user could write it: whoever can write it can replace a socket and sit between the kubelet's drivers
 * and the privileged API. Contract (checked before any endpoint listens, by src/server-main.ts):
 *
 *   - the path is absolute (a relative one would land under whatever the working directory is);
 *   - a missing final directory is created 0700 (missing parents 0755, as `mkdir -p` would);
 *   - the final directory, as found, is a directory (not a symlink to one), owned by the daemon's
 *     user, and neither group- nor world-writable;
 *   - each parent, symlinks resolved (system links such as /var/run → /run are fine), is owned by root
 *     or the daemon's user, and is group/world-writable only with the sticky bit (/tmp), so nobody
 *     else can rename the final directory away and put their own in its place.
 *
 * A refusal is one line: the directory, what is wrong, and the command that fixes it.
 * src/api/socket-dir.test.ts shows each case.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { Code, CsiProxyError } from "../errors.ts";

/** Checks (and when missing, creates) `dir`; throws a CsiProxyError (InvalidArgument / FailedPrecondition) naming `-socket-dir`. */
export function secureSocketDir(dir: string, uid: number = process.getuid?.() ?? 0): void {
  if (!path.isAbsolute(dir)) {
    throw new CsiProxyError(Code.InvalidArgument, `-socket-dir ${JSON.stringify(dir)} must be an absolute path (for example ${path.resolve(dir)})`);
  }
  const parent = path.dirname(dir);
  // One level at a time (not `recursive`), so the error is the kernel's own (EROFS stays EROFS).
  const missing: string[] = [];
  for (let p = dir; !fs.existsSync(p) && p !== path.dirname(p); p = path.dirname(p)) missing.unshift(p);
  for (const p of missing) {
    try {
      fs.mkdirSync(p, { mode: p === dir ? 0o700 : 0o755 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") continue;
      throw new CsiProxyError(Code.FailedPrecondition, `-socket-dir ${dir}: cannot create ${p}: ${(err as Error).message}`, { cause: err });
    }
  }
  const st = fs.lstatSync(dir);
  const refuse = (what: string, fix: string) =>
    new CsiProxyError(Code.FailedPrecondition, `-socket-dir ${dir} ${what}: others could replace its sockets; refusing it (fix: ${fix})`);
  if (st.isSymbolicLink()) throw refuse(`is a symbolic link to ${fs.readlinkSync(dir)}`, `rm ${dir}, or pass the real directory as -socket-dir`);
  if (!st.isDirectory()) throw refuse("is not a directory", `rm ${dir}, or choose another -socket-dir`);
  if (st.uid !== uid) throw refuse(`is owned by uid ${st.uid}, not the daemon's uid ${uid}`, `chown ${uid} ${dir} && chmod 0700 ${dir}`);
  if ((st.mode & 0o022) !== 0) throw refuse(`is group- or world-writable (mode ${modeText(st.mode)})`, `chmod 0700 ${dir}`);
  for (let p = fs.realpathSync(parent); ; p = path.dirname(p)) {
    const ps = fs.statSync(p);
    if (ps.uid !== 0 && ps.uid !== uid) throw refuse(`has a parent ${p} owned by uid ${ps.uid}`, `chown 0 ${p}, or choose a -socket-dir under directories only root or uid ${uid} own`);
    if ((ps.mode & 0o022) !== 0 && (ps.mode & 0o1000) === 0) throw refuse(`has a parent ${p} writable by others without the sticky bit (mode ${modeText(ps.mode)})`, `chmod go-w ${p}`);
    if (p === path.dirname(p)) break;
  }
}

const modeText = (mode: number) => `0${(mode & 0o7777).toString(8).padStart(3, "0")}`;
