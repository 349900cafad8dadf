/**
 * The Win32 functions csi-proxy calls through koffi, declared once. Failures throw
 * {@link Win32Error} (win32-errors.ts), whose gRPC code is chosen from the Win32 error code; the
 * constants, structure layouts and the `io` limiter are in win32-constants.ts, win32-structs.ts and
 * io-limiter.ts.
 *
 * Two kinds of declaration (checked by test/windows/win32-layout.test.ts):
 * - `io`: the call touches a path, a file or a device handle, so it can block for as long as a dead
 *   SMB server or a stuck disk does. It runs on koffi's worker threads (`fn.async`), never on the
 *   JS thread; at most MAX_IO_CALLS run at once (they share libuv's thread pool with fs), a
 *   call waits at most IO_QUEUE_TIMEOUT_MS for a slot (then Unavailable; io-limiter.ts). GetLastError is
 *   read in koffi's completion callback, where koffi (≥ 3.3) has restored the worker thread's last
 *   error onto the JS thread.
 * - `mem`: memory-only or local kernel-object calls that answer at once (SDDL conversion, the
 *   process token, our own pipe's DACL); synchronous, GetLastError read right after the call.
 * - `local`: a metadata query of a path on a fixed local drive, synchronous on the JS thread; only
 *   host/windows/local-lookup.ts calls it, under that module's bounds (fixed drives only, never past a
 *   reparse point, paused after a slow answer).
 *
 * Only loaded on Windows (compose.ts imports the Windows hosts dynamically).
 */
import { CsiProxyError, Code } from "../errors.ts";
import { IoLimiter } from "./io-limiter.ts";
import { loadKoffi, type Koffi } from "./native.ts";
import {
  DACL_SECURITY_INFORMATION, DELETE, FILE_ATTRIBUTE_REPARSE_POINT, FILE_DISPOSITION_INFO_CLASS, FILE_FLAG_BACKUP_SEMANTICS,
  FILE_FLAG_OPEN_REPARSE_POINT, FILE_ID_BOTH_DIRECTORY_INFO_CLASS, FILE_ID_BOTH_DIRECTORY_RESTART_INFO_CLASS, FILE_LIST_DIRECTORY,
  FILE_READ_ATTRIBUTES, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, SYNCHRONIZE, GENERIC_READ, INVALID_FILE_ATTRIBUTES,
  IOCTL_STORAGE_GET_DEVICE_NUMBER, IOCTL_STORAGE_QUERY_PROPERTY, OPEN_EXISTING, OWNER_SECURITY_INFORMATION,
  PROTECTED_DACL_SECURITY_INFORMATION, SDDL_REVISION_1, SE_FILE_OBJECT, SE_KERNEL_OBJECT, STORAGE_DEVICE_ID_PROPERTY,
  TOKEN_QUERY, TOKEN_USER_CLASS,
} from "./win32-constants.ts";
import { Win32Error, WinError } from "./win32-errors.ts";
import { win32Types } from "./win32-structs.ts";

/** A Win32 HANDLE as koffi returns `intptr` (a number, or a bigint for large values). */
export type Handle = number | bigint;
const invalidHandle = (h: Handle) => Number(h) === -1 || Number(h) === 0;

type Fn = ((...args: unknown[]) => unknown) & { async: (...args: unknown[]) => void };

/** `T` with each Promise-returning method also allowed to answer synchronously (fakes in tests). */
export type Awaitable<T> = { [K in keyof T]: T[K] extends (...a: infer A) => Promise<infer R> ? (...a: A) => R | Promise<R> : T[K] };

/** The kinds of declaration (see the module comment). */
export type DeclKind = "io" | "mem" | "local";

/** Decodes a NUL-terminated UTF-16LE string from a buffer. */
export function utf16z(buf: Buffer): string {
  const s = buf.toString("utf16le");
  const nul = s.indexOf("\0");
  return nul === -1 ? s : s.slice(0, nul);
}

/** The Win32 API surface used by csi-proxy (kernel32 + advapi32). Create with {@link loadWin32}. */
export class Win32 {
  readonly koffi: Koffi;
  readonly #f: Record<string, Fn>;
  /** Which declarations are `io` (run only through {@link Win32.#io}). */
  readonly kinds: Record<string, DeclKind> = {};
  readonly #limiter: IoLimiter;
  /** WIN32_FILE_ATTRIBUTE_DATA (36 bytes) for {@link Win32.localAttributes}, reused: the JS thread is its only user. */
  readonly #attrData = Buffer.alloc(36);

  constructor(koffi: Koffi, options: { maxIoCalls?: number; ioQueueTimeoutMs?: number } = {}) {
    this.koffi = koffi;
    this.#limiter = new IoLimiter(options);
    const k32 = koffi.load("kernel32.dll");
    const adv = koffi.load("advapi32.dll");
    const declare = (kind: DeclKind) => (lib: ReturnType<Koffi["load"]>, proto: string) => {
      const fn = lib.func(proto) as unknown as Fn;
      this.kinds[/(\w+)\s*\(/.exec(proto)![1]] = kind;
      return fn;
    };
    const decl = declare("mem");
    const io = declare("io");
    const local = declare("local");
    this.#f = {
      GetLastError: decl(k32, "uint32_t __stdcall GetLastError()"),
      GetFileAttributesW: io(k32, "uint32_t __stdcall GetFileAttributesW(const char16_t *path)"),
      GetFileAttributesExW: local(k32, "int __stdcall GetFileAttributesExW(const char16_t *path, int level, _Out_ uint8_t *info)"),
      GetDriveTypeW: io(k32, "uint32_t __stdcall GetDriveTypeW(const char16_t *root)"),
      FindFirstFileW: io(k32, "intptr_t __stdcall FindFirstFileW(const char16_t *path, _Out_ uint8_t *data)"),
      FindClose: io(k32, "int __stdcall FindClose(intptr_t h)"),
      SetVolumeMountPointW: io(k32, "int __stdcall SetVolumeMountPointW(const char16_t *mountPoint, const char16_t *volumeName)"),
      DeleteVolumeMountPointW: io(k32, "int __stdcall DeleteVolumeMountPointW(const char16_t *mountPoint)"),
      GetVolumePathNameW: io(k32, "int __stdcall GetVolumePathNameW(const char16_t *path, _Out_ uint8_t *out, uint32_t len)"),
      GetVolumeNameForVolumeMountPointW: io(k32, "int __stdcall GetVolumeNameForVolumeMountPointW(const char16_t *mountPoint, _Out_ uint8_t *out, uint32_t len)"),
      CreateFileW: io(k32, "intptr_t __stdcall CreateFileW(const char16_t *name, uint32_t access, uint32_t share, void *sa, uint32_t disposition, uint32_t flags, void *template)"),
      CloseHandle: io(k32, "int __stdcall CloseHandle(intptr_t h)"),
      GetFileInformationByHandle: io(k32, "int __stdcall GetFileInformationByHandle(intptr_t h, _Out_ uint8_t *info)"),
      GetFileInformationByHandleEx: io(k32, "int __stdcall GetFileInformationByHandleEx(intptr_t h, int cls, _Out_ uint8_t *info, uint32_t size)"),
      ReOpenFile: io(k32, "intptr_t __stdcall ReOpenFile(intptr_t h, uint32_t access, uint32_t share, uint32_t flags)"),
      SetFileInformationByHandle: io(k32, "int __stdcall SetFileInformationByHandle(intptr_t h, int cls, const uint8_t *info, uint32_t size)"),
      DeviceIoControl: io(k32, "int __stdcall DeviceIoControl(intptr_t h, uint32_t code, const uint8_t *in, uint32_t inLen, _Out_ uint8_t *out, uint32_t outLen, _Out_ uint32_t *returned, void *overlapped)"),
      WaitNamedPipeW: io(k32, "int __stdcall WaitNamedPipeW(const char16_t *name, uint32_t timeoutMs)"),
      CreateSymbolicLinkW: io(k32, "uint8_t __stdcall CreateSymbolicLinkW(const char16_t *link, const char16_t *target, uint32_t flags)"),
      LocalFree: decl(k32, "intptr_t __stdcall LocalFree(void *p)"),
      ConvertStringSecurityDescriptorToSecurityDescriptorW: decl(adv, "int __stdcall ConvertStringSecurityDescriptorToSecurityDescriptorW(const char16_t *sddl, uint32_t revision, _Out_ void **sd, _Out_ uint32_t *size)"),
      GetSecurityDescriptorDacl: decl(adv, "int __stdcall GetSecurityDescriptorDacl(void *sd, _Out_ int *present, _Out_ void **dacl, _Out_ int *defaulted)"),
      SetSecurityInfo: decl(adv, "uint32_t __stdcall SetSecurityInfo(intptr_t h, int type, uint32_t info, void *owner, void *group, void *dacl, void *sacl)"),
      GetSecurityInfo: decl(adv, "uint32_t __stdcall GetSecurityInfo(intptr_t h, int type, uint32_t info, _Out_ void **owner, _Out_ void **group, _Out_ void **dacl, _Out_ void **sacl, _Out_ void **sd)"),
      ConvertSecurityDescriptorToStringSecurityDescriptorW: decl(adv, "int __stdcall ConvertSecurityDescriptorToStringSecurityDescriptorW(void *sd, uint32_t revision, uint32_t info, _Out_ void **str, _Out_ uint32_t *len)"),
      // State directory (src/state/state-dir-windows.ts)
      CreateDirectoryW: io(k32, "int __stdcall CreateDirectoryW(const char16_t *path, const uint8_t *sa)"),
      SetFileSecurityW: io(adv, "int __stdcall SetFileSecurityW(const char16_t *name, uint32_t info, void *sd)"),
      GetNamedSecurityInfoW: io(adv, "uint32_t __stdcall GetNamedSecurityInfoW(const char16_t *name, int type, uint32_t info, _Out_ void **owner, _Out_ void **group, _Out_ void **dacl, _Out_ void **sacl, _Out_ void **sd)"),
      GetSecurityDescriptorOwner: decl(adv, "int __stdcall GetSecurityDescriptorOwner(void *sd, _Out_ void **owner, _Out_ int *defaulted)"),
      ConvertSidToStringSidW: decl(adv, "int __stdcall ConvertSidToStringSidW(void *sid, _Out_ void **str)"),
      ConvertStringSidToSidW: decl(adv, "int __stdcall ConvertStringSidToSidW(const char16_t *str, _Out_ void **sid)"),
      LookupAccountSidW: io(adv, "int __stdcall LookupAccountSidW(void *system, void *sid, _Out_ uint8_t *name, _Inout_ uint32_t *nameLen, _Out_ uint8_t *domain, _Inout_ uint32_t *domainLen, _Out_ int *use)"),
      GetCurrentProcess: decl(k32, "intptr_t __stdcall GetCurrentProcess()"),
      OpenProcessToken: decl(adv, "int __stdcall OpenProcessToken(intptr_t process, uint32_t access, _Out_ intptr_t *token)"),
      GetTokenInformation: decl(adv, "int __stdcall GetTokenInformation(intptr_t token, int cls, _Out_ uint8_t *info, uint32_t len, _Out_ uint32_t *returned)"),
    };
  }

  /** A `mem` declaration, synchronously on the JS thread. */
  #call(name: string, ...args: unknown[]): unknown {
    if (this.kinds[name] !== "mem") throw new CsiProxyError(Code.Internal, `${name} is an io declaration: call it through #io`);
    return this.#f[name](...args);
  }

  #lastError(): number {
    return this.#call("GetLastError") as number;
  }

  /**
   * An `io` declaration on a koffi worker thread: resolves with its result and the thread's last
   * error (read inside koffi's completion callback, where koffi has restored it).
   */
  async #io(name: string, ...args: unknown[]): Promise<{ r: unknown; err: number }> {
    if (this.kinds[name] !== "io") throw new CsiProxyError(Code.Internal, `${name} is a mem declaration`);
    await this.#limiter.acquire(name);
    try {
      return await new Promise((resolve, reject) => {
        this.#f[name].async(...args, (e: unknown, r: unknown) => {
          const err = this.#f.GetLastError() as number;
          if (e) reject(e);
          else resolve({ r, err });
        });
      });
    } finally {
      this.#limiter.release();
    }
  }

  /** GetFileAttributesW; null when the path does not exist (FILE/PATH_NOT_FOUND). */
  async getFileAttributes(path: string): Promise<number | null> {
    const { r, err } = await this.#io("GetFileAttributesW", path);
    if (r !== INVALID_FILE_ATTRIBUTES) return r as number;
    if (err === WinError.FILE_NOT_FOUND || err === WinError.PATH_NOT_FOUND) return null;
    throw new Win32Error(`GetFileAttributes ${path}`, err);
  }

  /**
   * GetFileAttributesExW (GetFileExInfoStandard) synchronously on the JS thread: the attributes,
   * "missing" (FILE/PATH_NOT_FOUND) or "unknown" (any other error). A `local` declaration: call it
   * only under host/windows/local-lookup.ts's bounds.
   */
  localAttributes(path: string): number | "missing" | "unknown" {
    const info = this.#attrData;
    if (this.#f.GetFileAttributesExW(path, 0, info)) return info.readUInt32LE(0);
    const err = this.#lastError();
    return err === WinError.FILE_NOT_FOUND || err === WinError.PATH_NOT_FOUND ? "missing" : "unknown";
  }

  /** GetDriveTypeW of a root (`X:\`): DRIVE_FIXED (3), DRIVE_REMOTE (4), … (0 unknown, 1 no root). */
  async driveType(root: string): Promise<number> {
    const { r } = await this.#io("GetDriveTypeW", root);
    return r as number;
  }

  /**
   * The reparse tag of `path` (FindFirstFileW's dwReserved0, valid when the entry has
   * FILE_ATTRIBUTE_REPARSE_POINT), or null when the path is not a reparse point / does not exist.
   */
  async reparseTag(path: string): Promise<number | null> {
    const attrs = await this.getFileAttributes(path);
    if (attrs === null || (attrs & FILE_ATTRIBUTE_REPARSE_POINT) === 0) return null;
    const T = win32Types(this.koffi);
    const data = Buffer.alloc(this.koffi.sizeof(T.WIN32_FIND_DATAW));
    const { r: h, err } = await this.#io("FindFirstFileW", path, data);
    if (Number(h) === -1) {
      if (err === WinError.FILE_NOT_FOUND || err === WinError.PATH_NOT_FOUND) return null;
      throw new Win32Error(`FindFirstFile ${path}`, err);
    }
    await this.#io("FindClose", h);
    return data.readUInt32LE(this.koffi.offsetof(T.WIN32_FIND_DATAW, "dwReserved0"));
  }

  /** SetVolumeMountPointW(mountPoint, volumeName); mountPoint must end with `\`. */
  async setVolumeMountPoint(mountPoint: string, volumeName: string): Promise<void> {
    const { r, err } = await this.#io("SetVolumeMountPointW", mountPoint, volumeName);
    if (!r) throw new Win32Error(`SetVolumeMountPoint ${mountPoint} -> ${volumeName}`, err);
  }

  /** DeleteVolumeMountPointW(mountPoint); mountPoint must end with `\`. */
  async deleteVolumeMountPoint(mountPoint: string): Promise<void> {
    const { r, err } = await this.#io("DeleteVolumeMountPointW", mountPoint);
    if (!r) throw new Win32Error(`DeleteVolumeMountPoint ${mountPoint}`, err);
  }

  /** GetVolumePathNameW: the mount point (`C:\`, `C:\mnt\x\`) of the volume holding `path`. */
  async getVolumePathName(path: string): Promise<string> {
    const out = Buffer.alloc(2 * 32768);
    const { r, err } = await this.#io("GetVolumePathNameW", path, out, 32768);
    if (!r) throw new Win32Error(`GetVolumePathName ${path}`, err);
    return utf16z(out);
  }

  /** GetVolumeNameForVolumeMountPointW: `\\?\Volume{GUID}\` of the volume mounted at `mountPoint` (ending with `\`). */
  async getVolumeNameForVolumeMountPoint(mountPoint: string): Promise<string> {
    const out = Buffer.alloc(2 * 64);
    const { r, err } = await this.#io("GetVolumeNameForVolumeMountPointW", mountPoint, out, 64);
    if (!r) throw new Win32Error(`GetVolumeNameForVolumeMountPoint ${mountPoint}`, err);
    return utf16z(out);
  }

  /** Opens a device or file read-only (shared read/write) for IOCTLs. */
  async openForQuery(path: string, access = GENERIC_READ): Promise<Handle> {
    const { r, err } = await this.#io("CreateFileW", path, access, FILE_SHARE_READ | FILE_SHARE_WRITE, null, OPEN_EXISTING, 0, null);
    if (invalidHandle(r as Handle)) throw new Win32Error(`CreateFile ${path}`, err);
    return r as Handle;
  }

  /**
   * Opens the entry at `path` itself (FILE_FLAG_OPEN_REPARSE_POINT: a symlink, junction or mount
   * point is opened, never followed; FILE_FLAG_BACKUP_SEMANTICS: directories too), sharing read and
   * write but not delete: while the handle is open nobody can rename, replace or delete the entry.
   * `forDelete` adds DELETE access for {@link deleteByHandle}. Null when the path does not exist.
   */
  async openEntryNoFollow(path: string, forDelete: boolean): Promise<Handle | null> {
    const access = FILE_READ_ATTRIBUTES | (forDelete ? DELETE : 0);
    const flags = FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT;
    const { r, err } = await this.#io("CreateFileW", path, access, FILE_SHARE_READ | FILE_SHARE_WRITE, null, OPEN_EXISTING, flags, null);
    const h = r as Handle;
    if (!invalidHandle(h)) return h;
    if (err === WinError.FILE_NOT_FOUND || err === WinError.PATH_NOT_FOUND) return null;
    throw new Win32Error(`open ${path}`, err);
  }

  /**
   * Marks the entry behind `h` (opened with `forDelete`) for deletion when the handle closes: a link
   * or junction is removed itself, a directory must be empty (ERROR_DIR_NOT_EMPTY otherwise).
   */
  async deleteByHandle(h: Handle, path: string): Promise<void> {
    const info = Buffer.from([1]); // FILE_DISPOSITION_INFO { BOOLEAN DeleteFile = TRUE }
    const { r, err } = await this.#io("SetFileInformationByHandle", h, FILE_DISPOSITION_INFO_CLASS, info, info.length);
    if (!r) throw new Win32Error(`remove ${path}`, err);
  }

  /**
   * The attributes and identity of the object behind `h`, from GetFileInformationByHandle: `id` is
   * "<volume serial>:<file index>" (hex); two handles with the same id refer to the same file or
   * directory (while both exist on a mounted volume).
   */
  async fileInfo(h: Handle, path: string): Promise<{ id: string; attributes: number }> {
    const T = win32Types(this.koffi);
    const info = Buffer.alloc(this.koffi.sizeof(T.BY_HANDLE_FILE_INFORMATION));
    const { r, err } = await this.#io("GetFileInformationByHandle", h, info);
    if (!r) throw new Win32Error(`query ${path}`, err);
    const at = (f: string) => info.readUInt32LE(this.koffi.offsetof(T.BY_HANDLE_FILE_INFORMATION, f));
    const id = [at("dwVolumeSerialNumber"), at("nFileIndexHigh"), at("nFileIndexLow")].map((n) => n.toString(16)).join(":");
    return { id, attributes: at("dwFileAttributes") };
  }

  /**
   * A second handle to the directory behind `h` (ReOpenFile: the same object, no path), for
   * listing it: FILE_LIST_DIRECTORY, sharing read, write and delete (so the walk's own handle, which
   * holds DELETE access, does not refuse it), reparse points not followed. Close it after use.
   */
  async openListing(h: Handle, path: string): Promise<Handle> {
    const flags = FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT;
    const { r, err } = await this.#io("ReOpenFile", h, FILE_LIST_DIRECTORY | SYNCHRONIZE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, flags);
    if (invalidHandle(r as Handle)) throw new Win32Error(`open ${path} for listing`, err);
    return r as Handle;
  }

  /**
   * The next names (without "." and "..") of the directory listed through `h` (from
   * {@link openListing}); `restart` starts again from the first entry. One
   * GetFileInformationByHandleEx(FileIdBothDirectoryInfo) call into a 64 KiB buffer: a few hundred
   * names at most. Null when there are no more.
   */
  async readDirectoryBatch(h: Handle, restart: boolean, path: string): Promise<string[] | null> {
    const T = win32Types(this.koffi);
    const S = T.FILE_ID_BOTH_DIR_INFO;
    const buf = Buffer.alloc(64 * 1024);
    const cls = restart ? FILE_ID_BOTH_DIRECTORY_RESTART_INFO_CLASS : FILE_ID_BOTH_DIRECTORY_INFO_CLASS;
    const { r, err } = await this.#io("GetFileInformationByHandleEx", h, cls, buf, buf.length);
    if (!r) {
      if (err === WinError.NO_MORE_FILES) return null;
      throw new Win32Error(`read directory ${path}`, err);
    }
    const next = this.koffi.offsetof(S, "NextEntryOffset"), len = this.koffi.offsetof(S, "FileNameLength"), name = this.koffi.offsetof(S, "FileName");
    const names: string[] = [];
    for (let at = 0; ; ) {
      const n = buf.toString("utf16le", at + name, at + name + buf.readUInt32LE(at + len));
      if (n !== "." && n !== "..") names.push(n);
      const step = buf.readUInt32LE(at + next);
      if (step === 0) break;
      at += step;
    }
    return names;
  }

  async closeHandle(h: Handle): Promise<void> {
    await this.#io("CloseHandle", h);
  }

  /** DeviceIoControl with an input buffer; returns the bytes the driver wrote. */
  async deviceIoControl(h: Handle, code: number, input: Buffer | null, outSize: number, what: string): Promise<Buffer> {
    const out = Buffer.alloc(outSize);
    const returned = [0];
    const { r, err } = await this.#io("DeviceIoControl", h, code, input, input?.length ?? 0, out, outSize, returned, null);
    if (!r) throw new Win32Error(what, err);
    return out.subarray(0, returned[0]);
  }

  /** IOCTL_STORAGE_GET_DEVICE_NUMBER: the disk number of an open disk handle. */
  async storageDeviceNumber(h: Handle, path: string): Promise<number> {
    const T = win32Types(this.koffi);
    const out = await this.deviceIoControl(h, IOCTL_STORAGE_GET_DEVICE_NUMBER, null, this.koffi.sizeof(T.STORAGE_DEVICE_NUMBER), `IOCTL_STORAGE_GET_DEVICE_NUMBER ${path}`);
    return out.readUInt32LE(this.koffi.offsetof(T.STORAGE_DEVICE_NUMBER, "DeviceNumber"));
  }

  /** IOCTL_STORAGE_QUERY_PROPERTY(StorageDeviceIdProperty, PropertyStandardQuery): the raw STORAGE_DEVICE_ID_DESCRIPTOR. */
  async storageDeviceIdDescriptor(h: Handle, path: string): Promise<Buffer> {
    const T = win32Types(this.koffi);
    const query = Buffer.alloc(this.koffi.sizeof(T.STORAGE_PROPERTY_QUERY));
    query.writeUInt32LE(STORAGE_DEVICE_ID_PROPERTY, this.koffi.offsetof(T.STORAGE_PROPERTY_QUERY, "PropertyId")); // QueryType 0 = PropertyStandardQuery
    return this.deviceIoControl(h, IOCTL_STORAGE_QUERY_PROPERTY, query, 4096, `IOCTL_STORAGE_QUERY_PROPERTY ${path}`);
  }

  /** CreateSymbolicLinkW(link, target, flags): `link` becomes a symbolic link whose text is exactly `target`. */
  async createSymbolicLink(link: string, target: string, flags: number): Promise<void> {
    const { r, err } = await this.#io("CreateSymbolicLinkW", link, target, flags);
    if (!r) throw new Win32Error(`CreateSymbolicLink ${link} -> ${target}`, err);
  }

  /** WaitNamedPipeW; false on timeout / no such pipe. */
  async waitNamedPipe(name: string, timeoutMs: number): Promise<boolean> {
    return Boolean((await this.#io("WaitNamedPipeW", name, timeoutMs)).r);
  }

  /** Parses SDDL into a self-relative security descriptor (LocalAlloc'ed; free with {@link localFree}). */
  securityDescriptorFromSddl(sddl: string): unknown {
    const sd: unknown[] = [null];
    const size = [0];
    if (!this.#call("ConvertStringSecurityDescriptorToSecurityDescriptorW", sddl, SDDL_REVISION_1, sd, size)) {
      throw new Win32Error(`invalid security descriptor ${JSON.stringify(sddl)}`, this.#lastError());
    }
    return sd[0];
  }

  /** The DACL pointer inside a security descriptor (null when the SD has none). */
  daclOf(sd: unknown): unknown {
    const present = [0], dacl: unknown[] = [null], defaulted = [0];
    if (!this.#call("GetSecurityDescriptorDacl", sd, present, dacl, defaulted)) throw new Win32Error("GetSecurityDescriptorDacl", this.#lastError());
    return present[0] ? dacl[0] : null;
  }

  localFree(p: unknown): void {
    if (p) this.#call("LocalFree", p);
  }

  /** SetSecurityInfo(handle, DACL): replaces the object's DACL (protected from inheritance). */
  setDacl(h: Handle, dacl: unknown, what: string): void {
    const err = this.#call("SetSecurityInfo", h, SE_KERNEL_OBJECT, DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION, null, null, dacl, null) as number;
    if (err !== 0) throw new Win32Error(`SetSecurityInfo ${what}`, err);
  }

  /** The object's DACL as SDDL (`D:P(A;;GA;;;SY)...`). */
  daclSddl(h: Handle, what: string): string {
    const owner: unknown[] = [null], group: unknown[] = [null], dacl: unknown[] = [null], sacl: unknown[] = [null], sd: unknown[] = [null];
    const err = this.#call("GetSecurityInfo", h, SE_KERNEL_OBJECT, DACL_SECURITY_INFORMATION, owner, group, dacl, sacl, sd) as number;
    if (err !== 0) throw new Win32Error(`GetSecurityInfo ${what}`, err);
    try {
      const str: unknown[] = [null], len = [0];
      if (!this.#call("ConvertSecurityDescriptorToStringSecurityDescriptorW", sd[0], SDDL_REVISION_1, DACL_SECURITY_INFORMATION, str, len)) {
        throw new Win32Error("ConvertSecurityDescriptorToStringSecurityDescriptor", this.#lastError());
      }
      try {
        return this.koffi.decode.string16(str[0]);
      } finally {
        this.localFree(str[0]);
      }
    } finally {
      this.localFree(sd[0]);
    }
  }

  /**
   * CreateDirectoryW(path) with the security descriptor `sddl` from the start (no moment in which
   * the directory has its inherited ACL). False when the path already exists.
   */
  async createDirectoryWithSecurity(path: string, sddl: string): Promise<boolean> {
    const sd = this.securityDescriptorFromSddl(sddl);
    try {
      const SA = win32Types(this.koffi).SECURITY_ATTRIBUTES;
      const sa = Buffer.alloc(this.koffi.sizeof(SA));
      sa.writeUInt32LE(sa.length, this.koffi.offsetof(SA, "nLength"));
      sa.writeBigUInt64LE(BigInt(this.koffi.address(sd)), this.koffi.offsetof(SA, "lpSecurityDescriptor"));
      const { r, err } = await this.#io("CreateDirectoryW", path, sa);
      if (r) return true;
      if (err === WinError.ALREADY_EXISTS) return false;
      throw new Win32Error(`CreateDirectory ${path}`, err);
    } finally {
      this.localFree(sd);
    }
  }

  /**
   * SetFileSecurityW(path, info, <sddl>): sets the parts of the file's or directory's security
   * named by `info` (OWNER_/DACL_SECURITY_INFORMATION) from `sddl`; a `D:P` DACL is protected.
   * (SetNamedSecurityInfoW would do on Windows, but Wine 8 accepts it for files and ignores it.)
   */
  async setFileSecurity(path: string, sddl: string, info: number): Promise<void> {
    const sd = this.securityDescriptorFromSddl(sddl);
    try {
      const { r, err } = await this.#io("SetFileSecurityW", path, info, sd);
      if (!r) throw new Win32Error(`SetFileSecurity ${path}`, err);
    } finally {
      this.localFree(sd);
    }
  }

  /** GetNamedSecurityInfoW(SE_FILE_OBJECT, OWNER|DACL): the owner's SID (`S-1-5-…`) and owner + DACL as SDDL. */
  async fileSecurity(path: string): Promise<{ ownerSid: string; sddl: string }> {
    const owner: unknown[] = [null], group: unknown[] = [null], dacl: unknown[] = [null], sacl: unknown[] = [null], sd: unknown[] = [null];
    const info = OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION;
    const err = (await this.#io("GetNamedSecurityInfoW", path, SE_FILE_OBJECT, info, owner, group, dacl, sacl, sd)).r as number;
    if (err !== 0) throw new Win32Error(`GetNamedSecurityInfo ${path}`, err);
    try {
      const ownerSid = owner[0] ? this.#sidString(owner[0]) : "";
      const str: unknown[] = [null], len = [0];
      if (!this.#call("ConvertSecurityDescriptorToStringSecurityDescriptorW", sd[0], SDDL_REVISION_1, info, str, len)) {
        throw new Win32Error("ConvertSecurityDescriptorToStringSecurityDescriptor", this.#lastError());
      }
      try {
        return { ownerSid, sddl: this.koffi.decode.string16(str[0]) };
      } finally {
        this.localFree(str[0]);
      }
    } finally {
      this.localFree(sd[0]);
    }
  }

  #sidString(sid: unknown): string {
    const str: unknown[] = [null];
    if (!this.#call("ConvertSidToStringSidW", sid, str)) throw new Win32Error("ConvertSidToStringSid", this.#lastError());
    try {
      return this.koffi.decode.string16(str[0]);
    } finally {
      this.localFree(str[0]);
    }
  }

  /** The SID (`S-1-5-18` for LocalSystem) of the account this process runs as (its token's user). */
  async tokenUserSid(): Promise<string> {
    const token = [0 as Handle];
    if (!this.#call("OpenProcessToken", this.#call("GetCurrentProcess"), TOKEN_QUERY, token)) throw new Win32Error("OpenProcessToken", this.#lastError());
    try {
      const T = win32Types(this.koffi);
      const buf = Buffer.alloc(256); // TOKEN_USER { SID_AND_ATTRIBUTES User { PSID Sid; DWORD Attributes } } + the SID itself
      const returned = [0];
      if (!this.#call("GetTokenInformation", token[0], TOKEN_USER_CLASS, buf, buf.length, returned)) throw new Win32Error("GetTokenInformation(TokenUser)", this.#lastError());
      // Sid points into `buf`; read it at its offset there (checked to lie inside).
      const offset = Number(buf.readBigUInt64LE(this.koffi.offsetof(T.SID_AND_ATTRIBUTES, "Sid")) - BigInt(this.koffi.address(buf)));
      if (!(offset >= this.koffi.sizeof(T.TOKEN_USER) && offset < returned[0])) throw new Win32Error("GetTokenInformation(TokenUser): SID outside the buffer", WinError.INVALID_PARAMETER);
      return this.#sidString(buf.subarray(offset));
    } finally {
      await this.closeHandle(token[0]);
    }
  }

  /** `DOMAIN\name` of a SID (`S-1-…`), or null when Windows cannot name it. */
  async accountName(sid: string): Promise<string | null> {
    const p: unknown[] = [null];
    if (!this.#call("ConvertStringSidToSidW", sid, p)) return null;
    try {
      const name = Buffer.alloc(2 * 256), domain = Buffer.alloc(2 * 256);
      const nameLen = [256], domainLen = [256], use = [0];
      if (!(await this.#io("LookupAccountSidW", null, p[0], name, nameLen, domain, domainLen, use)).r) return null;
      const d = utf16z(domain), n = utf16z(name);
      return d ? `${d}\\${n}` : n;
    } finally {
      this.localFree(p[0]);
    }
  }
}

let win32: Promise<Win32> | undefined;

/** The process-wide Win32 bindings (koffi loaded on first use). */
export function loadWin32(): Promise<Win32> {
  win32 ??= loadKoffi().then((koffi) => new Win32(koffi));
  return win32;
}
