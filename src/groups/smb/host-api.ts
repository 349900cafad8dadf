/**
 * Host operations of the SMB group. Implementations are pass-through: they validate nothing and
 * decide nothing (normalisation to the share root, reuse or re-creation of a mapping, reference
 * counting all live in smb-service.ts). Inputs are already validated:
 * - `root` is a share root `\\server\share`, lower-cased;
 * - `remotePath` is a normalised full remote path `\\server\share[\sub...]` (original case, no
 *   trailing `\`, no `.`/`..` components, no control characters);
 * - `linkPath` is an absolute local path that passed the path policy.
 * The password is a secret: implementations never put it on a command line, in an environment
 * variable, in a log line or in an error message (Windows: stdin of the worker; Linux: a 0600
 * credentials file deleted right after use).
 *
 * Windows maps this 1:1 onto Get-/New-/Remove-SmbGlobalMapping (or MSFT_SmbGlobalMapping),
 * Test-Path and directory symlinks; Linux onto a CIFS mount of the share root in a private
 * directory plus symlinks into it.
 */
export interface SmbHostApi {
  /**
   * The host's mapping of `root`, or null when there is none. `status` is the host's own word for
   * its health: "OK" when usable (Windows MSFT_SmbGlobalMapping.Status 0 / `OK`), anything else
   * (e.g. "Disconnected", "Unavailable") when it exists but is not healthy.
   */
  getMapping(root: string): Promise<{ status: string } | null>;
  /**
   * {@link getMapping} for many roots from one listing of the host's mappings (Windows: one
   * Get-SmbGlobalMapping; Linux: one read of the mount table): each mapped root of `roots` with its
   * status; roots without a mapping are absent. The cost does not grow with a tool run per root.
   */
  getMappings(roots: readonly string[]): Promise<Map<string, { status: string }>>;
  /**
   * Creates the mapping of `root`. An empty `username` means "no explicit credential" (Windows:
   * the mapping is created without -Credential; Linux: a guest mount). `requirePrivacy` demands
   * encryption (Windows -RequirePrivacy, Linux the `seal` mount option).
   */
  createMapping(root: string, username: string, password: string, requirePrivacy: boolean): Promise<void>;
  /** Removes the mapping of `root`, forcibly (open handles do not keep it). */
  removeMapping(root: string): Promise<void>;
  /** Whether `path` (a share root or a path inside a mapped share) is reachable now. May throw; the service treats a throw as "not valid". */
  isPathValid(path: string): Promise<boolean>;
  /**
   * Hosts that keep a directory per mapping (Linux: `<state-dir>/smb/mounts/<name>`): removes the
   * empty, unmounted ones that belong to none of `roots` (left by a daemon killed between creating
   * the directory and recording or mounting, or between unmounting and removing it). Called once at
   * start-up, after reconciliation, before serving. Returns what it removed. Absent where mappings
   * have no directory (Windows).
   */
  removeUnusedMappingDirs?(roots: readonly string[]): Promise<string[]>;
  /** Creates a directory symlink at `linkPath` pointing into the mapping: at {@link linkTargetFor}(remotePath). */
  createDirLink(linkPath: string, remotePath: string): Promise<void>;
  /**
   * What is at `linkPath`: nothing (`null`), a symlink (`{ target }`, the raw link text), or
   * something else (`{ target: null }`). Never follows the link.
   */
  readDirLink(linkPath: string): Promise<{ target: string | null } | null>;
  /** The link text {@link createDirLink} writes for `remotePath` (pure; no I/O). */
  linkTargetFor(remotePath: string): string;
}
