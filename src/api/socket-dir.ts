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
import * as path from "node:path";
import { Code, CsiProxyError } from "../errors.ts";
import { securePrivateDir } from "../util/private-dir.ts";

/** Checks (and when missing, creates) `dir`; throws a CsiProxyError (InvalidArgument / FailedPrecondition) naming `-socket-dir`. */
export function secureSocketDir(dir: string, uid: number = process.getuid?.() ?? 0): void {
  if (!path.isAbsolute(dir)) {
    throw new CsiProxyError(Code.InvalidArgument, `-socket-dir ${JSON.stringify(dir)} must be an absolute path (for example ${path.resolve(dir)})`);
  }
  securePrivateDir(dir, {
    label: `-socket-dir ${dir}`,
    flag: "-socket-dir",
    owner: "the daemon's",
    refuse: (what, fix) => new CsiProxyError(Code.FailedPrecondition, `-socket-dir ${dir} ${what}: others could replace its sockets; refusing it (fix: ${fix})`),
  }, uid);
}
