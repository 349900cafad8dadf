/**
 * The Windows half of securing `-state-dir` (src/state/state-dir.ts has the Linux half and the
 * shared result). Default `C:\ProgramData\csi-proxy`: below ProgramData, whose ACL lets ordinary
 * users create files and folders, so without this an `smb-mappings.json` planted there before
 * csi-proxy first writes it would be trusted (and could make csi-proxy remove another tool's SMB
 * mapping).
 *
 * At start-up, before any state is read:
 *  1. A missing directory is created with the protected DACL from the start (CreateDirectoryW with
 *     security attributes), missing parents with their inherited ACL.
 *  2. A reparse point (junction, symbolic link) or a non-directory at that path is refused.
 *  3. Owner Administrators and the protected DACL `D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)` are set
 *     (SetFileSecurityW): full control for SYSTEM and Administrators, inherited by whatever is
 *     created inside, nothing inherited from ProgramData, nothing for anyone else. Taking ownership
 *     matters: an owner may always rewrite the DACL, so a directory an ordinary user made first
 *     would otherwise stay theirs. When Windows refuses the new owner, a trusted current owner is
 *     kept with a warning; an untrusted one makes the directory refused.
 *  4. The owner and DACL are read back (GetNamedSecurityInfoW) and logged; the owner must be trusted.
 *  5. Each state file that exists (`smb-mappings.json`) must be a plain file (no reparse point)
 *     owned by a trusted account, else it is refused; a trusted one gets the protected file DACL
 *     `D:P(A;;FA;;;SY)(A;;FA;;;BA)` (replacing ACEs it inherited before step 3).
 *
 * Trusted owners: SYSTEM, Administrators, and the account csi-proxy itself runs as (SYSTEM for the
 * service; files an administrator's elevated process creates are owned by Administrators). Other
 * users cannot create files in the directory once step 3 is done.
 *
 * A refusal does not stop the daemon: only the SMB group (the only user of the state directory on
 * Windows) answers FailedPrecondition naming the directory or file and its owner.
 *
 * The decisions are here, over {@link StateDirSecurityApi}; `Win32` (src/win32/win32.ts)
 * implements it through koffi, unit tests use a fake.
 */
import * as path from "node:path";
import { STATE_FILES, StateDirRefusal, type StateDirLog, type StateDirTrust } from "./state-dir-trust.ts";

export const SYSTEM_SID = "S-1-5-18";
export const ADMINISTRATORS_SID = "S-1-5-32-544";
/** Owner Administrators; protected DACL: SYSTEM and Administrators full control, inherited by files and folders. */
export const STATE_DIR_SDDL = "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)";
export const STATE_DIR_DACL = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)";
export const STATE_FILE_DACL = "D:P(A;;FA;;;SY)(A;;FA;;;BA)";

const OWNER_SECURITY_INFORMATION = 1;
const DACL_SECURITY_INFORMATION = 4;
const FILE_ATTRIBUTE_DIRECTORY = 0x10;
const FILE_ATTRIBUTE_REPARSE_POINT = 0x400;

/** The Win32 calls this needs (a subset of `Win32`). */
export interface StateDirSecurityApi {
  /** GetFileAttributesW; null when the path does not exist. */
  getFileAttributes(path: string): number | null | Promise<number | null>;
  /** CreateDirectoryW with the security descriptor from the start; false when it already exists. */
  createDirectoryWithSecurity(path: string, sddl: string): boolean | Promise<boolean>;
  /** SetFileSecurityW for the parts named by `info` (1 owner, 4 DACL). */
  setFileSecurity(path: string, sddl: string, info: number): void | Promise<void>;
  /** GetNamedSecurityInfoW: owner SID (`S-1-…`) and owner + DACL as SDDL. */
  fileSecurity(path: string): { ownerSid: string; sddl: string } | Promise<{ ownerSid: string; sddl: string }>;
  /** The SID csi-proxy runs as. */
  tokenUserSid(): string | Promise<string>;
  /** `DOMAIN\name` of a SID, or null. */
  accountName(sid: string): string | null | Promise<string | null>;
}

export interface SecureWindowsStateDirOptions {
  log?: StateDirLog;
  /** Creates the missing parents of the state directory (default: fs.mkdir recursive). */
  mkdirParents?: (dir: string) => Promise<void>;
  /** What the directory is called in messages (default "state directory"; the lock directory reuses these checks). */
  noun?: string;
  /** What a refusal stops, ending its message (default: the SMB calls). */
  consequence?: string;
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export async function secureWindowsStateDir(dir: string, api: StateDirSecurityApi, options: SecureWindowsStateDirOptions = {}): Promise<StateDirTrust> {
  const log = options.log ?? { info() {}, warning() {} };
  const noun = options.noun ?? "state directory";
  const consequence = options.consequence ?? "SMB calls are refused until this is fixed (csi-proxy keeps its SMB reference counts there)";
  let self: string | null = null;
  try {
    self = await api.tokenUserSid();
  } catch (err) {
    log.warning(`${noun}: cannot read csi-proxy's own account (${message(err)}); only SYSTEM and Administrators are trusted owners`);
  }
  const trusted = (sid: string) => sid === SYSTEM_SID || sid === ADMINISTRATORS_SID || (self !== null && sid === self);
  const describe = async (sid: string) => {
    let name: string | null = null;
    try {
      name = await api.accountName(sid);
    } catch {
      // unnamed
    }
    return name ? `${name} (${sid})` : sid || "no owner";
  };
  const trustedList = self && self !== SYSTEM_SID && self !== ADMINISTRATORS_SID ? `SYSTEM, Administrators or csi-proxy's own account ${await describe(self)}` : "SYSTEM or Administrators";
  const refuse = (what: string): StateDirTrust => {
    const error = new StateDirRefusal(`${what}; ${consequence}`);
    log.warning(error.message);
    return { dir, smb: error, iscsi: null };
  };

  // 1. create
  try {
    if ((await api.getFileAttributes(dir)) === null) {
      await (options.mkdirParents ?? defaultMkdirParents)(path.win32.dirname(dir));
      if (await api.createDirectoryWithSecurity(dir, STATE_DIR_DACL)) log.info(`${noun} ${dir} created with DACL ${STATE_DIR_DACL}`);
    }
  } catch (err) {
    return refuse(`${noun} ${dir} cannot be examined or created: ${message(err)}`);
  }

  // 2. what is there
  let attrs: number | null;
  try {
    attrs = await api.getFileAttributes(dir);
  } catch (err) {
    return refuse(`${noun} ${dir} cannot be examined: ${message(err)}`);
  }
  if (attrs === null) return refuse(`${noun} ${dir} does not exist`);
  if (attrs & FILE_ATTRIBUTE_REPARSE_POINT) return refuse(`${noun} ${dir} is a junction or symbolic link, which csi-proxy does not follow for its state: replace it with a plain directory`);
  if (!(attrs & FILE_ATTRIBUTE_DIRECTORY)) return refuse(`${noun} ${dir} is not a directory`);

  // 3. owner Administrators + protected DACL
  try {
    await api.setFileSecurity(dir, STATE_DIR_SDDL, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION);
  } catch (ownerErr) {
    try {
      await api.setFileSecurity(dir, STATE_DIR_DACL, DACL_SECURITY_INFORMATION);
    } catch (err) {
      return refuse(`${noun} ${dir}: its DACL cannot be set to ${STATE_DIR_DACL}: ${message(err)}`);
    }
    let owner: string;
    try {
      owner = (await api.fileSecurity(dir)).ownerSid;
    } catch (err) {
      return refuse(`${noun} ${dir}: its owner cannot be read: ${message(err)}`);
    }
    if (!trusted(owner)) {
      return refuse(`${noun} ${dir} is owned by ${await describe(owner)} and Administrators cannot be made its owner (${message(ownerErr)}): an owner can always change its DACL, so its state is not trusted; make Administrators the owner (icacls "${dir}" /setowner Administrators)`);
    }
    log.warning(`${noun} ${dir}: Administrators cannot be made its owner (${message(ownerErr)}); it stays owned by ${await describe(owner)}`);
  }

  // 4. read back
  let security: { ownerSid: string; sddl: string };
  try {
    security = await api.fileSecurity(dir);
  } catch (err) {
    return refuse(`${noun} ${dir}: its security cannot be read back: ${message(err)}`);
  }
  if (!trusted(security.ownerSid)) {
    return refuse(`${noun} ${dir} is owned by ${await describe(security.ownerSid)}, not by ${trustedList}, even after setting the owner: its state is not trusted`);
  }
  log.info(`${noun} ${dir}: ${security.sddl}`);

  // 5. the state files
  for (const name of STATE_FILES.win32) {
    const file = path.win32.join(dir, name);
    let fileAttrs: number | null;
    let owner: string;
    try {
      fileAttrs = await api.getFileAttributes(file);
      if (fileAttrs === null) continue;
      if (fileAttrs & FILE_ATTRIBUTE_REPARSE_POINT) return refuse(`state file ${file} is a symbolic link or junction: csi-proxy reads state only from plain files it wrote; remove it`);
      if (fileAttrs & FILE_ATTRIBUTE_DIRECTORY) return refuse(`state file ${file} is a directory`);
      owner = (await api.fileSecurity(file)).ownerSid;
    } catch (err) {
      return refuse(`state file ${file} cannot be examined: ${message(err)}`);
    }
    if (!trusted(owner)) {
      return refuse(
        `state file ${file} is owned by ${await describe(owner)}, not by ${trustedList}: csi-proxy did not write it and does not trust it; check its content, then delete it or make Administrators its owner`,
      );
    }
    try {
      await api.setFileSecurity(file, STATE_FILE_DACL, DACL_SECURITY_INFORMATION);
    } catch (err) {
      log.warning(`state file ${file}: its DACL cannot be set to ${STATE_FILE_DACL}: ${message(err)}`);
    }
  }
  return { dir, smb: null, iscsi: null };
}

async function defaultMkdirParents(dir: string): Promise<void> {
  const fs = await import("node:fs/promises");
  await fs.mkdir(dir, { recursive: true });
}

