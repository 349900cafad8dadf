/**
 * The Win32 structure layouts csi-proxy passes through koffi, and their koffi types.
 */
import type { Koffi } from "../util/koffi-loader.ts";

/** SERVICE_STATUS, seven DWORDs; also the start of SERVICE_STATUS_PROCESS. */
const SERVICE_STATUS_FIELDS = {
  dwServiceType: "uint32_t",
  dwCurrentState: "uint32_t",
  dwControlsAccepted: "uint32_t",
  dwWin32ExitCode: "uint32_t",
  dwServiceSpecificExitCode: "uint32_t",
  dwCheckPoint: "uint32_t",
  dwWaitHint: "uint32_t",
} as const;

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
  FILE_ID_BOTH_DIR_INFO: {
    NextEntryOffset: "uint32_t",
    FileIndex: "uint32_t",
    CreationTime: "int64_t",
    LastAccessTime: "int64_t",
    LastWriteTime: "int64_t",
    ChangeTime: "int64_t",
    EndOfFile: "int64_t",
    AllocationSize: "int64_t",
    FileAttributes: "uint32_t",
    FileNameLength: "uint32_t",
    EaSize: "uint32_t",
    ShortNameLength: "int8_t",
    ShortName: "char16_t[12]",
    FileId: "int64_t",
    FileName: "char16_t[1]",
  },
  BY_HANDLE_FILE_INFORMATION: {
    dwFileAttributes: "uint32_t",
    ftCreationTime: "FILETIME",
    ftLastAccessTime: "FILETIME",
    ftLastWriteTime: "FILETIME",
    dwVolumeSerialNumber: "uint32_t",
    nFileSizeHigh: "uint32_t",
    nFileSizeLow: "uint32_t",
    nNumberOfLinks: "uint32_t",
    nFileIndexHigh: "uint32_t",
    nFileIndexLow: "uint32_t",
  },
  SERVICE_STATUS: SERVICE_STATUS_FIELDS,
  /** SERVICE_STATUS's fields, then two more (as winsvc.h declares it). */
  SERVICE_STATUS_PROCESS: {
    ...SERVICE_STATUS_FIELDS,
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
