/**
 * Reading a Windows state file (`smb-mappings.json`) under the same no-reparse-point rule the
 * start-up check applies (state-dir-windows.ts), at every read: Node's open follows symbolic links
 * and junctions on Windows and cannot pass FILE_FLAG_OPEN_REPARSE_POINT, so the entry itself is
 * first opened with FILE_FLAG_OPEN_REPARSE_POINT (never followed) and without FILE_SHARE_DELETE —
 * while that handle is open nobody can rename, replace or delete the entry — its attributes are
 * checked (a reparse point or a directory is refused), and only then is the content read by name,
 * which now can only reach that same plain file. The handle is closed when the read ends.
 *
 * Contract: null when the file does not exist; FailedPrecondition naming the file for a reparse
 * point or a non-file; other errors as thrown.
 */
import * as fs from "node:fs/promises";
import { failedPrecondition } from "../errors.ts";

const FILE_ATTRIBUTE_DIRECTORY = 0x10;
const FILE_ATTRIBUTE_REPARSE_POINT = 0x400;

/** The Win32 calls this needs (a subset of `Win32`, src/win32/win32.ts). */
export interface NoReparseOpenApi<H> {
  /** CreateFileW(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS, no FILE_SHARE_DELETE); null when missing. */
  openEntryNoFollow(path: string, forDelete: boolean): Promise<H | null>;
  /** GetFileAttributesW; null when missing. */
  getFileAttributes(path: string): Promise<number | null>;
  closeHandle(h: H): Promise<void>;
}

export async function readWindowsStateFile<H>(file: string, api: NoReparseOpenApi<H>, read: (file: string) => Promise<string> = (f) => fs.readFile(f, "utf8")): Promise<string | null> {
  const h = await api.openEntryNoFollow(file, false);
  if (h === null) return null;
  try {
    const attrs = await api.getFileAttributes(file);
    if (attrs === null) return null;
    if (attrs & FILE_ATTRIBUTE_REPARSE_POINT) {
      throw failedPrecondition(`state file ${file} is a reparse point (symbolic link or junction); csi-proxy reads state only from plain files: remove it`);
    }
    if (attrs & FILE_ATTRIBUTE_DIRECTORY) throw failedPrecondition(`state file ${file} is not a regular file: remove it`);
    return await read(file);
  } finally {
    await api.closeHandle(h);
  }
}
