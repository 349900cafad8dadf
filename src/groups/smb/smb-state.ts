/**
 * The persistent part of the SMB group: who uses which share root. Kept in one JSON file in the
 * state directory (see src/state/atomic-file.ts for how it is written), so that reference counts
 * survive a daemon restart. Contains no secret (no user name, no password).
 */
import * as path from "node:path";
import { createJsonStateFile, type JsonStateFile } from "../../state/atomic-file.ts";

/** One use of a share root: one NewSmbGlobalMapping that has not been released yet. */
export interface SmbUser {
  /**
   * Identity of the use. `link:<local path>` when the call named a local path (case-folded on
   * Windows): a retried identical call finds its own entry and does not count twice.
   * `call:<uuid>` otherwise: such calls have no identity, so each one counts.
   */
  id: string;
  /** The normalised full remote path the use asked for (`\\Server\Share\sub`). */
  remotePath: string;
  /** The checked local path of the link, when there is one. */
  localPath?: string;
  /** When the use was recorded (ISO 8601), for operators reading the file. */
  since: string;
}

export interface SmbRootState {
  users: SmbUser[];
  /**
   * Set while the mapping is being torn down after its last user left; a daemon that died in
   * between finishes the removal when it starts again.
   */
  removing?: boolean;
}

export interface SmbState {
  version: 1;
  /** Keyed by share root `\\server\share`, lower-cased. */
  roots: Record<string, SmbRootState>;
}

export const emptySmbState = (): SmbState => ({ version: 1, roots: {} });

/** Checks the shape of a parsed state file; throws an Error naming the first problem. */
export function validateSmbState(raw: unknown): SmbState {
  const fail = (what: string): never => {
    throw new Error(`invalid SMB state: ${what}`);
  };
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) fail("not an object");
  const obj = raw as { version?: unknown; roots?: unknown };
  if (obj.version !== 1) fail(`unsupported version ${JSON.stringify(obj.version)}`);
  if (typeof obj.roots !== "object" || obj.roots === null || Array.isArray(obj.roots)) fail("roots is not an object");
  const roots: Record<string, SmbRootState> = {};
  for (const [root, value] of Object.entries(obj.roots as Record<string, unknown>)) {
    if (!/^\\\\[^\\]+\\[^\\]+$/.test(root) || root !== root.toLowerCase()) fail(`bad share root ${JSON.stringify(root)}`);
    const rs = value as { users?: unknown; removing?: unknown };
    if (typeof rs !== "object" || rs === null || !Array.isArray(rs.users)) fail(`users of ${root} is not a list`);
    const users: SmbUser[] = [];
    for (const u of rs.users as unknown[]) {
      const user = u as Partial<SmbUser>;
      if (typeof user !== "object" || user === null || typeof user.id !== "string" || typeof user.remotePath !== "string" || typeof user.since !== "string") {
        fail(`bad user entry under ${root}`);
      }
      if (user.localPath !== undefined && typeof user.localPath !== "string") fail(`bad localPath under ${root}`);
      users.push({ id: user.id!, remotePath: user.remotePath!, since: user.since!, ...(user.localPath !== undefined ? { localPath: user.localPath } : {}) });
    }
    roots[root] = { users, ...(rs.removing === true ? { removing: true } : {}) };
  }
  return { version: 1, roots };
}

/** The reference counts' file in the state directory: `<stateDir>/smb-mappings.json`, mode 0600 (`read`: see createJsonStateFile). */
export function smbStateFile(stateDir: string, options: { read?: (file: string) => Promise<string | null> } = {}): JsonStateFile<SmbState> {
  const pathApi = /^[a-zA-Z]:\\/.test(stateDir) ? path.win32 : path;
  return createJsonStateFile(pathApi.join(stateDir, "smb-mappings.json"), validateSmbState, { mode: 0o600, read: options.read });
}
