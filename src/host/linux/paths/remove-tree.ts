/**
 * Recursive removal on Linux: Rmdir(recursive/force) and RmdirContents. The walk is the shared one
 * (src/host/tree-walker.ts: traversal, bounds, stop and identity checks, what a stopped call answers)
 * over directory handles (linux-dir-ops.ts): entries are named relative to held directories, opened
 * `O_NOFOLLOW`, so a symbolic link is always removed itself and never followed, and a parent swapped
 * for a link while the removal runs cannot redirect it.
 *
 * Mount points (an entry whose mount id differs from its directory's, bind mounts included) are
 * never entered and never removed:
 * - before anything is deleted, the mount table is read: a mount at or below the path →
 *   FailedPrecondition naming it, nothing changed (unmount it first);
 * - a mount that appears during the walk is skipped (the walk stops at its boundary) and the call
 *   ends FailedPrecondition naming it, with everything else below the path removed.
 *
 * The named directory is held for the whole walk and checked by the walk before each listing pass and
 * once it is empty (dev + ino + mount id, found at its path through no link); what may have been
 * removed in it where it now is when it moved: at most one listing pass's names and the directories
 * emptied since; nothing after the answer.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { Code, CsiProxyError, failedPrecondition } from "../../../errors.ts";
import { fsError } from "../../fs-error.ts";
import { DirHandle, openDirAt, openDirNoFollow, withParent } from "./dir-handle.ts";
import { readMountTable } from "../kernel/mountinfo.ts";
import { abortError } from "../../../util/stop-if-aborted.ts";
import { emptyTree, MAX_TRIES } from "../../tree-walker.ts";
import { linuxDirId, linuxDirOps } from "./linux-dir-ops.ts";

export { OPEN_DIRS } from "../../tree-walk-bounds.ts";

const errno = (e: unknown) => (e as NodeJS.ErrnoException | null)?.code;
const isWithin = (child: string, parent: string) => parent === "/" || child === parent || child.startsWith(parent + "/");

/** FailedPrecondition when anything is mounted at or below `p` (per the mount table, now). */
async function refuseMountsBelow(p: string, what: string): Promise<void> {
  const mounts = (await readMountTable()).filter((m) => isWithin(m.mountPoint, p)).map((m) => m.mountPoint);
  if (mounts.length > 0) {
    throw failedPrecondition(`refusing to ${what} ${p}: ${[...new Set(mounts)].join(", ")} ${mounts.length === 1 ? "is a mount point" : "are mount points"}; unmount first`);
  }
}

export interface RemoveOptions {
  /** Aborting it stops the walk (within one filesystem call); the call then rejects with what was removed. */
  signal?: AbortSignal;
}

/**
 * Rmdir(force): removes `p` (absolute, its parents canonical) and everything below it, never following
 * a link (a link at `p` is removed itself). Missing `p` or parent: done. Mount points at or below `p`:
 * FailedPrecondition (see module doc). Symbolic link met on the way to `p`: FailedPrecondition.
 * Settles only after every filesystem call it started has settled.
 */
export async function removeTree(p: string, options: RemoveOptions = {}): Promise<void> {
  const { signal } = options;
  if (signal?.aborted) throw abortError(signal);
  await refuseMountsBelow(p, "remove");
  const name = path.posix.basename(p);
  if (name === "" || p === "/") throw new CsiProxyError(Code.InvalidArgument, `${p} has no parent directory`);
  let parent: DirHandle;
  try {
    parent = await openDirNoFollow(path.posix.dirname(p));
  } catch (err) {
    if (err instanceof CsiProxyError && err.code === Code.NotFound) return; // a parent is missing
    throw err;
  }
  try {
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const r = await parent.use(name, (q) => fs.unlink(q)).then(() => "gone", (err: unknown) => {
        if (errno(err) === "ENOENT") return "gone";
        if (errno(err) === "EISDIR") return "dir";
        throw fsError(err, "remove", p);
      });
      if (r === "gone") return;
      let dir: DirHandle | null;
      try {
        dir = await openDirAt(parent, name, p);
      } catch (err) {
        if (err instanceof CsiProxyError && err.code === Code.NotFound) return;
        throw err;
      }
      if (dir === null) continue; // a link or file now: unlink it itself
      let removed: number;
      try {
        if (dir.mountId !== parent.mountId) throw failedPrecondition(`refusing to remove ${p}: it is a mount point; unmount it first`);
        removed = await emptyTree(linuxDirOps, dir, await linuxDirId(dir, p), p, "remove", signal);
      } finally {
        await dir.close();
      }
      const gone = await parent.use(name, (q) => fs.rmdir(q)).then(() => true, (err: unknown) => {
        if (errno(err) === "ENOENT") return true;
        if (errno(err) === "ENOTDIR") return false; // swapped for a link after it was emptied: the link itself goes (next try)
        const reason = errno(err) === "ENOTEMPTY" ? "directory not empty (entries were created in it while it was being removed)" : fsError(err, "remove", p).message;
        throw new CsiProxyError(errno(err) === "ENOTEMPTY" ? Code.FailedPrecondition : fsError(err, "remove", p).code,
          `remove ${p}: ${reason}; removed ${removed} entries below it; ${p} is still there`, { cause: err });
      });
      if (gone) return;
    }
    throw failedPrecondition(`remove ${p}: it keeps changing between a directory and a link or file; gave up after ${MAX_TRIES} tries`);
  } finally {
    await parent.close();
  }
}

/**
 * RmdirContents: removes everything inside the directory `p` (absolute, canonical), keeping `p`.
 * Missing `p`: NotFound. `p` itself or anything below it a mount point: FailedPrecondition.
 * Settles only after every filesystem call it started has settled.
 */
export async function removeContents(p: string, options: RemoveOptions = {}): Promise<void> {
  const { signal } = options;
  if (signal?.aborted) throw abortError(signal);
  await refuseMountsBelow(p, "empty");
  await withParent(p, async (parent, name) => {
    const dir = await openDirAt(parent, name, p);
    if (dir === null) throw failedPrecondition(`empty ${p}: not a directory (or a symbolic link now)`);
    try {
      if (dir.mountId !== parent.mountId) throw failedPrecondition(`refusing to empty ${p}: it is a mount point; unmount first`);
      await emptyTree(linuxDirOps, dir, await linuxDirId(dir, p), p, "empty", signal);
    } finally {
      await dir.close();
    }
  });
}
