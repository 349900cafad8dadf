/**
 * Accounts: the process token's user and the name of a SID, through Win32 (advapi32.ts). The token
 * calls are `mem` (the process's own token); LookupAccountSidW is `io` (it may ask a domain
 * controller; off the JS thread, bounded; win32-calls.ts). Failures throw {@link Win32Error}.
 */
import { closeHandle } from "./files.ts";
import { sidString } from "./security.ts";
import { TOKEN_QUERY, TOKEN_USER_CLASS } from "./win32-constants.ts";
import { utf16z, type Handle, type Win32Calls } from "./win32-calls.ts";
import { Win32Error, WinError } from "./win32-errors.ts";
import { win32Types } from "./win32-structs.ts";

/**
 * The offset in `buf` of the SID a TOKEN_USER filled into `buf` points to: its pointer (at the
 * Sid field) minus the buffer's address; InvalidParameter unless it lies after the TOKEN_USER and
 * inside the `returned` bytes.
 */
export function tokenUserSidOffset(buf: Buffer, base: bigint, sidField: number, tokenUserSize: number, returned: number): number {
  const offset = Number(buf.readBigUInt64LE(sidField) - base);
  if (!(offset >= tokenUserSize && offset < returned)) throw new Win32Error("GetTokenInformation(TokenUser): SID outside the buffer", WinError.INVALID_PARAMETER);
  return offset;
}

/** The SID (`S-1-5-18` for LocalSystem) of the account this process runs as (its token's user). */
export async function tokenUserSid(c: Win32Calls): Promise<string> {
  const token = [0 as Handle];
  if (!c.adv.OpenProcessToken(c.k32.GetCurrentProcess(), TOKEN_QUERY, token)) throw new Win32Error("OpenProcessToken", c.lastError());
  try {
    const T = win32Types(c.koffi);
    const buf = Buffer.alloc(256); // TOKEN_USER { SID_AND_ATTRIBUTES User { PSID Sid; DWORD Attributes } } + the SID itself
    const returned = [0];
    if (!c.adv.GetTokenInformation(token[0], TOKEN_USER_CLASS, buf, buf.length, returned)) throw new Win32Error("GetTokenInformation(TokenUser)", c.lastError());
    // Sid points into `buf`; read it at its offset there.
    const offset = tokenUserSidOffset(buf, BigInt(c.koffi.address(buf)), c.koffi.offsetof(T.SID_AND_ATTRIBUTES, "Sid"), c.koffi.sizeof(T.TOKEN_USER), returned[0]);
    return sidString(c, buf.subarray(offset));
  } finally {
    await closeHandle(c, token[0]);
  }
}

/** `DOMAIN\name` of a SID (`S-1-…`), or null when Windows cannot name it. */
export async function accountName(c: Win32Calls, sid: string): Promise<string | null> {
  const p: unknown[] = [null];
  if (!c.adv.ConvertStringSidToSidW(sid, p)) return null;
  try {
    const name = Buffer.alloc(2 * 256), domain = Buffer.alloc(2 * 256);
    const nameLen = [256], domainLen = [256], use = [0];
    if (!(await c.io(c.adv.LookupAccountSidW, null, p[0], name, nameLen, domain, domainLen, use)).r) return null;
    const d = utf16z(domain), n = utf16z(name);
    return d ? `${d}\\${n}` : n;
  } finally {
    c.localFree(p[0]);
  }
}
