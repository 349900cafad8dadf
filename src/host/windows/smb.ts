/**
 * SMB on Windows: global mappings through the SMB/iSCSI/System PowerShell worker pool
 * (powershell/scripts/worker-ops-smb-iscsi-system.ts), the local link through CreateSymbolicLinkW (koffi).
 * Pass-through per src/groups/smb/host-api.ts; every decision is smb-service.ts's.
 *
 * - getMapping: `Get-SmbGlobalMapping` (no -RemotePath: that parameter is a CDXML query that may
 *   glob), the instances compared with the root case-insensitively (upstream's WQL `RemotePath =`
 *   is case-insensitive too). Status is MSFT_SmbGlobalMapping.Status (0 OK, 1 Paused,
 *   2 Disconnected, 3 NetworkError, 4 Connecting, 5 Reconnecting, 6 Unavailable).
 * - getMappings: one `Get-SmbGlobalMapping` for every root asked about (start-up and sweeps).
 * - createMapping: `New-SmbGlobalMapping -RemotePath <root> -Credential <PSCredential>
 *   -RequirePrivacy <bool>`; the PSCredential is built inside the worker from the JSON request
 *   (the password travels only in that request line on the worker's stdin: never on a command
 *   line, in an environment variable, a log line or an error message). An empty user name creates
 *   the mapping without a credential, as upstream master does: static
 *   `MSFT_SmbGlobalMapping.Create(RemotePath, RequirePrivacy)` (the cmdlet's -Credential is
 *   mandatory).
 * - removeMapping: `Remove-SmbGlobalMapping -InputObject <the instances> -Force`.
 * - isPathValid: `[System.IO.File]::GetAttributes(path)` in the worker (upstream:
 *   GetFileAttributesW): not found / invalid name → false, other errors (a broken session after a
 *   password change) → thrown; bounded by a short timeout, after which the worker is replaced,
 *   so a hung server never blocks the daemon's thread.
 * - createDirLink: CreateSymbolicLinkW(`\\?\<link>`, `\\?\<remote path>\`,
 *   SYMBOLIC_LINK_FLAG_DIRECTORY), exactly upstream's link (trailing `\` since 76fce59).
 * - readDirLink: Node's lstat/readlink (no follow).
 *
 * Windows error numbers become codes (see {@link smbCodeFor}); the password is removed from any
 * error text.
 */
import * as fs from "node:fs/promises";
import type { SmbHostApi } from "../../groups/smb/host-api.ts";
import { Code, internal } from "../../errors.ts";
import { windowsFsError } from "./windows-fs-error.ts";
import { SYMBOLIC_LINK_FLAG_DIRECTORY } from "../../win32/win32-constants.ts";
import { type Awaitable, type Win32 } from "../../win32/win32.ts";
import type { PowerShellPool } from "./powershell/powershell-pool.ts";
import { list } from "./powershell/cim-output.ts";
import { recode } from "./powershell/worker-errors.ts";

/** The Win32 call the SMB host needs (a {@link Win32}, or a fake in tests). */
export type SmbWin32 = Awaitable<Pick<Win32, "createSymbolicLink">>;

/** MSFT_SmbGlobalMapping.Status values, by number. */
export const SMB_MAPPING_STATUS = ["OK", "Paused", "Disconnected", "NetworkError", "Connecting", "Reconnecting", "Unavailable"] as const;

/** How long the reachability probe may take before the worker is replaced (upstream has no bound). */
export const PROBE_TIMEOUT_MS = 30_000;

const LONG = "\\\\?\\";

/** gRPC code for a Windows error number reported by the SMB client (undefined: keep the pool's mapping). */
export function smbCodeFor(n: number): Code | undefined {
  switch (n) {
    case 2: // ERROR_FILE_NOT_FOUND
    case 3: // ERROR_PATH_NOT_FOUND
    case 67: // ERROR_BAD_NET_NAME: no such share
    case 2250: // NERR_UseNotFound
      return Code.NotFound;
    case 51: // ERROR_REM_NOT_LIST
    case 53: // ERROR_BAD_NETPATH
    case 64: // ERROR_NETNAME_DELETED
    case 121: // ERROR_SEM_TIMEOUT
    case 1203: // ERROR_NO_NET_OR_BAD_PATH
    case 1225: // ERROR_CONNECTION_REFUSED
    case 1231: // ERROR_NETWORK_UNREACHABLE
    case 1232: // ERROR_HOST_UNREACHABLE
    case 1311: // ERROR_NO_LOGON_SERVERS
      return Code.FailedPrecondition; // final for this call, not "still in progress" (compat/driver-fragments.ts)
    case 5: // ERROR_ACCESS_DENIED
    case 86: // ERROR_INVALID_PASSWORD
    case 1312: // ERROR_NO_SUCH_LOGON_SESSION ("use DOMAIN\user", csi-driver-smb known issue)
    case 1326: // ERROR_LOGON_FAILURE
    case 1327: // ERROR_ACCOUNT_RESTRICTION
    case 1330: // ERROR_PASSWORD_EXPIRED
    case 1331: // ERROR_ACCOUNT_DISABLED
    case 1909: // ERROR_ACCOUNT_LOCKED_OUT
    case 1789: // ERROR_TRUSTED_RELATIONSHIP_FAILURE
      return Code.PermissionDenied;
    case 80: // ERROR_FILE_EXISTS
    case 85: // ERROR_ALREADY_ASSIGNED
    case 183: // ERROR_ALREADY_EXISTS
      return Code.AlreadyExists;
    case 50: // ERROR_NOT_SUPPORTED (e.g. the server cannot encrypt and -RequirePrivacy is set)
    case 1219: // ERROR_SESSION_CREDENTIAL_CONFLICT: another mapping to the server uses other credentials
      return Code.FailedPrecondition;
    default:
      return undefined;
  }
}

/** A mapping's status word from what the worker reports (a number, or a name on some hosts). */
export function mappingStatus(v: unknown): string {
  if (typeof v === "number" && Number.isInteger(v) && v >= 0 && v < SMB_MAPPING_STATUS.length) return SMB_MAPPING_STATUS[v];
  if (typeof v === "number") return `Status${v}`;
  if (typeof v === "string" && v !== "") return v;
  return "Unknown";
}

export class WindowsSmbHost implements SmbHostApi {
  readonly #pool: PowerShellPool;
  readonly #win32: SmbWin32;

  constructor(pool: PowerShellPool, win32: SmbWin32) {
    this.#pool = pool;
    this.#win32 = win32;
  }

  async getMapping(root: string): Promise<{ status: string } | null> {
    const raw = await this.#pool.call("smb.getMapping", { remotePath: root }).catch((err) => {
      throw recode(err, smbCodeFor);
    });
    const rows = list("smb.getMapping", raw).map((r) => {
      if (r === null || typeof r !== "object" || Array.isArray(r)) throw internal(`smb.getMapping: unexpected PowerShell output: ${JSON.stringify(r)?.slice(0, 100)}`);
      return mappingStatus((r as Record<string, unknown>).status);
    });
    if (rows.length === 0) return null;
    return { status: rows.includes("OK") ? "OK" : rows[0] };
  }

  /** One `Get-SmbGlobalMapping` listing every mapping; remote paths compared case-insensitively, as getMapping does. */
  async getMappings(roots: readonly string[]): Promise<Map<string, { status: string }>> {
    const found = new Map<string, { status: string }>();
    if (roots.length === 0) return found;
    const raw = await this.#pool.call("smb.listMappings", {}).catch((err) => {
      throw recode(err, smbCodeFor);
    });
    const statuses = new Map<string, string[]>();
    for (const r of list("smb.listMappings", raw)) {
      if (r === null || typeof r !== "object" || Array.isArray(r)) throw internal(`smb.listMappings: unexpected PowerShell output: ${JSON.stringify(r)?.slice(0, 100)}`);
      const row = r as Record<string, unknown>;
      const key = typeof row.remotePath === "string" ? row.remotePath.toLowerCase() : "";
      statuses.set(key, [...(statuses.get(key) ?? []), mappingStatus(row.status)]);
    }
    for (const root of roots) {
      const rows = statuses.get(root.toLowerCase());
      if (rows) found.set(root, { status: rows.includes("OK") ? "OK" : rows[0] });
    }
    return found;
  }

  async createMapping(root: string, username: string, password: string, requirePrivacy: boolean): Promise<void> {
    await this.#pool.call("smb.newMapping", { remotePath: root, username, password, requirePrivacy }).catch((err) => {
      throw recode(err, smbCodeFor, [password]);
    });
  }

  async removeMapping(root: string): Promise<void> {
    await this.#pool.call("smb.removeMapping", { remotePath: root }).catch((err) => {
      throw recode(err, smbCodeFor);
    });
  }

  async isPathValid(path: string): Promise<boolean> {
    const raw = await this.#pool.call("smb.testPath", { path }, { timeoutMs: PROBE_TIMEOUT_MS }).catch((err) => {
      throw recode(err, smbCodeFor);
    });
    if (typeof raw !== "boolean") throw internal(`smb.testPath: unexpected PowerShell output: ${JSON.stringify(raw)?.slice(0, 100)}`);
    return raw;
  }

  async createDirLink(linkPath: string, remotePath: string): Promise<void> {
    const link = linkPath.startsWith(LONG) ? linkPath : LONG + linkPath;
    await this.#win32.createSymbolicLink(link, this.linkTargetFor(remotePath), SYMBOLIC_LINK_FLAG_DIRECTORY);
  }

  async readDirLink(linkPath: string): Promise<{ target: string | null } | null> {
    try {
      const st = await fs.lstat(linkPath);
      if (!st.isSymbolicLink()) return { target: null };
      // libuv shows an NT-namespace target it cannot turn into a drive or UNC path (`\??\\\server\…`,
      // what CreateSymbolicLinkW stores for a `\\?\\\server\…` target) as is: report it in the
      // `\\?\` form createDirLink wrote.
      const target = await fs.readlink(linkPath);
      return { target: target.startsWith("\\??\\") ? LONG + target.slice(4) : target };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw windowsFsError(err, "readlink", linkPath);
    }
  }

  linkTargetFor(remotePath: string): string {
    const withSlash = remotePath.endsWith("\\") ? remotePath : `${remotePath}\\`;
    return withSlash.startsWith(LONG) ? withSlash : LONG + withSlash;
  }
}
