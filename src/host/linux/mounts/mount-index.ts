/**
 * A mount table indexed once per version: by mount point, by device and by mount id, and "which
 * mount holds this path" answered by walking the path's own prefixes (one map lookup per component),
 * so no question costs time in the number of mounts.
 *
 * {@link indexMounts} builds the index of one parsed table, once (memoized on the table array, which
 * must not be changed after it is indexed). {@link processMountIndex} gives the index of this
 * process's table through the process-wide change-probed cache (mount-table-cache.ts): as fresh as
 * reading /proc/self/mountinfo on every call, parsed and indexed only after the kernel reported a
 * change. Cost per call when nothing changed: one poll(2) (~1 µs) and one WeakMap lookup.
 */
import type { MountEntry } from "../kernel/mountinfo.ts";
import { createMountTableCache, type MountTableCache } from "./mount-table-cache.ts";

export interface MountIndex {
  /** Every entry, in mountinfo order. */
  readonly entries: readonly MountEntry[];
  /** Entries whose mount point is exactly `mountPoint` (canonical, absolute), in mountinfo order; the last is the visible one. */
  at(mountPoint: string): readonly MountEntry[];
  /** Entries of device "major:minor" (as mountinfo shows it), in mountinfo order. */
  ofDevice(device: string): readonly MountEntry[];
  byId(mountId: number): MountEntry | undefined;
  /**
   * The mount holding the absolute, canonical `path`: the visible (last listed) mount at the deepest
   * mount point that is `path` or one of its ancestors; undefined only for a table without "/".
   * Cost: one map lookup per path component.
   */
  holding(path: string): MountEntry | undefined;
}

const EMPTY: readonly MountEntry[] = Object.freeze([]);
const built = new WeakMap<readonly MountEntry[], MountIndex>();

function push<K>(map: Map<K, MountEntry[]>, key: K, m: MountEntry) {
  const list = map.get(key);
  if (list) list.push(m);
  else map.set(key, [m]);
}

/**
 * The last entry listed at the deepest mount point that is the absolute, canonical `path` or one of
 * its ancestors, from entries keyed by mount point (each list in mountinfo order: the last is the
 * visible mount); undefined when neither `path` nor any ancestor has one. Cost: one map lookup per
 * path component, whatever the number of mounts.
 */
export function lastAtDeepest<T>(byPoint: ReadonlyMap<string, readonly T[]>, path: string): T | undefined {
  let p = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  for (;;) {
    const here = byPoint.get(p);
    if (here) return here[here.length - 1];
    if (p === "/" || p === "") return undefined;
    const cut = p.lastIndexOf("/");
    p = cut <= 0 ? "/" : p.slice(0, cut);
  }
}

/** The index of `entries` (memoized: the same array gets the same index; the array must not change afterwards). */
export function indexMounts(entries: readonly MountEntry[]): MountIndex {
  let index = built.get(entries);
  if (index) return index;
  const byPoint = new Map<string, MountEntry[]>();
  const byDevice = new Map<string, MountEntry[]>();
  const byId = new Map<number, MountEntry>();
  for (const m of entries) {
    push(byPoint, m.mountPoint, m);
    push(byDevice, m.device, m);
    byId.set(m.mountId, m);
  }
  index = {
    entries,
    at: (p) => byPoint.get(p) ?? EMPTY,
    ofDevice: (d) => byDevice.get(d) ?? EMPTY,
    byId: (id) => byId.get(id),
    holding: (path) => lastAtDeepest(byPoint, path),
  };
  built.set(entries, index);
  return index;
}

let processCache: MountTableCache | undefined;

let processStartUp: () => boolean = () => false;

/** Sets the start-up phase the process's mount table reads directly in (the composition passes the daemon's; default never). */
export function setProcessStartUpPhase(inStartUp: () => boolean): void {
  processStartUp = inStartUp;
}

/**
 * This process's mount table cache, one per process (every user shares one read and one parse per
 * change). Its probe is the process's single /proc/self/mountinfo descriptor (mount-table-cache.ts).
 */
export function processMountTable(): MountTableCache {
  processCache ??= createMountTableCache({ readDirectly: () => processStartUp() });
  return processCache;
}

/** The index of this process's mount table, as fresh as reading it now (see the module comment). */
export async function processMountIndex(cache: MountTableCache = processMountTable()): Promise<MountIndex> {
  return indexMounts(await cache.table());
}

/**
 * The mount of this process's namespace holding the absolute, canonical `path` (the deepest mount
 * point at or above it; the visible mount of a stack), as fresh as reading the mount table now. For
 * a path that is not canonical (links, `..`), resolve it first: the answer is about the lexical path.
 */
export async function mountHolding(path: string): Promise<MountEntry | undefined> {
  return (await processMountIndex()).holding(path);
}
