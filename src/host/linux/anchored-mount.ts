/**
 * mount and unmount on a directory handle (dir-handle.ts) instead of a path name, so a parent
 * swapped for a symbolic link while the call runs cannot redirect it (mount(8)/umount(8) resolve the
 * path again, following links).
 *
 * - {@link mountOnDir}: the canonical `target` is opened without following links; mount(2) gets
 *   `/proc/self/fd/<fd>`, which the kernel resolves to exactly that directory. If the directory was
 *   renamed away meanwhile, the mount is undone and the call fails FailedPrecondition.
 * - {@link unmountDir}: the parent of `target` is opened without following links; the mount on the
 *   entry is identified by its mount id and must be the mount table's entry for `target`; umount2
 *   gets `/proc/self/fd/<parent>/<name>` with UMOUNT_NOFOLLOW (a link placed there is refused).
 * Errors are coded: a link on the way or a changed tree FailedPrecondition, missing NotFound, busy
 * FailedPrecondition, a timeout DeadlineExceeded.
 */
import { Code, CsiProxyError, failedPrecondition } from "../../errors.ts";
import { fsError } from "../fs-error.ts";
import { openChildDir, openDirNoFollow, withParent } from "./dir-handle.ts";
import { UMOUNT_NOFOLLOW, type Libc } from "./libc.ts";
import { readMountTable } from "./mountinfo.ts";

function syscallError(err: unknown, what: string, target: string): CsiProxyError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ETIMEDOUT") return new CsiProxyError(Code.DeadlineExceeded, `${what} ${target}: ${(err as Error).message}`, { cause: err });
  if (code === "ENODEV") return failedPrecondition(`${what} ${target}: the kernel does not support this filesystem type (load its module)`);
  return fsError(err, what, target);
}

/** Mounts block device `source` (fsType, no options) on the directory `target` (absolute, canonical). */
export async function mountOnDir(libc: Libc, source: string, target: string, fsType: string): Promise<void> {
  const dir = await openDirNoFollow(target);
  try {
    await libc.mount(source, dir.at(), fsType, 0, null).catch((err) => {
      throw syscallError(err, `mount ${source} on`, target);
    });
    const now = await dir.currentPath();
    if (now !== target) {
      // Renamed while mounting: the mount sits on the held directory, wherever it is now; undo it.
      await unmountDir(libc, now).catch(() => {});
      throw failedPrecondition(`mount ${source} on ${target}: the directory moved to ${now} while mounting; mount undone`);
    }
  } finally {
    await dir.close();
  }
}

/** Unmounts the mount whose mount point is `target` (absolute, canonical). */
export async function unmountDir(libc: Libc, target: string): Promise<void> {
  await withParent(target, async (parent, name) => {
    const child = await openChildDir(parent, name);
    if (child === null) throw failedPrecondition(`unmount ${target}: it is a symbolic link or not a directory now; refusing`);
    const mountId = child.mountId;
    await child.close();
    if (mountId === parent.mountId) throw failedPrecondition(`unmount ${target}: not a mount point`);
    const entry = (await readMountTable()).find((m) => m.mountId === mountId);
    if (entry?.mountPoint !== target) {
      throw failedPrecondition(`unmount ${target}: the mount found there is ${entry ? `at ${entry.mountPoint}` : "gone"} in the mount table; refusing`);
    }
    await libc.umount2(parent.at(name), UMOUNT_NOFOLLOW).catch((err) => {
      throw syscallError(err, "unmount", target);
    });
  });
}
