/**
 * Drives, volumes, mount points and storage-device IOCTLs through Win32 (kernel32.ts), each call
 * `io` (off the JS thread, bounded; win32-calls.ts). Failures throw {@link Win32Error}.
 */
import { IOCTL_STORAGE_GET_DEVICE_NUMBER, IOCTL_STORAGE_QUERY_PROPERTY, STORAGE_DEVICE_ID_PROPERTY } from "./win32-constants.ts";
import { utf16z, type Handle, type Win32Calls } from "./win32-calls.ts";
import { Win32Error } from "./win32-errors.ts";
import { win32Types } from "./win32-structs.ts";

/** GetDriveTypeW of a root (`X:\`): DRIVE_FIXED (3), DRIVE_REMOTE (4), … (0 unknown, 1 no root). */
export async function driveType(c: Win32Calls, root: string): Promise<number> {
  return (await c.io(c.k32.GetDriveTypeW, root)).r;
}

/** SetVolumeMountPointW(mountPoint, volumeName); mountPoint must end with `\`. */
export async function setVolumeMountPoint(c: Win32Calls, mountPoint: string, volumeName: string): Promise<void> {
  const { r, err } = await c.io(c.k32.SetVolumeMountPointW, mountPoint, volumeName);
  if (!r) throw new Win32Error(`SetVolumeMountPoint ${mountPoint} -> ${volumeName}`, err);
}

/** DeleteVolumeMountPointW(mountPoint); mountPoint must end with `\`. */
export async function deleteVolumeMountPoint(c: Win32Calls, mountPoint: string): Promise<void> {
  const { r, err } = await c.io(c.k32.DeleteVolumeMountPointW, mountPoint);
  if (!r) throw new Win32Error(`DeleteVolumeMountPoint ${mountPoint}`, err);
}

/** GetVolumePathNameW: the mount point (`C:\`, `C:\mnt\x\`) of the volume holding `path`. */
export async function getVolumePathName(c: Win32Calls, path: string): Promise<string> {
  const out = Buffer.alloc(2 * 32768);
  const { r, err } = await c.io(c.k32.GetVolumePathNameW, path, out, 32768);
  if (!r) throw new Win32Error(`GetVolumePathName ${path}`, err);
  return utf16z(out);
}

/** GetVolumeNameForVolumeMountPointW: `\\?\Volume{GUID}\` of the volume mounted at `mountPoint` (ending with `\`). */
export async function getVolumeNameForVolumeMountPoint(c: Win32Calls, mountPoint: string): Promise<string> {
  const out = Buffer.alloc(2 * 64);
  const { r, err } = await c.io(c.k32.GetVolumeNameForVolumeMountPointW, mountPoint, out, 64);
  if (!r) throw new Win32Error(`GetVolumeNameForVolumeMountPoint ${mountPoint}`, err);
  return utf16z(out);
}

/** DeviceIoControl with an input buffer; returns the bytes the driver wrote. */
export async function deviceIoControl(c: Win32Calls, h: Handle, code: number, input: Buffer | null, outSize: number, what: string): Promise<Buffer> {
  const out = Buffer.alloc(outSize);
  const returned = [0];
  const { r, err } = await c.io(c.k32.DeviceIoControl, h, code, input, input?.length ?? 0, out, outSize, returned, null);
  if (!r) throw new Win32Error(what, err);
  return out.subarray(0, returned[0]);
}

/** IOCTL_STORAGE_GET_DEVICE_NUMBER: the disk number of an open disk handle. */
export async function storageDeviceNumber(c: Win32Calls, h: Handle, path: string): Promise<number> {
  const T = win32Types(c.koffi);
  const out = await deviceIoControl(c, h, IOCTL_STORAGE_GET_DEVICE_NUMBER, null, c.koffi.sizeof(T.STORAGE_DEVICE_NUMBER), `IOCTL_STORAGE_GET_DEVICE_NUMBER ${path}`);
  return out.readUInt32LE(c.koffi.offsetof(T.STORAGE_DEVICE_NUMBER, "DeviceNumber"));
}

/** IOCTL_STORAGE_QUERY_PROPERTY(StorageDeviceIdProperty, PropertyStandardQuery): the raw STORAGE_DEVICE_ID_DESCRIPTOR. */
export async function storageDeviceIdDescriptor(c: Win32Calls, h: Handle, path: string): Promise<Buffer> {
  const T = win32Types(c.koffi);
  const query = Buffer.alloc(c.koffi.sizeof(T.STORAGE_PROPERTY_QUERY));
  query.writeUInt32LE(STORAGE_DEVICE_ID_PROPERTY, c.koffi.offsetof(T.STORAGE_PROPERTY_QUERY, "PropertyId")); // QueryType 0 = PropertyStandardQuery
  return deviceIoControl(c, h, IOCTL_STORAGE_QUERY_PROPERTY, query, 4096, `IOCTL_STORAGE_QUERY_PROPERTY ${path}`);
}
