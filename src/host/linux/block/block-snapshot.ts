/**
 * The block snapshot: every fact the hosts' in-use checks need, read once per operation, and the
 * lookups of disks and volumes in it (NotFound / ambiguous-id errors carry their codes here).
 */
import { failedPrecondition, notFound, unavailable } from "../../../errors.ts";
import type { BlockDisk, BlockMount, DeviceOpener, DevNumber, LoopDevice, OfflineMark } from "./block-types.ts";
import type { BlockReads } from "./block-reads.ts";
import type { DeviceClaims } from "./device-claims.ts";
import type { OfflineMarks } from "./device-state.ts";
import { diskNumberOf, sameDev, visibleDisks } from "./disk-numbers.ts";
import { parseVolumeId, volumeOfPartition, volumeOfWholeDisk, type VolumeRef } from "./volume-ids.ts";

/** Everything the in-use checks need, read once per operation. */
export interface BlockSnapshot {
  disks: BlockDisk[];
  mounts: BlockMount[];
  swaps: DevNumber[];
  marks: OfflineMark[];
  /** Every attached loop device, shown or not: what may be stacked on a device. */
  loops: LoopDevice[];
  /** Processes holding the nodes of the snapshot's disks and partitions; absent unless asked for ({@link SnapshotOptions}). */
  openers?: DeviceOpener[];
  /** Taken with {@link SnapshotOptions.pickDisk}: the one disk read in full now; the others' facts may be kept ones. */
  pickedDisk?: DevNumber;
}

/** The reads a snapshot is taken with. */
export type SnapshotSources = Pick<BlockReads, "listDisks" | "findDisk" | "readMounts" | "listLoops"> & Pick<DeviceClaims, "readSwapDevices" | "deviceOpeners"> & Pick<OfflineMarks, "readOfflineMarks">;

export interface SnapshotOptions {
  /** Also scan for processes holding the disks' and partitions' nodes (a change that must refuse them; a scan of /proc). */
  openers?: boolean;
  /** Read every fact again, none kept from an earlier reading (the loop list is otherwise kept until the next uevent): a write's verification. */
  fresh?: boolean;
  /**
   * A write's verification that acts on one disk: picks that disk from a listing that may be a kept
   * one (`listDisks({ tables: "kept" })`: read again after a uevent, a table again when its disk's
   * medium or partitions changed); the picked disk is then read again in full (sysfs and its table
   * off the device) and replaces its listed self. Every other fact is read as without it.
   * Returning null (or no disk with that number) gives the plain reading of every disk. The caller
   * must act only on the picked disk and fall back to a plain reading for anything else.
   */
  pickDisk?: (listed: BlockDisk[]) => DevNumber | null;
}

/**
 * Reads everything the hosts' facts need, once per operation: every disk, or (with `dev`) only the
 * disk with that device number — then `disks` is that disk or empty. The disks (sysfs, partition
 * tables), swaps and offline marks are read each time; the mount table is the change-probed one
 * (mount-table-cache.ts); the loop list is the one kept until the next uevent unless `fresh`.
 */
export async function takeSnapshot(tools: SnapshotSources, dev?: DevNumber, options: SnapshotOptions = {}): Promise<BlockSnapshot> {
  const disks: Promise<{ disks: BlockDisk[]; picked?: DevNumber }> = dev
    ? tools.findDisk(dev).then((d) => ({ disks: d ? [d] : [] }))
    : options.pickDisk
      ? pickedListing(tools, options.pickDisk)
      : tools.listDisks().then((d) => ({ disks: d }));
  const [all, mounts, swaps, marks, loops] = await Promise.all([disks, tools.readMounts(), tools.readSwapDevices(), tools.readOfflineMarks(), tools.listLoops({ fresh: options.fresh === true })]);
  const snap: BlockSnapshot = { disks: visibleDisks(all.disks), mounts, swaps, marks, loops };
  if (all.picked) snap.pickedDisk = all.picked;
  if (options.openers) snap.openers = await tools.deviceOpeners(snap.disks.flatMap((d) => [d, ...d.partitions]));
  return snap;
}

/** Every disk, the one `pick` chooses read again in full ({@link SnapshotOptions.pickDisk}). */
async function pickedListing(tools: SnapshotSources, pick: (listed: BlockDisk[]) => DevNumber | null): Promise<{ disks: BlockDisk[]; picked?: DevNumber }> {
  const listed = await tools.listDisks({ tables: "kept" });
  const picked = pick(visibleDisks(listed));
  const at = picked ? listed.findIndex((d) => sameDev(d, picked)) : -1;
  if (!picked || at < 0) return { disks: await tools.listDisks() };
  const now = await tools.findDisk(picked);
  return { disks: now ? listed.map((d, i) => (i === at ? now : d)) : listed.filter((_, i) => i !== at), picked: { major: picked.major, minor: picked.minor } };
}

/**
 * The volume `id` names, found with {@link SnapshotOptions.pickDisk}: `take(pickDisk)` reads its disk in
 * full and may keep the others; anything but the volume found on that disk (not found, ambiguous,
 * found on another disk) is decided again on `take(undefined)`, a reading of every disk.
 */
export async function findVolumeFocused(id: string, take: (pickDisk?: (listed: BlockDisk[]) => DevNumber | null) => Promise<BlockSnapshot>): Promise<{ snap: BlockSnapshot; vol: VolumeRef }> {
  const pickDisk = (listed: BlockDisk[]) => {
    try {
      return findVolume({ disks: listed }, id).disk;
    } catch {
      return null;
    }
  };
  const focused = await take(pickDisk);
  // Nothing picked: it is already a reading of every disk.
  if (!focused.pickedDisk) return { snap: focused, vol: findVolume(focused, id) };
  try {
    const vol = findVolume(focused, id);
    if (focused.pickedDisk && sameDev(vol.disk, focused.pickedDisk)) return { snap: focused, vol };
  } catch {
    // decided on the reading of every disk below
  }
  const snap = await take(undefined);
  return { snap, vol: findVolume(snap, id) };
}

/** The disk with this number; NotFound otherwise. */
export function requireDisk(snap: BlockSnapshot, diskNumber: number): BlockDisk {
  const disk = snap.disks.find((d) => diskNumberOf(d) === diskNumber);
  if (!disk) throw notFound(`disk ${diskNumber} not found`);
  return disk;
}

/**
 * The disk behind a volume id or NotFound (no partition has that id, or the device is gone); Unavailable
 * instead of NotFound when a disk's partition table could not be read (its error, naming device,
 * bytes and errno: the volume may be there).
 */
export function findVolume(snap: Pick<BlockSnapshot, "disks">, id: string): VolumeRef {
  const parsed = parseVolumeId(id);
  const matches: VolumeRef[] = [];
  for (const disk of snap.disks) {
    if (parsed.kind === "dev" && sameDev(disk, parsed.dev)) matches.push(volumeOfWholeDisk(disk));
    for (const p of disk.partitions) {
      if (parsed.kind === "dev" ? sameDev(p, parsed.dev) : p.uuid?.toLowerCase() === parsed.uuid) matches.push(volumeOfPartition(disk, p));
    }
  }
  if (matches.length === 0) {
    // A disk whose table could not be read may hold it: that is the answer, never NotFound.
    const unreadable = snap.disks.filter((d) => d.tableError !== undefined);
    if (unreadable.length) throw unavailable(`volume ${id} cannot be looked up: ${unreadable.map((d) => d.tableError).join("; ")}`);
    throw notFound(`volume ${id} not found`);
  }
  // A dev- id of a partition whose PARTUUID other partitions share is as ambiguous as that PARTUUID.
  const uuid = parsed.kind === "dev" && matches.length === 1 ? matches[0].partition?.uuid : null;
  if (uuid) {
    for (const disk of snap.disks) {
      for (const p of disk.partitions) if (p.uuid?.toLowerCase() === uuid.toLowerCase() && !sameDev(p, matches[0].dev)) matches.push(volumeOfPartition(disk, p));
    }
  }
  if (matches.length > 1) {
    throw failedPrecondition(`volume id ${id} is ambiguous: partitions ${matches.map((m) => m.devPath).join(", ")} share that PARTUUID (cloned disks?)`);
  }
  return matches[0];
}

/** Volume holding a mounted device, if that device is a visible disk or partition. */
export function volumeOfDevice(snap: BlockSnapshot, dev: DevNumber): VolumeRef | null {
  for (const disk of snap.disks) {
    if (sameDev(disk, dev)) return volumeOfWholeDisk(disk);
    const p = disk.partitions.find((q) => sameDev(q, dev));
    if (p) return volumeOfPartition(disk, p);
  }
  return null;
}
