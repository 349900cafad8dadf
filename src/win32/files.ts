/**
 * Files, directories, links and named pipes through Win32 (kernel32.ts), each call `io` (off the JS
 * thread, bounded; win32-calls.ts) except {@link localAttributes}. Failures throw {@link Win32Error}.
 */
import {
  DELETE, FILE_ATTRIBUTE_REPARSE_POINT, FILE_DISPOSITION_INFO_CLASS, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT,
  FILE_ID_BOTH_DIRECTORY_INFO_CLASS, FILE_ID_BOTH_DIRECTORY_RESTART_INFO_CLASS, FILE_LIST_DIRECTORY, FILE_READ_ATTRIBUTES, FILE_SHARE_DELETE,
  FILE_SHARE_READ, FILE_SHARE_WRITE, GENERIC_READ, INVALID_FILE_ATTRIBUTES, OPEN_EXISTING, SYNCHRONIZE,
} from "./win32-constants.ts";
import { invalidHandle, type Handle, type Win32Calls } from "./win32-calls.ts";
import { Win32Error, WinError } from "./win32-errors.ts";
import { win32Types } from "./win32-structs.ts";

const notFound = (err: number) => err === WinError.FILE_NOT_FOUND || err === WinError.PATH_NOT_FOUND;

/** GetFileAttributesW; null when the path does not exist (FILE/PATH_NOT_FOUND). */
export async function getFileAttributes(c: Win32Calls, path: string): Promise<number | null> {
  const { r, err } = await c.io(c.k32.GetFileAttributesW, path);
  if (r !== INVALID_FILE_ATTRIBUTES) return r;
  if (notFound(err)) return null;
  throw new Win32Error(`GetFileAttributes ${path}`, err);
}

/** WIN32_FILE_ATTRIBUTE_DATA (36 bytes) for {@link localAttributes}, reused: the JS thread is its only user. */
const attrData = Buffer.alloc(36);

/**
 * GetFileAttributesExW (GetFileExInfoStandard) synchronously on the JS thread: the attributes,
 * "missing" (FILE/PATH_NOT_FOUND) or "unknown" (any other error). A `local` declaration: call it
 * only under host/windows/local-lookup.ts's bounds.
 */
export function localAttributes(c: Win32Calls, path: string): number | "missing" | "unknown" {
  if (c.k32.GetFileAttributesExW(path, 0, attrData)) return attrData.readUInt32LE(0);
  return notFound(c.lastError()) ? "missing" : "unknown";
}

/**
 * The reparse tag of `path` (FindFirstFileW's dwReserved0, valid when the entry has
 * FILE_ATTRIBUTE_REPARSE_POINT), or null when the path is not a reparse point / does not exist.
 */
export async function reparseTag(c: Win32Calls, path: string): Promise<number | null> {
  const attrs = await getFileAttributes(c, path);
  if (attrs === null || (attrs & FILE_ATTRIBUTE_REPARSE_POINT) === 0) return null;
  const T = win32Types(c.koffi);
  const data = Buffer.alloc(c.koffi.sizeof(T.WIN32_FIND_DATAW));
  const { r: h, err } = await c.io(c.k32.FindFirstFileW, path, data);
  if (Number(h) === -1) {
    if (notFound(err)) return null;
    throw new Win32Error(`FindFirstFile ${path}`, err);
  }
  await c.io(c.k32.FindClose, h);
  return data.readUInt32LE(c.koffi.offsetof(T.WIN32_FIND_DATAW, "dwReserved0"));
}

/** Opens a device, file or pipe (shared read/write) for IOCTLs or security calls; `access` GENERIC_READ unless given. */
export async function openForQuery(c: Win32Calls, path: string, access = GENERIC_READ): Promise<Handle> {
  const { r, err } = await c.io(c.k32.CreateFileW, path, access, FILE_SHARE_READ | FILE_SHARE_WRITE, null, OPEN_EXISTING, 0, null);
  if (invalidHandle(r)) throw new Win32Error(`CreateFile ${path}`, err);
  return r;
}

/**
 * Opens the entry at `path` itself (FILE_FLAG_OPEN_REPARSE_POINT: a symlink, junction or mount
 * point is opened, never followed; FILE_FLAG_BACKUP_SEMANTICS: directories too), sharing read and
 * write but not delete: while the handle is open nobody can rename, replace or delete the entry.
 * `forDelete` adds DELETE access for {@link deleteByHandle}. Null when the path does not exist.
 */
export async function openEntryNoFollow(c: Win32Calls, path: string, forDelete: boolean): Promise<Handle | null> {
  const access = FILE_READ_ATTRIBUTES | (forDelete ? DELETE : 0);
  const flags = FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT;
  const { r: h, err } = await c.io(c.k32.CreateFileW, path, access, FILE_SHARE_READ | FILE_SHARE_WRITE, null, OPEN_EXISTING, flags, null);
  if (!invalidHandle(h)) return h;
  if (notFound(err)) return null;
  throw new Win32Error(`open ${path}`, err);
}

/**
 * Marks the entry behind `h` (opened with `forDelete`) for deletion when the handle closes: a link
 * or junction is removed itself, a directory must be empty (ERROR_DIR_NOT_EMPTY otherwise).
 */
export async function deleteByHandle(c: Win32Calls, h: Handle, path: string): Promise<void> {
  const info = Buffer.from([1]); // FILE_DISPOSITION_INFO { BOOLEAN DeleteFile = TRUE }
  const { r, err } = await c.io(c.k32.SetFileInformationByHandle, h, FILE_DISPOSITION_INFO_CLASS, info, info.length);
  if (!r) throw new Win32Error(`remove ${path}`, err);
}

/**
 * The attributes and identity of the object behind `h`, from GetFileInformationByHandle: `id` is
 * "<volume serial>:<file index>" (hex); two handles with the same id refer to the same file or
 * directory (while both exist on a mounted volume).
 */
export async function fileInfo(c: Win32Calls, h: Handle, path: string): Promise<{ id: string; attributes: number }> {
  const T = win32Types(c.koffi);
  const info = Buffer.alloc(c.koffi.sizeof(T.BY_HANDLE_FILE_INFORMATION));
  const { r, err } = await c.io(c.k32.GetFileInformationByHandle, h, info);
  if (!r) throw new Win32Error(`query ${path}`, err);
  const at = (f: string) => info.readUInt32LE(c.koffi.offsetof(T.BY_HANDLE_FILE_INFORMATION, f));
  const id = [at("dwVolumeSerialNumber"), at("nFileIndexHigh"), at("nFileIndexLow")].map((n) => n.toString(16)).join(":");
  return { id, attributes: at("dwFileAttributes") };
}

/**
 * A second handle to the directory behind `h` (ReOpenFile: the same object, no path), for
 * listing it: FILE_LIST_DIRECTORY, sharing read, write and delete (so the walk's own handle, which
 * holds DELETE access, does not refuse it), reparse points not followed. Close it after use.
 */
export async function openListing(c: Win32Calls, h: Handle, path: string): Promise<Handle> {
  const flags = FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT;
  const { r, err } = await c.io(c.k32.ReOpenFile, h, FILE_LIST_DIRECTORY | SYNCHRONIZE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, flags);
  if (invalidHandle(r)) throw new Win32Error(`open ${path} for listing`, err);
  return r;
}

/**
 * The names (without "." and "..") in a FILE_ID_BOTH_DIR_INFO chain as GetFileInformationByHandleEx
 * fills `buf`; the field offsets are koffi's (`offsets`).
 */
export function parseDirectoryBatch(buf: Buffer, offsets: { next: number; len: number; name: number }): string[] {
  const names: string[] = [];
  for (let at = 0; ; ) {
    const n = buf.toString("utf16le", at + offsets.name, at + offsets.name + buf.readUInt32LE(at + offsets.len));
    if (n !== "." && n !== "..") names.push(n);
    const step = buf.readUInt32LE(at + offsets.next);
    if (step === 0) break;
    at += step;
  }
  return names;
}

/**
 * The next names (without "." and "..") of the directory listed through `h` (from
 * {@link openListing}); `restart` starts again from the first entry. One
 * GetFileInformationByHandleEx(FileIdBothDirectoryInfo) call into a 64 KiB buffer: a few hundred
 * names at most. Null when there are no more.
 */
export async function readDirectoryBatch(c: Win32Calls, h: Handle, restart: boolean, path: string): Promise<string[] | null> {
  const S = win32Types(c.koffi).FILE_ID_BOTH_DIR_INFO;
  const buf = Buffer.alloc(64 * 1024);
  const cls = restart ? FILE_ID_BOTH_DIRECTORY_RESTART_INFO_CLASS : FILE_ID_BOTH_DIRECTORY_INFO_CLASS;
  const { r, err } = await c.io(c.k32.GetFileInformationByHandleEx, h, cls, buf, buf.length);
  if (!r) {
    if (err === WinError.NO_MORE_FILES) return null;
    throw new Win32Error(`read directory ${path}`, err);
  }
  return parseDirectoryBatch(buf, { next: c.koffi.offsetof(S, "NextEntryOffset"), len: c.koffi.offsetof(S, "FileNameLength"), name: c.koffi.offsetof(S, "FileName") });
}

export async function closeHandle(c: Win32Calls, h: Handle): Promise<void> {
  await c.io(c.k32.CloseHandle, h);
}

/** CreateSymbolicLinkW(link, target, flags): `link` becomes a symbolic link whose text is exactly `target`. */
export async function createSymbolicLink(c: Win32Calls, link: string, target: string, flags: number): Promise<void> {
  const { r, err } = await c.io(c.k32.CreateSymbolicLinkW, link, target, flags);
  if (!r) throw new Win32Error(`CreateSymbolicLink ${link} -> ${target}`, err);
}

/** WaitNamedPipeW; false on timeout / no such pipe. */
export async function waitNamedPipe(c: Win32Calls, name: string, timeoutMs: number): Promise<boolean> {
  return Boolean((await c.io(c.k32.WaitNamedPipeW, name, timeoutMs)).r);
}
