/**
 * `Win32`: the Win32 calls the Windows hosts use (src/host/windows/*, src/state/*, pipe-security.ts),
 * one object over the modules that make them: files.ts (files, directories, links, pipes),
 * volumes.ts (drives, mount points, storage IOCTLs), security.ts (security descriptors, DACLs,
 * SIDs), tokens.ts (the process's account, account names). The declarations are in kernel32.ts and
 * advapi32.ts, the `io` runner and its limiter in win32-calls.ts and io-limiter.ts; each method's
 * contract is stated where it is implemented. Failures throw {@link Win32Error} (win32-errors.ts).
 *
 * Only loaded on Windows (compose.ts imports the Windows hosts dynamically).
 */
import * as files from "./files.ts";
import { loadKoffi, type Koffi } from "../util/koffi-loader.ts";
import * as security from "./security.ts";
import * as tokens from "./tokens.ts";
import * as volumes from "./volumes.ts";
import { Win32Calls, type Handle, type IoOptions } from "./win32-calls.ts";

export type { DeclKind } from "./binding.ts";
export { utf16z, type Handle } from "./win32-calls.ts";

/** `T` with each Promise-returning method also allowed to answer synchronously (fakes in tests). */
export type Awaitable<T> = { [K in keyof T]: T[K] extends (...a: infer A) => Promise<infer R> ? (...a: A) => R | Promise<R> : T[K] };

/** The Win32 API surface used by csi-proxy (kernel32 + advapi32). Create with {@link loadWin32}. */
export class Win32 {
  readonly calls: Win32Calls;

  constructor(koffi: Koffi, options: IoOptions = {}) {
    this.calls = new Win32Calls(koffi, options);
  }

  get koffi(): Koffi {
    return this.calls.koffi;
  }

  // files.ts
  getFileAttributes = (path: string) => files.getFileAttributes(this.calls, path);
  localAttributes = (path: string) => files.localAttributes(this.calls, path);
  reparseTag = (path: string) => files.reparseTag(this.calls, path);
  openForQuery = (path: string, access?: number) => files.openForQuery(this.calls, path, access);
  openEntryNoFollow = (path: string, forDelete: boolean) => files.openEntryNoFollow(this.calls, path, forDelete);
  deleteByHandle = (h: Handle, path: string) => files.deleteByHandle(this.calls, h, path);
  fileInfo = (h: Handle, path: string) => files.fileInfo(this.calls, h, path);
  openListing = (h: Handle, path: string) => files.openListing(this.calls, h, path);
  readDirectoryBatch = (h: Handle, restart: boolean, path: string) => files.readDirectoryBatch(this.calls, h, restart, path);
  closeHandle = (h: Handle) => files.closeHandle(this.calls, h);
  createSymbolicLink = (link: string, target: string, flags: number) => files.createSymbolicLink(this.calls, link, target, flags);
  waitNamedPipe = (name: string, timeoutMs: number) => files.waitNamedPipe(this.calls, name, timeoutMs);
  // volumes.ts
  driveType = (root: string) => volumes.driveType(this.calls, root);
  setVolumeMountPoint = (mountPoint: string, volumeName: string) => volumes.setVolumeMountPoint(this.calls, mountPoint, volumeName);
  deleteVolumeMountPoint = (mountPoint: string) => volumes.deleteVolumeMountPoint(this.calls, mountPoint);
  getVolumePathName = (path: string) => volumes.getVolumePathName(this.calls, path);
  getVolumeNameForVolumeMountPoint = (mountPoint: string) => volumes.getVolumeNameForVolumeMountPoint(this.calls, mountPoint);
  deviceIoControl = (h: Handle, code: number, input: Buffer | null, outSize: number, what: string) => volumes.deviceIoControl(this.calls, h, code, input, outSize, what);
  storageDeviceNumber = (h: Handle, path: string) => volumes.storageDeviceNumber(this.calls, h, path);
  storageDeviceIdDescriptor = (h: Handle, path: string) => volumes.storageDeviceIdDescriptor(this.calls, h, path);
  // security.ts
  securityDescriptorFromSddl = (sddl: string) => security.securityDescriptorFromSddl(this.calls, sddl);
  daclOf = (sd: unknown) => security.daclOf(this.calls, sd);
  localFree = (p: unknown) => this.calls.localFree(p);
  setDacl = (h: Handle, dacl: unknown, what: string) => security.setDacl(this.calls, h, dacl, what);
  daclSddl = (h: Handle, what: string) => security.daclSddl(this.calls, h, what);
  createDirectoryWithSecurity = (path: string, sddl: string) => security.createDirectoryWithSecurity(this.calls, path, sddl);
  setFileSecurity = (path: string, sddl: string, info: number) => security.setFileSecurity(this.calls, path, sddl, info);
  fileSecurity = (path: string) => security.fileSecurity(this.calls, path);
  // tokens.ts
  tokenUserSid = () => tokens.tokenUserSid(this.calls);
  accountName = (sid: string) => tokens.accountName(this.calls, sid);
}

let win32: Promise<Win32> | undefined;

/** The process-wide Win32 calls (koffi loaded on first use). */
export function loadWin32(): Promise<Win32> {
  win32 ??= loadKoffi().then((koffi) => new Win32(koffi));
  return win32;
}
