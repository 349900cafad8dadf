/**
 * The Win32 functions csi-proxy calls through koffi, declared once. Failures throw
 * {@link Win32Error}, whose gRPC code is chosen from the Win32 error code.
 *
 * Two kinds of declaration (checked by test/windows/win32-layout.test.ts):
 * - `io`: the call touches a path, a file or a device handle, so it can block for as long as a dead
 *   SMB server or a stuck disk does. It runs on koffi's worker threads (`fn.async`), never on the
 *   JS thread; at most {@link MAX_IO_CALLS} run at once (they share libuv's thread pool with fs), a
 *   call waits at most {@link IO_QUEUE_TIMEOUT_MS} for a slot (then Unavailable). GetLastError is
 *   read in koffi's completion callback, where koffi (≥ 3.3) has restored the worker thread's last
 *   error onto the JS thread.
 * - `mem`: memory-only or local kernel-object calls that answer at once (SDDL conversion, the
 *   process token, our own pipe's DACL); synchronous, GetLastError read right after the call.
 *
 * Only loaded on Windows (compose.ts imports the Windows hosts dynamically).
 */
import { CsiProxyError, Code } from "../errors.ts";
import { loadKoffi, type Koffi } from "./native.ts";

/** Win32 error codes this code relies on (winerror.h). */
export const WinError = {
  SUCCESS: 0,
  INVALID_FUNCTION: 1,
  FILE_NOT_FOUND: 2,
  PATH_NOT_FOUND: 3,
  ACCESS_DENIED: 5,
  INVALID_HANDLE: 6,
  NOT_READY: 21,
  SHARING_VIOLATION: 32,
  NOT_SUPPORTED: 50,
  INVALID_PARAMETER: 87,
  CALL_NOT_IMPLEMENTED: 120,
  INSUFFICIENT_BUFFER: 122,
  INVALID_NAME: 123,
  DIR_NOT_EMPTY: 145,
  ALREADY_EXISTS: 183,
  FILENAME_EXCED_RANGE: 206,
  PIPE_BUSY: 231,
  MORE_DATA: 234,
  DIRECTORY: 267,
  INVALID_SECURITY_DESCR: 1338,
  INVALID_OWNER: 1307,
  NONE_MAPPED: 1332,
  FAILED_SERVICE_CONTROLLER_CONNECT: 1063,
  NOT_A_REPARSE_POINT: 4390,
  // Service Control Manager (src/win32/scm.ts)
  DEPENDENT_SERVICES_RUNNING: 1051,
  INVALID_SERVICE_CONTROL: 1052,
  SERVICE_REQUEST_TIMEOUT: 1053,
  SERVICE_NO_THREAD: 1054,
  SERVICE_DATABASE_LOCKED: 1055,
  SERVICE_ALREADY_RUNNING: 1056,
  SERVICE_DISABLED: 1058,
  CIRCULAR_DEPENDENCY: 1059,
  SERVICE_DOES_NOT_EXIST: 1060,
  SERVICE_CANNOT_ACCEPT_CTRL: 1061,
  SERVICE_NOT_ACTIVE: 1062,
  SERVICE_DEPENDENCY_FAIL: 1068,
  SERVICE_LOGON_FAILED: 1069,
  SERVICE_START_HANG: 1070,
  SERVICE_MARKED_FOR_DELETE: 1072,
  SERVICE_DEPENDENCY_DELETED: 1075,
} as const;

const messages: Record<number, string> = {
  1: "Incorrect function.",
  2: "The system cannot find the file specified.",
  3: "The system cannot find the path specified.",
  5: "Access is denied.",
  6: "The handle is invalid.",
  21: "The device is not ready.",
  32: "The process cannot access the file because it is being used by another process.",
  50: "The request is not supported.",
  87: "The parameter is incorrect.",
  120: "This function is not supported on this system.",
  122: "The data area passed to a system call is too small.",
  123: "The filename, directory name, or volume label syntax is incorrect.",
  145: "The directory is not empty.",
  183: "Cannot create a file when that file already exists.",
  206: "The filename or extension is too long.",
  231: "All pipe instances are busy.",
  267: "The directory name is invalid.",
  1338: "The security descriptor structure is invalid.",
  1307: "This security ID may not be assigned as the owner of this object.",
  1332: "No mapping between account names and security IDs was done.",
  1063: "The service process could not connect to the service controller.",
  1051: "A stop control has been sent to a service that other running services are dependent on.",
  1052: "The requested control is not valid for this service.",
  1053: "The service did not respond to the start or control request in a timely fashion.",
  1054: "A thread could not be created for the service.",
  1055: "The service database is locked.",
  1056: "An instance of the service is already running.",
  1058: "The service cannot be started, either because it is disabled or because it has no enabled devices associated with it.",
  1059: "Circular service dependency was specified.",
  1060: "The specified service does not exist as an installed service.",
  1061: "The service cannot accept control messages at this time.",
  1062: "The service has not been started.",
  1068: "The dependency service or group failed to start.",
  1069: "The service did not start due to a logon failure.",
  1070: "After starting, the service hung in a start-pending state.",
  1072: "The specified service has been marked for deletion.",
  1075: "The dependency service does not exist or has been marked for deletion.",
  1314: "A required privilege is not held by the client.",
  4390: "The file or directory is not a reparse point.",
};

/** Windows' system message (FormatMessage, en-US) for a Win32 error code, when this table has it. */
export function win32Message(errno: number): string | undefined {
  return messages[errno];
}

/** gRPC code for a Win32 error code. */
export function codeForWin32(errno: number): Code {
  switch (errno) {
    case WinError.FILE_NOT_FOUND:
    case WinError.PATH_NOT_FOUND:
    case WinError.NOT_A_REPARSE_POINT:
    case WinError.SERVICE_DOES_NOT_EXIST:
      return Code.NotFound;
    case WinError.ACCESS_DENIED:
    case 1314: // ERROR_PRIVILEGE_NOT_HELD
      return Code.PermissionDenied;
    case WinError.ALREADY_EXISTS:
      return Code.AlreadyExists;
    case WinError.INVALID_PARAMETER:
    case WinError.INVALID_NAME:
    case WinError.FILENAME_EXCED_RANGE:
    case WinError.INVALID_SECURITY_DESCR:
      return Code.InvalidArgument;
    case WinError.DIR_NOT_EMPTY:
    case WinError.DIRECTORY:
    case WinError.SHARING_VIOLATION:
    case WinError.NOT_READY:
    case WinError.DEPENDENT_SERVICES_RUNNING:
    case WinError.INVALID_SERVICE_CONTROL:
    case WinError.SERVICE_DISABLED:
    case WinError.CIRCULAR_DEPENDENCY:
    case WinError.SERVICE_NOT_ACTIVE:
    case WinError.SERVICE_DEPENDENCY_FAIL:
    case WinError.SERVICE_LOGON_FAILED:
    case WinError.SERVICE_MARKED_FOR_DELETE:
    case WinError.SERVICE_DEPENDENCY_DELETED:
      return Code.FailedPrecondition;
    case WinError.SERVICE_REQUEST_TIMEOUT:
    case WinError.SERVICE_START_HANG:
      return Code.DeadlineExceeded;
    case WinError.SERVICE_ALREADY_RUNNING:
      return Code.AlreadyExists;
    case WinError.SERVICE_CANNOT_ACCEPT_CTRL:
    case WinError.SERVICE_DATABASE_LOCKED:
    case WinError.SERVICE_NO_THREAD:
      return Code.FailedPrecondition; // final for this call (compat/driver-fragments.ts on "in progress" codes)
    case WinError.NOT_SUPPORTED:
    case WinError.CALL_NOT_IMPLEMENTED:
      return Code.Unimplemented;
    case WinError.PIPE_BUSY:
      return Code.Unavailable;
    default:
      return Code.FailedPrecondition; // the host's failure, named by its Win32 message and number

  }
}

/** A failed Win32 call: `<what>: <Windows message> (win32 error <n>)`, with the code mapped by {@link codeForWin32}. */
export class Win32Error extends CsiProxyError {
  override name = "Win32Error";
  readonly errno: number;
  constructor(what: string, errno: number) {
    super(codeForWin32(errno), `${what}: ${messages[errno] ?? "Windows error"} (win32 error ${errno})`);
    this.errno = errno;
  }
}

export const FILE_ATTRIBUTE_DIRECTORY = 0x10;
export const FILE_ATTRIBUTE_REPARSE_POINT = 0x400;
export const INVALID_FILE_ATTRIBUTES = 0xffffffff;
export const IO_REPARSE_TAG_MOUNT_POINT = 0xa0000003;
export const IO_REPARSE_TAG_SYMLINK = 0xa000000c;
export const SYMBOLIC_LINK_FLAG_DIRECTORY = 0x1;

export const GENERIC_READ = 0x80000000;
export const DELETE = 0x10000;
export const FILE_READ_ATTRIBUTES = 0x80;
export const FILE_FLAG_BACKUP_SEMANTICS = 0x02000000;
export const FILE_FLAG_OPEN_REPARSE_POINT = 0x00200000;
/** FILE_INFO_BY_HANDLE_CLASS FileDispositionInfo (an enum in windows.h). */
const FILE_DISPOSITION_INFO_CLASS = 4;
export const FILE_SHARE_READ = 1, FILE_SHARE_WRITE = 2;
export const OPEN_EXISTING = 3;
export const IOCTL_STORAGE_GET_DEVICE_NUMBER = 0x2d1080;
export const IOCTL_STORAGE_QUERY_PROPERTY = 0x2d1400;
export const READ_CONTROL = 0x20000;
export const WRITE_DAC = 0x40000;
const SE_FILE_OBJECT = 1;
const SE_KERNEL_OBJECT = 6;
export const OWNER_SECURITY_INFORMATION = 1;
export const DACL_SECURITY_INFORMATION = 4;
export const PROTECTED_DACL_SECURITY_INFORMATION = 0x80000000;
export const SDDL_REVISION_1 = 1;
export const TOKEN_QUERY = 0x8;
const TOKEN_USER_CLASS = 1;

const STORAGE_DEVICE_ID_PROPERTY = 2; // STORAGE_PROPERTY_ID StorageDeviceIdProperty

/**
 * The Win32 structures passed through koffi, by their windows.h names and field names (x64). koffi
 * computes sizes and offsets from these; test/windows/win32-layout.test.ts compares every one with
 * MinGW-w64's windows.h. Never `long` (8 bytes in koffi on Linux, 4 on Windows): use uint32_t.
 */
export const WIN32_STRUCTS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  FILETIME: { dwLowDateTime: "uint32_t", dwHighDateTime: "uint32_t" },
  WIN32_FIND_DATAW: {
    dwFileAttributes: "uint32_t",
    ftCreationTime: "FILETIME",
    ftLastAccessTime: "FILETIME",
    ftLastWriteTime: "FILETIME",
    nFileSizeHigh: "uint32_t",
    nFileSizeLow: "uint32_t",
    dwReserved0: "uint32_t",
    dwReserved1: "uint32_t",
    cFileName: "char16_t[260]",
    cAlternateFileName: "char16_t[14]",
  },
  SECURITY_ATTRIBUTES: { nLength: "uint32_t", lpSecurityDescriptor: "void *", bInheritHandle: "int" },
  STORAGE_DEVICE_NUMBER: { DeviceType: "uint32_t", DeviceNumber: "uint32_t", PartitionNumber: "uint32_t" },
  STORAGE_PROPERTY_QUERY: { PropertyId: "int", QueryType: "int", AdditionalParameters: "uint8_t[1]" },
  STORAGE_DEVICE_ID_DESCRIPTOR: { Version: "uint32_t", Size: "uint32_t", NumberOfIdentifiers: "uint32_t", Identifiers: "uint8_t[1]" },
  STORAGE_IDENTIFIER: { CodeSet: "int", Type: "int", IdentifierSize: "uint16_t", NextOffset: "uint16_t", Association: "int", Identifier: "uint8_t[1]" },
  SID_AND_ATTRIBUTES: { Sid: "void *", Attributes: "uint32_t" },
  TOKEN_USER: { User: "SID_AND_ATTRIBUTES" },
  FILE_DISPOSITION_INFO: { DeleteFile: "uint8_t" },
  SERVICE_STATUS: {
    dwServiceType: "uint32_t",
    dwCurrentState: "uint32_t",
    dwControlsAccepted: "uint32_t",
    dwWin32ExitCode: "uint32_t",
    dwServiceSpecificExitCode: "uint32_t",
    dwCheckPoint: "uint32_t",
    dwWaitHint: "uint32_t",
  },
  SERVICE_STATUS_PROCESS: {
    dwServiceType: "uint32_t",
    dwCurrentState: "uint32_t",
    dwControlsAccepted: "uint32_t",
    dwWin32ExitCode: "uint32_t",
    dwServiceSpecificExitCode: "uint32_t",
    dwCheckPoint: "uint32_t",
    dwWaitHint: "uint32_t",
    dwProcessId: "uint32_t",
    dwServiceFlags: "uint32_t",
  },
  QUERY_SERVICE_CONFIGW: {
    dwServiceType: "uint32_t",
    dwStartType: "uint32_t",
    dwErrorControl: "uint32_t",
    lpBinaryPathName: "void *",
    lpLoadOrderGroup: "void *",
    dwTagId: "uint32_t",
    lpDependencies: "void *",
    lpServiceStartName: "void *",
    lpDisplayName: "void *",
  },
  ENUM_SERVICE_STATUSW: { lpServiceName: "void *", lpDisplayName: "void *", ServiceStatus: "SERVICE_STATUS" },
  SERVICE_TABLE_ENTRYW: { lpServiceName: "char16_t *", lpServiceProc: "void *" },
};

type KoffiType = ReturnType<Koffi["struct"]>;
const typeCache = new WeakMap<object, Record<string, KoffiType>>();

/** {@link WIN32_STRUCTS} as koffi types (defined once per koffi instance, in dependency order). */
export function win32Types(koffi: Koffi): Record<string, KoffiType> {
  let types = typeCache.get(koffi);
  if (!types) {
    types = {} as Record<string, KoffiType>;
    for (const [name, fields] of Object.entries(WIN32_STRUCTS)) types[name] = koffi.struct(name, { ...fields });
    typeCache.set(koffi, types);
  }
  return types;
}

/** A Win32 HANDLE as koffi returns `intptr` (a number, or a bigint for large values). */
export type Handle = number | bigint;
const invalidHandle = (h: Handle) => Number(h) === -1 || Number(h) === 0;

type Fn = ((...args: unknown[]) => unknown) & { async: (...args: unknown[]) => void };

/** At most this many `io` calls run at once (libuv's pool has 4 threads, also used by fs). */
export const MAX_IO_CALLS = 2;
/** How long an `io` call waits for a slot while others are held, in ms (then Unavailable). */
export const IO_QUEUE_TIMEOUT_MS = 30_000;

/** `T` with each Promise-returning method also allowed to answer synchronously (fakes in tests). */
export type Awaitable<T> = { [K in keyof T]: T[K] extends (...a: infer A) => Promise<infer R> ? (...a: A) => R | Promise<R> : T[K] };

/** The kinds of declaration (see the module comment). */
export type DeclKind = "io" | "mem";

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
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  readonly #maxIo: number;
  readonly #ioQueueTimeoutMs: number;

  constructor(koffi: Koffi, options: { maxIoCalls?: number; ioQueueTimeoutMs?: number } = {}) {
    this.koffi = koffi;
    this.#maxIo = options.maxIoCalls ?? MAX_IO_CALLS;
    this.#ioQueueTimeoutMs = options.ioQueueTimeoutMs ?? IO_QUEUE_TIMEOUT_MS;
    const k32 = koffi.load("kernel32.dll");
    const adv = koffi.load("advapi32.dll");
    const declare = (kind: DeclKind) => (lib: ReturnType<Koffi["load"]>, proto: string) => {
      const fn = lib.func(proto) as unknown as Fn;
      this.kinds[/(\w+)\s*\(/.exec(proto)![1]] = kind;
      return fn;
    };
    const decl = declare("mem");
    const io = declare("io");
    this.#f = {
      GetLastError: decl(k32, "uint32_t __stdcall GetLastError()"),
      GetFileAttributesW: io(k32, "uint32_t __stdcall GetFileAttributesW(const char16_t *path)"),
      FindFirstFileW: io(k32, "intptr_t __stdcall FindFirstFileW(const char16_t *path, _Out_ uint8_t *data)"),
      FindClose: io(k32, "int __stdcall FindClose(intptr_t h)"),
      SetVolumeMountPointW: io(k32, "int __stdcall SetVolumeMountPointW(const char16_t *mountPoint, const char16_t *volumeName)"),
      DeleteVolumeMountPointW: io(k32, "int __stdcall DeleteVolumeMountPointW(const char16_t *mountPoint)"),
      GetVolumePathNameW: io(k32, "int __stdcall GetVolumePathNameW(const char16_t *path, _Out_ uint8_t *out, uint32_t len)"),
      GetVolumeNameForVolumeMountPointW: io(k32, "int __stdcall GetVolumeNameForVolumeMountPointW(const char16_t *mountPoint, _Out_ uint8_t *out, uint32_t len)"),
      CreateFileW: io(k32, "intptr_t __stdcall CreateFileW(const char16_t *name, uint32_t access, uint32_t share, void *sa, uint32_t disposition, uint32_t flags, void *template)"),
      CloseHandle: io(k32, "int __stdcall CloseHandle(intptr_t h)"),
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
    await this.#slot(name);
    try {
      return await new Promise((resolve, reject) => {
        this.#f[name].async(...args, (e: unknown, r: unknown) => {
          const err = this.#f.GetLastError() as number;
          if (e) reject(e);
          else resolve({ r, err });
        });
      });
    } finally {
      this.#running--;
      this.#waiting.shift()?.();
    }
  }

  /** Waits for one of the {@link MAX_IO_CALLS} slots; Unavailable after {@link IO_QUEUE_TIMEOUT_MS}. */
  #slot(name: string): Promise<void> {
    if (this.#running < this.#maxIo) {
      this.#running++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        clearTimeout(timer);
        this.#running++;
        resolve();
      };
      const timer = setTimeout(() => {
        const i = this.#waiting.indexOf(grant);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(new CsiProxyError(Code.Unavailable, `${name}: ${this.#maxIo} Win32 path or device calls have not returned for ${this.#ioQueueTimeoutMs / 1000} s (a path or device is not answering)`));
      }, this.#ioQueueTimeoutMs);
      this.#waiting.push(grant);
    });
  }

  /** GetFileAttributesW; null when the path does not exist (FILE/PATH_NOT_FOUND). */
  async getFileAttributes(path: string): Promise<number | null> {
    const { r, err } = await this.#io("GetFileAttributesW", path);
    if (r !== INVALID_FILE_ATTRIBUTES) return r as number;
    if (err === WinError.FILE_NOT_FOUND || err === WinError.PATH_NOT_FOUND) return null;
    throw new Win32Error(`GetFileAttributes ${path}`, err);
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
