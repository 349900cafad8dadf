/**
 * The kernel32.dll functions csi-proxy calls, declared once per koffi instance with their kind
 * (binding.ts). Prototypes are compiled against MinGW-w64's windows.h by
 * test/windows/win32-layout.test.ts. `Handle` arguments are `intptr_t` (a number or bigint).
 */
import { io, oncePerKoffi, sync } from "./binding.ts";
import type { Koffi } from "../util/koffi-loader.ts";

/** A Win32 HANDLE as koffi returns `intptr` (a number, or a bigint for large values). */
export type Handle = number | bigint;
type Buf = Buffer | null;

export const kernel32 = oncePerKoffi((koffi: Koffi) => {
  const k32 = koffi.load("kernel32.dll");
  return {
    GetLastError: sync<[], number, "mem">("mem", k32, "uint32_t __stdcall GetLastError()"),
    LocalFree: sync<[p: unknown], Handle, "mem">("mem", k32, "intptr_t __stdcall LocalFree(void *p)"),
    GetCurrentProcess: sync<[], Handle, "mem">("mem", k32, "intptr_t __stdcall GetCurrentProcess()"),
    // files
    GetFileAttributesW: io<[path: string], number>(k32, "uint32_t __stdcall GetFileAttributesW(const char16_t *path)"),
    GetFileAttributesExW: sync<[path: string, level: number, info: Buffer], number, "local">("local", k32, "int __stdcall GetFileAttributesExW(const char16_t *path, int level, _Out_ uint8_t *info)"),
    FindFirstFileW: io<[path: string, data: Buffer], Handle>(k32, "intptr_t __stdcall FindFirstFileW(const char16_t *path, _Out_ uint8_t *data)"),
    FindClose: io<[h: Handle], number>(k32, "int __stdcall FindClose(intptr_t h)"),
    CreateFileW: io<[name: string, access: number, share: number, sa: null, disposition: number, flags: number, template: null], Handle>(k32, "intptr_t __stdcall CreateFileW(const char16_t *name, uint32_t access, uint32_t share, void *sa, uint32_t disposition, uint32_t flags, void *template)"),
    CloseHandle: io<[h: Handle], number>(k32, "int __stdcall CloseHandle(intptr_t h)"),
    GetFileInformationByHandle: io<[h: Handle, info: Buffer], number>(k32, "int __stdcall GetFileInformationByHandle(intptr_t h, _Out_ uint8_t *info)"),
    GetFileInformationByHandleEx: io<[h: Handle, cls: number, info: Buffer, size: number], number>(k32, "int __stdcall GetFileInformationByHandleEx(intptr_t h, int cls, _Out_ uint8_t *info, uint32_t size)"),
    ReOpenFile: io<[h: Handle, access: number, share: number, flags: number], Handle>(k32, "intptr_t __stdcall ReOpenFile(intptr_t h, uint32_t access, uint32_t share, uint32_t flags)"),
    SetFileInformationByHandle: io<[h: Handle, cls: number, info: Buffer, size: number], number>(k32, "int __stdcall SetFileInformationByHandle(intptr_t h, int cls, const uint8_t *info, uint32_t size)"),
    CreateSymbolicLinkW: io<[link: string, target: string, flags: number], number>(k32, "uint8_t __stdcall CreateSymbolicLinkW(const char16_t *link, const char16_t *target, uint32_t flags)"),
    CreateDirectoryW: io<[path: string, sa: Buffer], number>(k32, "int __stdcall CreateDirectoryW(const char16_t *path, const uint8_t *sa)"),
    WaitNamedPipeW: io<[name: string, timeoutMs: number], number>(k32, "int __stdcall WaitNamedPipeW(const char16_t *name, uint32_t timeoutMs)"),
    // volumes, mount points and devices
    GetDriveTypeW: io<[root: string], number>(k32, "uint32_t __stdcall GetDriveTypeW(const char16_t *root)"),
    SetVolumeMountPointW: io<[mountPoint: string, volumeName: string], number>(k32, "int __stdcall SetVolumeMountPointW(const char16_t *mountPoint, const char16_t *volumeName)"),
    DeleteVolumeMountPointW: io<[mountPoint: string], number>(k32, "int __stdcall DeleteVolumeMountPointW(const char16_t *mountPoint)"),
    GetVolumePathNameW: io<[path: string, out: Buffer, len: number], number>(k32, "int __stdcall GetVolumePathNameW(const char16_t *path, _Out_ uint8_t *out, uint32_t len)"),
    GetVolumeNameForVolumeMountPointW: io<[mountPoint: string, out: Buffer, len: number], number>(k32, "int __stdcall GetVolumeNameForVolumeMountPointW(const char16_t *mountPoint, _Out_ uint8_t *out, uint32_t len)"),
    DeviceIoControl: io<[h: Handle, code: number, input: Buf, inLen: number, out: Buffer, outLen: number, returned: number[], overlapped: null], number>(k32, "int __stdcall DeviceIoControl(intptr_t h, uint32_t code, const uint8_t *in, uint32_t inLen, _Out_ uint8_t *out, uint32_t outLen, _Out_ uint32_t *returned, void *overlapped)"),
    // node-wide lock files (state/node-locks.ts), synchronous: see binding.ts
    lockCreateFileW: sync<[name: string, access: number, share: number, sa: null, disposition: number, flags: number, template: null], Handle, "lock">("lock", k32, "intptr_t __stdcall CreateFileW(const char16_t *name, uint32_t access, uint32_t share, void *sa, uint32_t disposition, uint32_t flags, void *template)"),
    LockFileEx: sync<[file: Handle, flags: number, reserved: number, low: number, high: number, overlapped: Buffer], number, "lock">("lock", k32, "int __stdcall LockFileEx(intptr_t file, uint32_t flags, uint32_t reserved, uint32_t low, uint32_t high, void *overlapped)"),
    UnlockFileEx: sync<[file: Handle, reserved: number, low: number, high: number, overlapped: Buffer], number, "lock">("lock", k32, "int __stdcall UnlockFileEx(intptr_t file, uint32_t reserved, uint32_t low, uint32_t high, void *overlapped)"),
    lockCloseHandle: sync<[h: Handle], number, "lock">("lock", k32, "int __stdcall CloseHandle(intptr_t h)"),
  };
});

export type Kernel32 = ReturnType<typeof kernel32>;
