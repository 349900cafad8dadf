/**
 * The Linux host's {@link MountGate}: the mount a call reaches is found by following the path's
 * symbolic links component by component (reached-mount.ts: lstat, and readlink for a link, each under
 * the gate of the mount the component lies on; never into a mount marked not responding), each
 * link-free prefix's mount from the cached mount table (the longest mount point above it). So a link on
 * `/` into a hung FUSE or CIFS mount counts against that mount, never `/`. A mount is probed with
 * statfs(2), which FUSE, NFS and CIFS pass to the filesystem itself.
 */
import * as fs from "node:fs/promises";
import { createMountGate, DEVICE_KEY_PREFIX, registerMountGate, type MountGate } from "../../mount-gate.ts";
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

/** How long a component's look-up is reused (ms), and how many are kept (the map is cleared when full). */
export const LINK_KEEP_MS = 1_000;
export const LINK_KEEP_MAX = 4_096;

/**
 * Look-ups of path components (a link's target, or null for anything else: one lstat, a readlink more
 * for a link), each kept {@link LINK_KEEP_MS} so that calls on the same directories cost no look-up per
 * component. A kept answer only decides which mount a call counts against (the call itself follows
 * the links the kernel finds): a link made or removed within that second counts as before for at most
 * that long. Errors are not kept. At most {@link LINK_KEEP_MAX} entries.
 */
export function linkLookups(now: () => number = Date.now) {
  const kept = new Map<string, { at: number; target: string | null }>();
  return {
    known(p: string): string | null | undefined {
      const k = kept.get(p);
      return k && now() - k.at < LINK_KEEP_MS ? k.target : undefined;
    },
    async readLink(p: string): Promise<string | null> {
      const target = (await fs.lstat(p)).isSymbolicLink() ? await fs.readlink(p) : null;
      if (kept.size >= LINK_KEEP_MAX) kept.clear();
      kept.set(p, { at: now(), target });
      return target;
    },
  };
}

/**
 * A whole disk's probe (keys of device-gate.ts): its first 4 KiB read through a fresh descriptor. It may
 * come from the page cache (then it answers without the device); the disk's own operations returning
 * is what clears it in practice, as a probe only runs in a slot none of them holds.
 */
async function probeDisk(devPath: string): Promise<void> {
  const fh = await fs.open(devPath, "r");
  try {
    await fh.read(Buffer.alloc(4096), 0, 4096, 0);
  } finally {
    await fh.close();
  }
}

/** A gate registered for the blocked-operations metric (the process keeps it). */
export function createLinuxMountGate(cache: MountTableCache = processMountTable()): MountGate {
  const links = linkLookups();
  return registerMountGate(createMountGate({ mountOf: mountLookup(cache), readLink: (p) => links.readLink(p), knownLink: (p) => links.known(p), probe: (key) => (key.startsWith(DEVICE_KEY_PREFIX) ? probeDisk(key.slice(DEVICE_KEY_PREFIX.length)) : fs.statfs(key)) }));
}
