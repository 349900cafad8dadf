/**
 * The directory operations of the recursive delete (src/host/tree-walker.ts) on Windows, through
 * Win32 handles (koffi, or a test double):
 * - every entry is opened as itself (FILE_FLAG_OPEN_REPARSE_POINT: a link, junction or mount point is
 *   opened, never followed), inspected through that handle (GetFileInformationByHandle: attributes
 *   and identity, volume serial + file index) and deleted through it (FileDispositionInfo), so what is
 *   deleted is what was inspected. A reparse point is never entered: a volume mount point
 *   (IO_REPARSE_TAG_MOUNT_POINT) stops the walk with FailedPrecondition, any other one is removed as
 *   an entry;
 * - directories being emptied are held without FILE_SHARE_DELETE (nobody can rename or delete them
 *   meanwhile); a level is re-entered by its `\\?\` path;
 * - listing: a listing handle re-opened from the level's own handle (no path), read with
 *   GetFileInformationByHandleEx(FileIdBothDirectoryInfo) from the start, closed before the pass
 *   returns; names only (each entry is inspected when it is opened), so nothing runs concurrently. A
 *   directory is read to its end only when a pass finds it empty: it is deleted after a pass that
 *   saw it empty, and the walk checks the named directory before every pass, so no directory is
 *   deleted after the named one was found moved.
 */
import * as fs from "node:fs/promises";
import { Code, CsiProxyError } from "../../errors.ts";
import { leftInDir } from "../remove-summary.ts";
import type { DirOps, Opened } from "../tree-walker.ts";
import { FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT, IO_REPARSE_TAG_MOUNT_POINT } from "../../win32/win32-constants.ts";
import type { Awaitable, Handle, Win32 } from "../../win32/win32.ts";
import * as path from "node:path";

/** The Win32 calls the walk needs (a {@link Win32}, or a test double). */
export type RemoveTreeWin32 = Awaitable<Pick<Win32, "reparseTag" | "openEntryNoFollow" | "fileInfo" | "openListing" | "readDirectoryBatch" | "deleteByHandle" | "closeHandle">>;

/**
 * The path Win32 is given: drive-letter paths get the `\\?\` prefix, so paths longer than MAX_PATH
 * (a deep tree) reach the filesystem; they are already normalised (built by path.join). Others
 * (the test doubles' POSIX paths) are passed as they are.
 */
export const win32Path = (p: string) => (/^[A-Za-z]:\\/.test(p) ? `\\\\?\\${p}` : p);

/**
 * Opens the entry `p` itself and inspects it: a directory (not a reparse point) is returned held,
 * with its identity; anything else is deleted through its handle when `forDelete` ("removed"), else
 * refused (FailedPrecondition); a volume mount point: FailedPrecondition naming `what`. Missing:
 * "missing". Only a returned directory's handle stays open.
 */
export async function openEntry(win32: RemoveTreeWin32, p: string, forDelete: boolean, what = "remove"): Promise<Opened<Handle, string>> {
  const h = await win32.openEntryNoFollow(win32Path(p), forDelete);
  if (h === null) return { kind: "missing" };
  let keep = false;
  try {
    const { id, attributes } = await win32.fileInfo(h, p);
    const dir = (attributes & FILE_ATTRIBUTE_DIRECTORY) !== 0;
    const reparse = (attributes & FILE_ATTRIBUTE_REPARSE_POINT) !== 0;
    if (dir && reparse && (await win32.reparseTag(win32Path(p))) === IO_REPARSE_TAG_MOUNT_POINT) {
      throw new CsiProxyError(Code.FailedPrecondition, `${what} ${p}: a volume is mounted there; unmount it first`);
    }
    if (!forDelete && reparse) {
      throw new CsiProxyError(Code.FailedPrecondition, `${p} is a link or junction now (the path changed since it was checked); refusing to follow it`);
    }
    if (dir && !reparse) {
      keep = true;
      return { kind: "dir", h, id };
    }
    if (!forDelete) throw new CsiProxyError(Code.FailedPrecondition, `${what} ${p}: not a directory`);
    // a file, or a link or junction (the link itself, never followed)
    await win32.deleteByHandle(h, p);
    return { kind: "removed" };
  } finally {
    if (!keep) await win32.closeHandle(h);
  }
}

/** Win32 {@link DirOps} over handles (module doc); identities are `fileInfo` ids. */
export function win32DirOps(win32: RemoveTreeWin32): DirOps<Handle, string> {
  return {
    sep: path.sep,
    unlinksInFlight: 1,
    same: (a, b) => a === b,
    async list(h, _id, want, skip, shown) {
      const names: string[] = [];
      let end = false;
      const lh = await win32.openListing(h, shown);
      try {
        for (let restart = true; names.length < want; restart = false) {
          const batch = await win32.readDirectoryBatch(lh, restart, shown);
          if (batch === null) {
            end = true;
            break;
          }
          for (const n of batch) if (names.length < want && !skip?.has(n)) names.push(n);
        }
      } finally {
        await win32.closeHandle(lh);
      }
      // read to its end counts only when the pass found nothing: a directory is removed after a pass that saw it
      // empty, and the walk checks the named directory again before that pass (as before every pass)
      return { entries: names.map((name) => ({ name, dir: null })), end: end && names.length === 0 };
    },
    openChild: (_parent, _parentId, _name, shown) => openEntry(win32, shown, true),
    unlink: async (_parent, _name, shown) => {
      throw new CsiProxyError(Code.Internal, `remove ${shown}: removal by name is not used on Windows (entries are removed through the handle inspected)`);
    },
    async removeDir(_parent, _name, child, shown) {
      try {
        await win32.deleteByHandle(child, shown);
        return "gone";
      } finally {
        await win32.closeHandle(child);
      }
    },
    async reopen(_child, shown) {
      const h = await win32.openEntryNoFollow(win32Path(shown), true);
      if (h === null) return null;
      try {
        return { h, id: (await win32.fileInfo(h, shown)).id };
      } catch (err) {
        await win32.closeHandle(h);
        throw err;
      }
    },
    // the entry itself at `shown` (no link followed) must be the held directory; a failing check rejects with its error
    async whyNotNamed(_h, id, shown) {
      const h = await win32.openEntryNoFollow(win32Path(shown), false);
      if (h === null) return "it is gone";
      try {
        return (await win32.fileInfo(h, shown)).id === id ? null : "it is another entry now";
      } finally {
        await win32.closeHandle(h);
      }
    },
    async leftIn(_h, shown) {
      const there = await fs.lstat(shown).then(() => true, () => false);
      return { there, left: there ? await leftInDir(shown) : `${shown} is gone` };
    },
    close: async (h) => {
      await win32.closeHandle(h);
    },
  };
}
