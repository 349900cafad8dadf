/**
 * Security descriptors, DACLs and SIDs through Win32 (advapi32.ts): SDDL conversion and a kernel
 * object's DACL are `mem` (synchronous: memory, or csi-proxy's own pipe handle); a path's security
 * is `io` (off the JS thread, bounded; win32-calls.ts). Memory Windows allocates is freed here
 * (LocalFree) except the descriptor {@link securityDescriptorFromSddl} returns, which the caller
 * frees with `Win32Calls.localFree`. Failures throw {@link Win32Error}.
 */
import { DACL_SECURITY_INFORMATION, OWNER_SECURITY_INFORMATION, PROTECTED_DACL_SECURITY_INFORMATION, SDDL_REVISION_1, SE_FILE_OBJECT, SE_KERNEL_OBJECT } from "./win32-constants.ts";
import type { Handle, Win32Calls } from "./win32-calls.ts";
import { Win32Error, WinError } from "./win32-errors.ts";
import { win32Types } from "./win32-structs.ts";

/** Parses SDDL into a self-relative security descriptor (LocalAlloc'ed; free with `localFree`). InvalidArgument when Windows rejects it. */
export function securityDescriptorFromSddl(c: Win32Calls, sddl: string): unknown {
  const sd: unknown[] = [null];
  const size = [0];
  if (!c.adv.ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl, SDDL_REVISION_1, sd, size)) {
    throw new Win32Error(`invalid security descriptor ${JSON.stringify(sddl)}`, c.lastError());
  }
  return sd[0];
}

/** The DACL pointer inside a security descriptor (null when the SD has none). */
export function daclOf(c: Win32Calls, sd: unknown): unknown {
  const present = [0], dacl: unknown[] = [null], defaulted = [0];
  if (!c.adv.GetSecurityDescriptorDacl(sd, present, dacl, defaulted)) throw new Win32Error("GetSecurityDescriptorDacl", c.lastError());
  return present[0] ? dacl[0] : null;
}

/** SetSecurityInfo(handle, DACL): replaces the kernel object's DACL (protected from inheritance). */
export function setDacl(c: Win32Calls, h: Handle, dacl: unknown, what: string): void {
  const err = c.adv.SetSecurityInfo(h, SE_KERNEL_OBJECT, DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION, null, null, dacl, null);
  if (err !== 0) throw new Win32Error(`SetSecurityInfo ${what}`, err);
}

/** The parts `info` of a security descriptor as SDDL (the string is freed here). */
function sddlOf(c: Win32Calls, sd: unknown, info: number): string {
  const str: unknown[] = [null], len = [0];
  if (!c.adv.ConvertSecurityDescriptorToStringSecurityDescriptorW(sd, SDDL_REVISION_1, info, str, len)) {
    throw new Win32Error("ConvertSecurityDescriptorToStringSecurityDescriptor", c.lastError());
  }
  try {
    return c.koffi.decode.string16(str[0]);
  } finally {
    c.localFree(str[0]);
  }
}

/** The kernel object's DACL as SDDL (`D:P(A;;GA;;;SY)...`). */
export function daclSddl(c: Win32Calls, h: Handle, what: string): string {
  const owner: unknown[] = [null], group: unknown[] = [null], dacl: unknown[] = [null], sacl: unknown[] = [null], sd: unknown[] = [null];
  const err = c.adv.GetSecurityInfo(h, SE_KERNEL_OBJECT, DACL_SECURITY_INFORMATION, owner, group, dacl, sacl, sd);
  if (err !== 0) throw new Win32Error(`GetSecurityInfo ${what}`, err);
  try {
    return sddlOf(c, sd[0], DACL_SECURITY_INFORMATION);
  } finally {
    c.localFree(sd[0]);
  }
}

/** `S-1-5-…` of a SID pointer. */
export function sidString(c: Win32Calls, sid: unknown): string {
  const str: unknown[] = [null];
  if (!c.adv.ConvertSidToStringSidW(sid, str)) throw new Win32Error("ConvertSidToStringSid", c.lastError());
  try {
    return c.koffi.decode.string16(str[0]);
  } finally {
    c.localFree(str[0]);
  }
}

/**
 * CreateDirectoryW(path) with the security descriptor `sddl` from the start (no moment in which
 * the directory has its inherited ACL). False when the path already exists.
 */
export async function createDirectoryWithSecurity(c: Win32Calls, path: string, sddl: string): Promise<boolean> {
  const sd = securityDescriptorFromSddl(c, sddl);
  try {
    const SA = win32Types(c.koffi).SECURITY_ATTRIBUTES;
    const sa = Buffer.alloc(c.koffi.sizeof(SA));
    sa.writeUInt32LE(sa.length, c.koffi.offsetof(SA, "nLength"));
    sa.writeBigUInt64LE(BigInt(c.koffi.address(sd)), c.koffi.offsetof(SA, "lpSecurityDescriptor"));
    const { r, err } = await c.io(c.k32.CreateDirectoryW, path, sa);
    if (r) return true;
    if (err === WinError.ALREADY_EXISTS) return false;
    throw new Win32Error(`CreateDirectory ${path}`, err);
  } finally {
    c.localFree(sd);
  }
}

/**
 * SetFileSecurityW(path, info, <sddl>): sets the parts of the file's or directory's security
 * named by `info` (OWNER_/DACL_SECURITY_INFORMATION) from `sddl`; a `D:P` DACL is protected.
 * (SetNamedSecurityInfoW would do on Windows, but Wine 8 accepts it for files and ignores it.)
 */
export async function setFileSecurity(c: Win32Calls, path: string, sddl: string, info: number): Promise<void> {
  const sd = securityDescriptorFromSddl(c, sddl);
  try {
    const { r, err } = await c.io(c.adv.SetFileSecurityW, path, info, sd);
    if (!r) throw new Win32Error(`SetFileSecurity ${path}`, err);
  } finally {
    c.localFree(sd);
  }
}

/** GetNamedSecurityInfoW(SE_FILE_OBJECT, OWNER|DACL): the owner's SID (`S-1-5-…`) and owner + DACL as SDDL. */
export async function fileSecurity(c: Win32Calls, path: string): Promise<{ ownerSid: string; sddl: string }> {
  const owner: unknown[] = [null], group: unknown[] = [null], dacl: unknown[] = [null], sacl: unknown[] = [null], sd: unknown[] = [null];
  const info = OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION;
  const err = (await c.io(c.adv.GetNamedSecurityInfoW, path, SE_FILE_OBJECT, info, owner, group, dacl, sacl, sd)).r;
  if (err !== 0) throw new Win32Error(`GetNamedSecurityInfo ${path}`, err);
  try {
    const ownerSid = owner[0] ? sidString(c, owner[0]) : "";
    return { ownerSid, sddl: sddlOf(c, sd[0], info) };
  } finally {
    c.localFree(sd[0]);
  }
}
