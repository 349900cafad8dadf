/**
 * A snapshot's mount table indexed by device and by mount point: the mounts of a device, the mount
 * visible at a point, the mount holding a path. Each index is built once per mounts array (never changed).
 */
import type { BlockMount, DevNumber } from "./block-types.ts";
import type { BlockSnapshot } from "./block-snapshot.ts";
import { lastAtDeepest } from "../mounts/mount-index.ts";

/** A snapshot's mounts indexed by device and by mount point (built once per mounts array, which is never changed). */
interface BlockMountIndex {
  byDev: Map<string, BlockMount[]>;
  byPoint: Map<string, BlockMount[]>;
}
const blockIndexes = new WeakMap<readonly BlockMount[], BlockMountIndex>();

function blockIndex(mounts: readonly BlockMount[]): BlockMountIndex {
  let index = blockIndexes.get(mounts);
  if (index) return index;
  index = { byDev: new Map(), byPoint: new Map() };
  for (const m of mounts) {
    const dev = `${m.major}:${m.minor}`;
    const d = index.byDev.get(dev);
    if (d) d.push(m);
    else index.byDev.set(dev, [m]);
    const p = index.byPoint.get(m.mountPoint);
    if (p) p.push(m);
    else index.byPoint.set(m.mountPoint, [m]);
  }
  blockIndexes.set(mounts, index);
  return index;
}

/** Mount entries of a device, in mount-table order (indexed: no scan of the table). */
export const mountsOf = (snap: Pick<BlockSnapshot, "mounts">, dev: DevNumber): BlockMount[] => [...(blockIndex(snap.mounts).byDev.get(`${dev.major}:${dev.minor}`) ?? [])];

/** The mount visible at `mountPoint` (the last one mounted there), if any. */
export function mountAt(snap: Pick<BlockSnapshot, "mounts">, mountPoint: string): BlockMount | undefined {
  return blockIndex(snap.mounts).byPoint.get(mountPoint)?.at(-1);
}

/**
 * The visible mount at the deepest mount point that is the absolute, canonical `path` or one of its
 * ancestors. Cost: one map lookup per path component.
 */
export function mountHoldingPath(snap: Pick<BlockSnapshot, "mounts">, path: string): BlockMount | undefined {
  return lastAtDeepest(blockIndex(snap.mounts).byPoint, path);
}

/** The device holding `/`. */
export const rootMount = (snap: Pick<BlockSnapshot, "mounts">) => mountAt(snap, "/");
