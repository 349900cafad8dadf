/**
 * The Linux host's {@link MountGate}: a path's mount is found in the cached mount table (lexically,
 * the longest mount point above the path: a symbolic link on the way to another mount is counted
 * against the mount the link lies on), and a mount is probed with statfs(2), which FUSE, NFS and
 * CIFS pass to the filesystem itself.
 */
import * as fs from "node:fs/promises";
import { createMountGate, mountPointOf, registerMountGate, type MountGate } from "../mount-gate.ts";
import { createMountTableCache, type MountTableCache } from "./mount-table-cache.ts";
import type { MountEntry } from "./mountinfo.ts";

/** The one place a path is mapped to its mount (the table is parsed once per change, the points listed once per table). */
export function mountLookup(cache: MountTableCache): (p: string) => Promise<string> {
  const points = new WeakMap<readonly MountEntry[], string[]>();
  return async (p) => {
    const table = await cache.table();
    let list = points.get(table);
    if (list === undefined) {
      list = table.map((e) => e.mountPoint);
      points.set(table, list);
    }
    return mountPointOf(list, p);
  };
}

/** A gate registered for the blocked-operations metric (the process keeps it). */
export function createLinuxMountGate(cache: MountTableCache = createMountTableCache()): MountGate {
  return registerMountGate(createMountGate({ mountOf: mountLookup(cache), probe: (m) => fs.statfs(m) }));
}
