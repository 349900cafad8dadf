/**
 * The windows.h constants csi-proxy passes to Win32 calls (x64 values). Exported UPPER_CASE names
 * are windows.h macros, compared with MinGW-w64's headers by test/windows/win32-layout.test.ts
 * (except the enum values listed in its OWN_CONSTANTS).
 */

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
export const FILE_DISPOSITION_INFO_CLASS = 4;
/** FILE_INFO_BY_HANDLE_CLASS FileIdBothDirectoryInfo / FileIdBothDirectoryRestartInfo (enums in windows.h). */
export const FILE_ID_BOTH_DIRECTORY_INFO_CLASS = 10;
export const FILE_ID_BOTH_DIRECTORY_RESTART_INFO_CLASS = 11;
export const FILE_SHARE_READ = 1, FILE_SHARE_WRITE = 2, FILE_SHARE_DELETE = 4;
export const FILE_LIST_DIRECTORY = 0x1;
export const SYNCHRONIZE = 0x100000;
export const OPEN_EXISTING = 3;
export const IOCTL_STORAGE_GET_DEVICE_NUMBER = 0x2d1080;
export const IOCTL_STORAGE_QUERY_PROPERTY = 0x2d1400;
export const READ_CONTROL = 0x20000;
export const WRITE_DAC = 0x40000;
/** SE_OBJECT_TYPE values (an enum in accctrl.h). */
export const SE_FILE_OBJECT = 1;
export const SE_KERNEL_OBJECT = 6;
export const OWNER_SECURITY_INFORMATION = 1;
export const DACL_SECURITY_INFORMATION = 4;
export const PROTECTED_DACL_SECURITY_INFORMATION = 0x80000000;
export const SDDL_REVISION_1 = 1;
export const TOKEN_QUERY = 0x8;
/** TOKEN_INFORMATION_CLASS TokenUser (an enum in winnt.h). */
export const TOKEN_USER_CLASS = 1;

/** STORAGE_PROPERTY_ID StorageDeviceIdProperty (an enum in winioctl.h). */
export const STORAGE_DEVICE_ID_PROPERTY = 2;
/** GetDriveTypeW: a fixed local disk. */
export const DRIVE_FIXED = 3;
