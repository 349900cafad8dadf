/**
 * mount and unmount on a directory handle (dir-handle.ts) instead of a path name, so a parent
 * swapped for a symbolic link or exchanged with another directory while the call runs cannot
 * redirect it (mount(8)/umount(8) resolve the path again, following links).
 *
 * - {@link mountOnDir}: the parent of the canonical `target` is opened without following links and
 *   held, then `target` inside it; mount(2) gets `/proc/self/fd/<fd>` of the held target, which the
 *   kernel resolves to exactly that directory. The mount made is identified by its mount id (the
 *   one new entry of /proc/self/mountinfo whose parent is the held directory's mount, with the
 *   device's major:minor, else with `source` as its source), never by a path. When that mount's mount point is not `target` (the directory or a
 *   parent was renamed or exchanged meanwhile), it is undone by id and the undo is verified in the
 *   mount table: FailedPrecondition "… mount undone" only when the mount id is gone; otherwise
 *   FailedPrecondition naming the device, where it is mounted now and its mount id, and the daemon
 *   retries the unmount in the background (undo-retry.ts: bounded schedule, each attempt logged).
 *   A retry that finds the mount back at `target` itself stops and keeps it (the caller's own retry
 *   of MountVolume may have answered OK on it; a mount at the asked target is never undone behind it).
 * - {@link unmountDir}: the parent of `target` is opened without following links; the mount on the
 *   entry is identified by its mount id and must be the mount table's entry for `target`; umount2
 *   gets `/proc/self/fd/<parent>/<name>` with UMOUNT_NOFOLLOW (a link placed there is refused).
 * Handles are owned by the `withParent` scope / try-finally around every use, and every
 * `/proc/self/fd/N` string exists only inside the handle's `use` (dir-handle.ts): no descriptor
 * number or such string outlives its handle; the background retry holds none.
 * Errors are coded: a link on the way or a changed tree FailedPrecondition, missing NotFound, busy
 * FailedPrecondition, a timeout DeadlineExceeded.
 */
import * as fs from "node:fs/promises";
import { Code, CsiProxyError, failedPrecondition } from "../../../errors.ts";
import { fsError } from "../../fs-error.ts";
import { openChildDir, withParent, type DirHandle } from "../paths/dir-handle.ts";
import { UMOUNT_NOFOLLOW, type Libc } from "../kernel/libc.ts";
import { readMountTable, type MountEntry } from "../kernel/mountinfo.ts";
import { describeSchedule, retryUndo, UNDO_RETRY_DELAYS_MS, type UndoLog } from "../../../util/undo-retry.ts";

export interface MountOptions {
  /** Where background cleanup retries log (default stderr). */
  log?: UndoLog;
  /** The retry schedule (default UNDO_RETRY_DELAYS_MS). */
  retryDelaysMs?: readonly number[];
}

function syscallError(err: unknown, what: string, target: string): CsiProxyError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ETIMEDOUT") return new CsiProxyError(Code.DeadlineExceeded, `${what} ${target}: ${(err as Error).message}`, { cause: err });
  if (code === "ENODEV") return failedPrecondition(`${what} ${target}: the kernel does not support this filesystem type (load its module)`);
  return fsError(err, what, target);
}

/** "major:minor" of a block device node, as /proc/self/mountinfo shows it. */
async function deviceNumber(source: string): Promise<string | null> {
  const st = await fs.stat(source, { bigint: true }).catch(() => null);
  if (st === null || !st.isBlockDevice()) return null;
  const dev = st.rdev;
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
  return `${major}:${minor}`;
}

/** A mount entry's identity: its id, reused by the kernel only after it is gone, with what it mounts. */
const keyOf = (m: MountEntry) => `${m.mountId}|${m.parentId}|${m.device}|${m.root}`;

/** The current entry of mount `m` (same id, parent, device and root), or undefined when it is gone. */
async function findMount(m: MountEntry): Promise<MountEntry | undefined> {
  const key = keyOf(m);
  return (await readMountTable()).find((e) => keyOf(e) === key);
}

/**
 * Unmounts mount `m` by its id: its current mount point's parent is opened without following links,
 * the entry there must carry `m`'s mount id, and umount2 gets the name inside the held parent with
 * UMOUNT_NOFOLLOW. `held` (the parent and name the caller still holds) is tried first. Resolves with
 * the mount's entry when it is still there afterwards (the kernel's mount table decides), else
 * undefined; never throws (a failed step leaves the mount, reported by the result).
 */
async function unmountById(libc: Libc, m: MountEntry, held?: { parent: DirHandle; name: string }): Promise<{ left?: MountEntry; why?: string }> {
  const tryAt = async (parent: DirHandle, name: string): Promise<string | undefined> => {
    const child = await openChildDir(parent, name).catch((err: unknown) => err as Error);
    if (child === null) return `${name} in ${parent.path} is a symbolic link or not a directory`;
    if (child instanceof Error) return child.message;
    const id = child.mountId;
    await child.close();
    if (id !== m.mountId) return `the mount at ${parent.path}/${name} is mount ${id}, not ${m.mountId}`;
    return parent.use(name, (at) => libc.umount2(at, UMOUNT_NOFOLLOW)).then(
      () => undefined,
      (err: Error) => err.message,
    );
  };
  let why: string | undefined = "not tried";
  if (held) why = await tryAt(held.parent, held.name).catch((err: Error) => err.message);
  let left = await findMount(m).catch(() => m);
  if (left && why !== undefined) {
    const at = left.mountPoint;
    why = await withParent(at, (parent, name) => tryAt(parent, name)).catch((err: Error) => err.message);
    left = await findMount(m).catch(() => m);
  }
  return left ? { left, why: why ?? "umount2 succeeded but the mount table still lists it" } : {};
}

/** Mounts block device `source` (fsType, no options) on the directory `target` (absolute, canonical). */
export async function mountOnDir(libc: Libc, source: string, target: string, fsType: string, options: MountOptions = {}): Promise<void> {
  const devNo = await deviceNumber(source);
  await withParent(target, async (parent, name) => {
    const dir = await openChildDir(parent, name);
    if (dir === null) throw failedPrecondition(`mount ${source} on ${target}: it is a symbolic link or not a directory now; refusing`);
    let made: MountEntry;
    try {
      const before = new Set((await readMountTable()).map(keyOf));
      await dir.use(undefined, (at) => libc.mount(source, at, fsType, 0, null)).catch((err) => {
        throw syscallError(err, `mount ${source} on`, target);
      });
      const fresh = (await readMountTable()).filter((m) => !before.has(keyOf(m)) && m.parentId === dir.mountId);
      // The device's major:minor; filesystems that show another device number (btrfs) by the source name.
      const byDevice = fresh.filter((m) => m.device === devNo);
      const found = byDevice.length > 0 ? byDevice : fresh.filter((m) => m.source === source);
      if (found.length !== 1) {
        throw failedPrecondition(
          `mount ${source} on ${target}: mounted, but the mount made cannot be told apart in the mount table ` +
            `(${found.length === 0 ? "no new entry" : found.map((m) => `mount ${m.mountId} at ${m.mountPoint}`).join(", ")}); nothing undone`,
        );
      }
      made = found[0];
    } finally {
      await dir.close();
    }
    if (made.mountPoint === target) return;
    // Renamed or exchanged while mounting: the mount sits on the held directory, wherever it is now.
    const moved = made.mountPoint;
    const { left, why } = await unmountById(libc, made, { parent, name });
    if (!left) throw failedPrecondition(`mount ${source} on ${target}: the directory moved to ${moved} while mounting; mount undone`);
    const what = `mount ${made.mountId} of ${source} at ${left.mountPoint}`;
    void retryUndo(
      what,
      async () => {
        // Moved back to the asked target (a later MountVolume may already have answered OK on it):
        // it is what the caller asked for, inside the allowed directories; never undone from behind.
        const now = await findMount(made);
        if (now?.mountPoint === target) return { done: true, kept: `${source} is now mounted at the asked target ${target}; kept` };
        const r = await unmountById(libc, made);
        return r.left ? { done: false, left: `${source} still mounted at ${r.left.mountPoint} (mount id ${made.mountId}): ${r.why}` } : { done: true };
      },
      options.log,
      options.retryDelaysMs ?? UNDO_RETRY_DELAYS_MS,
    );
    throw failedPrecondition(
      `mount ${source} on ${target}: the directory moved to ${moved} while mounting and the mount could not be undone (${why}): ` +
        `${source} is still mounted at ${left.mountPoint} (mount id ${made.mountId}); csi-proxy retries unmounting it (${describeSchedule(options.retryDelaysMs)})`,
    );
  });
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
    await parent.use(name, (at) => libc.umount2(at, UMOUNT_NOFOLLOW)).catch((err) => {
      throw syscallError(err, "unmount", target);
    });
  });
}
