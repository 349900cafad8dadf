/**
 * Securing the persistent state directory (`-state-dir`) once at start-up, before any state in it
 * is read. What is kept there: `smb-mappings.json` (SMB reference counts: a planted file could make
 * csi-proxy remove a mapping someone else uses) and, on Linux, `smb/mounts/` (the CIFS mounts),
 * `smb/credentials/` (transient mount.cifs credentials files) and `iscsi/mutual-chap-secret`.
 *
 * Linux (here):
 *  - a missing directory is created 0700 (missing parents 0755);
 *  - the directory must be owned by the uid csi-proxy runs as; when it is not, its state is refused;
 *  - group/other write on it is removed (0700, plus the o+x traverse bit the SMB host adds for links
 *    into its mounts), with a warning. A POSIX ACL granting write shows in the group bits (its mask)
 *    and is masked off the same way;
 *  - the same for the sub-directories above that exist (lstat: a symbolic link is refused), and the
 *    state files that exist must be regular files (not symbolic links, FIFOs…) owned by csi-proxy's
 *    uid; group/other access to them is removed (0600) with a warning. Reading them later goes
 *    through `readStateFile` (O_NOFOLLOW + fstat), so a file swapped in afterwards is refused too.
 *    Every later use walks the sub-directories again (state-subdir.ts: opened inside held parents
 *    without following links, owner and mode checked), so a link planted after start-up is refused
 *    by the call that meets it.
 * Windows: src/state/state-dir-windows.ts (owner Administrators, protected DACL, file owners).
 *
 * A refusal does not stop the daemon and does not touch unrelated groups: the result names, per
 * area, the FailedPrecondition error that area's state users answer with — SMB (every call) and,
 * on Linux, iSCSI mutual CHAP (SetMutualChapSecret and MUTUAL_CHAP logins; other iSCSI calls do not
 * use the state directory). The error names the directory or file, its owner and what to do.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { CsiProxyError } from "../errors.ts";
import type { JsonStateFile } from "./atomic-file.ts";
import { STATE_FILES, StateDirRefusal, type StateArea, type StateDirLog, type StateDirTrust } from "./state-dir-trust.ts";

/** Linux: the sub-directories the hosts create, in creation order, with their area. */
const LINUX_DIRS: readonly (readonly [string, StateArea])[] = [
  ["smb", "smb"],
  ["smb/mounts", "smb"],
  ["smb/credentials", "smb"],
  ["iscsi", "iscsi"],
];
const areaOfFile = (name: string): StateArea => (name.startsWith("iscsi/") ? "iscsi" : "smb");

export interface SecureStateDirOptions {
  log?: StateDirLog;
  /** Linux: the uid that must own everything (default: this process's). */
  uid?: number;
}

/**
 * Secures `dir` for `platform` (see module doc) and reports which areas may use it. Never throws
 * for a problem with the directory: that is reported in the result.
 */
export async function secureStateDir(dir: string, platform: "linux" | "win32", options: SecureStateDirOptions = {}): Promise<StateDirTrust> {
  if (platform === "win32") {
    const [{ secureWindowsStateDir }, { loadWin32 }] = await Promise.all([import("./state-dir-windows.ts"), import("../win32/win32.ts")]);
    return secureWindowsStateDir(dir, await loadWin32(), { log: options.log });
  }
  return secureLinuxStateDir(dir, options);
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));
const octal = (mode: number) => `0${(mode & 0o7777).toString(8).padStart(3, "0")}`;

/** `uid 65534 (nobody)`: the name from /etc/passwd when there is one. */
export async function describeUid(uid: number): Promise<string> {
  const passwd = await fs.readFile("/etc/passwd", "utf8").catch(() => "");
  const name = passwd
    .split("\n")
    .map((l) => l.split(":"))
    .find((f) => f.length > 2 && Number(f[2]) === uid && f[2] !== "")?.[0];
  return name ? `uid ${uid} (${name})` : `uid ${uid}`;
}

export async function secureLinuxStateDir(dir: string, options: SecureStateDirOptions = {}): Promise<StateDirTrust> {
  const log = options.log ?? { info() {}, warning() {} };
  const uid = options.uid ?? process.getuid?.() ?? 0;
  const refused: Record<StateArea, CsiProxyError | null> = { smb: null, iscsi: null };
  const what = { smb: "SMB calls are refused", iscsi: "iSCSI mutual CHAP (SetMutualChapSecret, MUTUAL_CHAP logins) is refused" };
  const refuse = (areas: StateArea[], problem: string) => {
    const fresh = areas.filter((area) => !refused[area]);
    for (const area of fresh) refused[area] = new StateDirRefusal(`${problem}; ${what[area]} until this is fixed`);
    if (fresh.length) log.warning(`${problem}; ${fresh.map((area) => what[area]).join(" and ")} until this is fixed`);
  };
  const all: StateArea[] = ["smb", "iscsi"];
  const result = (): StateDirTrust => ({ dir, smb: refused.smb, iscsi: refused.iscsi });
  const foreign = async (kind: string, p: string, owner: number) =>
    `${kind} ${p} is owned by ${await describeUid(owner)}, not by the user csi-proxy runs as (${await describeUid(uid)}), so its content is not trusted: ` +
    `make csi-proxy's user its owner (chown ${uid} ${p}) after checking it, or use another -state-dir`;

  // the directory itself
  try {
    await fs.mkdir(path.dirname(dir), { recursive: true, mode: 0o755 });
    const created = await fs.mkdir(dir, { mode: 0o700 }).then(
      () => true,
      (err: NodeJS.ErrnoException) => {
        if (err.code === "EEXIST") return false;
        throw err;
      },
    );
    if (created) await fs.chmod(dir, 0o700);
  } catch (err) {
    refuse(all, `state directory ${dir} cannot be created: ${message(err)}`);
    return result();
  }
  let st: Awaited<ReturnType<typeof fs.stat>>;
  try {
    st = await fs.stat(dir); // an operator may make -state-dir a symbolic link; what counts is the directory
  } catch (err) {
    refuse(all, `state directory ${dir} cannot be examined: ${message(err)}`);
    return result();
  }
  if (!st.isDirectory()) {
    refuse(all, `state directory ${dir} is not a directory`);
    return result();
  }
  if (st.uid !== uid) {
    refuse(all, await foreign("state directory", dir, st.uid));
    return result();
  }
  if (st.mode & 0o022) {
    const mode = 0o700 | (st.mode & 0o011);
    try {
      await fs.chmod(dir, mode);
      log.warning(`state directory ${dir} was writable by group or others (mode ${octal(st.mode)}): tightened to ${octal(mode)}`);
    } catch (err) {
      refuse(all, `state directory ${dir} is writable by group or others (mode ${octal(st.mode)}) and cannot be tightened: ${message(err)}`);
      return result();
    }
  }

  // sub-directories that exist
  for (const [rel, area] of LINUX_DIRS) {
    if (refused[area]) continue;
    const p = path.join(dir, rel);
    let sub: Awaited<ReturnType<typeof fs.lstat>>;
    try {
      sub = await fs.lstat(p);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
      refuse([area], `state directory ${p} cannot be examined: ${message(err)}`);
      continue;
    }
    if (sub.isSymbolicLink()) refuse([area], `${p} is a symbolic link; csi-proxy keeps its state only in directories it owns: remove it`);
    else if (!sub.isDirectory()) refuse([area], `${p} is not a directory: remove it`);
    else if (sub.uid !== uid) refuse([area], await foreign("state directory", p, sub.uid));
    else if (sub.mode & 0o022) {
      const mode = sub.mode & 0o755;
      try {
        await fs.chmod(p, mode);
        log.warning(`state directory ${p} was writable by group or others (mode ${octal(sub.mode)}): tightened to ${octal(mode)}`);
      } catch (err) {
        refuse([area], `state directory ${p} is writable by group or others and cannot be tightened: ${message(err)}`);
      }
    }
  }

  // state files that exist
  for (const rel of STATE_FILES.linux) {
    const area = areaOfFile(rel);
    if (refused[area]) continue;
    const p = path.join(dir, rel);
    let f: Awaited<ReturnType<typeof fs.lstat>>;
    try {
      f = await fs.lstat(p);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
      refuse([area], `state file ${p} cannot be examined: ${message(err)}`);
      continue;
    }
    if (f.isSymbolicLink()) refuse([area], `state file ${p} is a symbolic link; csi-proxy reads state only from regular files it owns: remove it`);
    else if (!f.isFile()) refuse([area], `state file ${p} is not a regular file: remove it`);
    else if (f.uid !== uid) refuse([area], await foreign("state file", p, f.uid));
    else if (f.mode & 0o077) {
      try {
        await fs.chmod(p, 0o600);
        log.warning(`state file ${p} was accessible to group or others (mode ${octal(f.mode)}): tightened to 0600`);
      } catch (err) {
        refuse([area], `state file ${p} is accessible to group or others and cannot be tightened: ${message(err)}`);
      }
    }
  }
  return result();
}

/** `file`, refusing every load and save with `error` when its area's state is not trusted. */
export function guardStateFile<T>(file: JsonStateFile<T>, error: CsiProxyError | null): JsonStateFile<T> {
  if (!error) return file;
  return {
    path: file.path,
    load: () => Promise.reject(error),
    save: () => Promise.reject(error),
  };
}
