/**
 * The Linux host's {@link MountGate}: a path's mount is found in the cached mount table (lexically,
 * the longest mount point above the path: a symbolic link on the way to another mount is counted
 * against the mount the link lies on), and a mount is probed with statfs(2), which FUSE, NFS and
 * CIFS pass to the filesystem itself.
 */
import * as fs from "node:fs/promises";
import { createMountGate, registerMountGate, type MountGate } from "../../mount-gate.ts";
import type { MountTableCache } from "./mount-table-cache.ts";
import { processMountIndex, processMountTable } from "./mount-index.ts";

/**
 * The one place a path is mapped to its mount: the mount point at or above `p` (lexically), by the
 * table's index (mount-index.ts: one map lookup per path component; the table parsed and indexed once
 * per change).
 */
export function mountLookup(cache: MountTableCache): (p: string) => Promise<string> {
  return async (p) => (await processMountIndex(cache)).holding(p)?.mountPoint ?? "/";
}

/** A gate registered for the blocked-operations metric (the process keeps it). */
export function createLinuxMountGate(cache: MountTableCache = processMountTable()): MountGate {
  return registerMountGate(createMountGate({ mountOf: mountLookup(cache), probe: (m) => fs.statfs(m) }));
}
