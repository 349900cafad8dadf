/**
 * Recursive removal on Windows: removeAll (Rmdir recursive) and removeContents (RmdirContents). The
 * walk is the shared one (src/host/tree-walker.ts: traversal, bounds, stop and identity checks, what
 * a stopped call answers) over Win32 handles (win32-dir-ops.ts): every entry is opened as itself,
 * inspected and deleted through that handle; links and junctions are removed, never followed; a
 * volume mount point at or below the path stops the walk with FailedPrecondition. The named
 * directory is held (without FILE_SHARE_DELETE) for the whole walk and, for removeAll, deleted
 * through that handle once it is empty.
 */
import { Code, CsiProxyError } from "../../errors.ts";
import { abortError } from "../../util/stop-if-aborted.ts";
import { emptyTree } from "../tree-walker.ts";
import { openEntry, win32DirOps, type RemoveTreeWin32 } from "./win32-dir-ops.ts";

/**
 * Removes `p` and everything below it (`contents`: only what is below it; `p` must be a directory).
 * Missing `p`: nothing to do for removal of the entry; NotFound for `contents`. Never follows a link
 * or junction; a volume mount point at or below `p`: FailedPrecondition (`p` itself: before anything
 * is removed). The caller holds `p`'s ancestors. Settles only when every handle of the walk is closed.
 */
export async function removeTreeWindows(win32: RemoveTreeWin32, p: string, contents: boolean, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) throw abortError(signal);
  const what = contents ? "empty" : "remove";
  // the named entry itself: refused, or removed as an entry, before any walk (errors as they are)
  const root = await openEntry(win32, p, !contents, what);
  if (root.kind !== "dir") {
    if (contents && root.kind === "missing") throw new CsiProxyError(Code.NotFound, `read directory ${p}: no such directory`);
    return;
  }
  try {
    await emptyTree(win32DirOps(win32), root.h, root.id, p, what, signal, contents ? undefined : async () => {
      if (signal?.aborted) throw abortError(signal);
      await win32.deleteByHandle(root.h, p);
    });
  } finally {
    await win32.closeHandle(root.h);
  }
}
