/**
 * Where a path really lies when it is inside a bind mount of a directory: the path policy treats a
 * bind mount like a symbolic link (a bind mount of an outside directory placed in the kubelet dir
 * must not open the outside directory to filesystem calls).
 */
import * as path from "node:path";
import type { MountEntry } from "../kernel/mountinfo.ts";
import type { MountTableCache } from "./mount-table-cache.ts";
import { indexMounts } from "./mount-index.ts";

const isWithin = (child: string, parent: string) => parent === "/" || child === parent || child.startsWith(parent + "/");
const rest = (child: string, parent: string) => (child === parent ? "" : parent === "/" ? child.slice(1) : child.slice(parent.length + 1));

/**
 * A path inside a mount of a subdirectory of a filesystem that is mounted nowhere else in this
 * namespace (a chroot or container whose root is a subdirectory of the host's filesystem, or a
 * filesystem whose whole mount was unmounted): where that subdirectory lies cannot be seen.
 * `mountPoint` is that mount's mount point.
 */
export interface UnseenBindSource {
  unseen: string;
}

/** What {@link bindSources} says of one path. */
export type BindSource = string | null | UnseenBindSource;

/** A btrfs mount of a subvolume shows the subvolume as its root: a whole filesystem tree, not a bind. */
const isSubvolumeMount = (m: MountEntry) =>
  m.fsType === "btrfs" && (m.superOptions ?? "").split(",").some((o) => o === `subvol=${m.root}`);

/** Per table version (entries are never changed once parsed): the mount each bind is seen through. */
const viaMemo = new WeakMap<readonly MountEntry[], Map<MountEntry, MountEntry | null>>();

/** Another mount of the bind's filesystem whose root contains the bind's root, the widest one; null when none. */
function viaOf(table: readonly MountEntry[], holder: MountEntry, sameDevice: readonly MountEntry[]): MountEntry | null {
  let memos = viaMemo.get(table);
  if (!memos) viaMemo.set(table, (memos = new Map()));
  const memo = memos.get(holder);
  if (memo !== undefined) return memo;
  let via: MountEntry | null = null;
  for (const m of sameDevice) {
    if (m.mountId === holder.mountId || m.device !== holder.device || !isWithin(holder.root, m.root)) continue;
    if (!via || m.root.length < via.root.length) via = m;
  }
  memos.set(holder, via);
  return via;
}

/**
 * For each absolute, canonical path: the directory it shows when the mount holding it (the deepest
 * mount point above it, the top of a stack) mounts a subdirectory (`root` ≠ `/` in mountinfo) of a
 * filesystem that is also mounted elsewhere, as a path through that other mount; null when the
 * holding mount is a whole filesystem (or a btrfs subvolume); `{ unseen }` when it mounts a
 * subdirectory whose place cannot be seen (no other mount of that filesystem in this namespace).
 * Pure: `mounts` in mountinfo order (indexed once per array, mount-index.ts: the cost per path is one
 * map lookup per path component plus the mounts of the holding mount's device).
 */
export function bindSources(paths: readonly string[], mounts: readonly MountEntry[]): BindSource[] {
  const index = indexMounts(mounts);
  return paths.map((p) => {
    const holder = index.holding(p);
    if (!holder || holder.root === "/" || isSubvolumeMount(holder)) return null;
    const via = viaOf(mounts, holder, index.ofDevice(holder.device));
    if (!via) return { unseen: holder.mountPoint };
    return path.posix.join(via.mountPoint, rest(holder.root, via.root), rest(p, holder.mountPoint));
  });
}

/**
 * {@link bindSources} on this process's mount table as `cache` gives it: as fresh as reading the
 * table now (mount-table-cache.ts), without reading it when no mount changed since the last call.
 */
export function cachedBindSources(cache: MountTableCache): (paths: readonly string[]) => Promise<BindSource[]> {
  return async (paths) => bindSources(paths, await cache.table());
}
