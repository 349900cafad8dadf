/**
 * What is mounted at a path, in the volume group's terms (MountVolume's and the target-path
 * queries' look-ups on Linux): the mount a finder picks, described as the volume it is (or as
 * `a <fstype> filesystem (<source>)` when it is not one).
 */
import type { MountedVolume } from "../../../groups/volume/host-api.ts";
import { volumeOfDevice, type BlockSnapshot } from "./block-snapshot.ts";
import type { BlockReads } from "./block-reads.ts";
import type { BlockMount, DevNumber } from "./block-types.ts";

/** A mount described: its volume's id, or null when what is mounted is not a volume. */
export function describeMount(snap: BlockSnapshot, m: BlockMount): MountedVolume {
  const vol = volumeOfDevice(snap, m);
  return { mountPoint: m.mountPoint, volumeId: vol?.id ?? null, description: vol ? `volume ${vol.id}` : `a ${m.fsType} filesystem (${m.source})` };
}

/**
 * The mount `find` picks, described from a snapshot of only the disk it is on when the tools can
 * tell which (the mount table is cached per change, so this costs no scan of every disk); else, or
 * when the mount changed between the two readings, from a snapshot of every disk. `read` is the
 * host session's reading (of one disk, or of every disk without `dev`).
 */
export async function findMountedVolume(
  tools: Pick<BlockReads, "readMounts" | "diskOfDevice">,
  read: (dev?: DevNumber) => Promise<BlockSnapshot>,
  find: (s: Pick<BlockSnapshot, "mounts">) => BlockMount | undefined,
): Promise<MountedVolume | null> {
  if (tools.diskOfDevice) {
    const first = find({ mounts: await tools.readMounts() });
    if (!first) return null;
    const disk = tools.diskOfDevice(first);
    // Not on a block device sysfs knows (tmpfs, NFS, ...): no disk can hold it.
    if (!disk) return describeMount({ disks: [], mounts: [], swaps: [], marks: [], loops: [] }, first);
    const snap = await read(disk);
    const m = find(snap);
    if (m && m.major === first.major && m.minor === first.minor) return describeMount(snap, m);
  }
  const snap = await read();
  const m = find(snap);
  return m ? describeMount(snap, m) : null;
}
