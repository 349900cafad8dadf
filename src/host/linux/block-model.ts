/**
 * What Linux block devices mean in the disk and volume APIs' terms (docs/linux-concept-map.md explains
 * every choice): disk numbers, identifiers, locations, volume ids, online state, and the facts the
 * services' refusals need. Pure interpretation shared by the Linux disk and volume hosts; nothing here
 * touches the host (they feed it what the block tools, linux-block-tools.ts, report) and nothing here decides what to do.
 */
import { failedPrecondition, invalidArgument, notFound } from "../../errors.ts";
import type { DeviceUse } from "../../policy/host-device.ts";
import type { DiskIds, DiskLocation } from "../../groups/disk/types.ts";
import type { BlockDisk, BlockMount, BlockPartition, DeviceOpener, DevNumber, LoopBacking, LoopDevice, ManagedFsType, OfflineMark, ProbeResult } from "./block-types.ts";
import type { BlockReads } from "./block-reads.ts";
import type { DeviceClaims } from "./device-claims.ts";
import type { OfflineMarks } from "./device-state.ts";
import { lastAtDeepest } from "./mount-index.ts";

/* ---------------------------------------------------------------- disk numbers */

const MINOR_BITS = 2 ** 20;

/** Disk number of a device: the kernel's internal dev_t, (major << 20) | minor. Fits uint32, unique, stable while the device exists. */
export function diskNumberOf(dev: DevNumber): number {
  return dev.major * MINOR_BITS + dev.minor;
}

/** The device a disk number names (inverse of {@link diskNumberOf}). */
export function devOfDiskNumber(diskNumber: number): DevNumber {
  return { major: Math.floor(diskNumber / MINOR_BITS), minor: diskNumber % MINOR_BITS };
}

export const sameDev = (a: DevNumber, b: DevNumber) => a.major === b.major && a.minor === b.minor;
export const devString = (d: DevNumber) => `${d.major}:${d.minor}`;

/**
 * Disks the API shows: whole block devices with a medium (size > 0). That leaves out unattached loop
 * devices, empty card readers and unconfigured zram. Sorted by disk number.
 */
export function visibleDisks(disks: readonly BlockDisk[]): BlockDisk[] {
  return disks.filter((d) => d.sizeBytes > 0n).sort((a, b) => diskNumberOf(a) - diskNumberOf(b));
}

/* ---------------------------------------------------------------- identifiers and locations */

/** ListDiskLocations: SCSI H:C:T:L → adapter/bus/target/LUN; disks without a SCSI address have no location (omitted, as upstream omits disks without a Location). */
export function diskLocation(disk: BlockDisk): DiskLocation | null {
  const a = disk.scsiAddress;
  if (!a) return null;
  return { adapter: String(a.host), bus: String(a.channel), target: String(a.target), lunId: String(a.lun) };
}

/**
 * SCSI VPD page 0x83: the first designator with association "addressed logical unit" (0) and code
 * set binary (1, rendered as lower-case hex) or ASCII (2, verbatim), as upstream does with
 * IOCTL_STORAGE_QUERY_PROPERTY. "" when there is none or the page is malformed.
 */
export function page83FromVpd(page: Uint8Array): string {
  if (page.length < 4 || page[1] !== 0x83) return "";
  const end = Math.min(page.length, 4 + ((page[2] << 8) | page[3]));
  for (let off = 4; off + 4 <= end; ) {
    const codeSet = page[off] & 0x0f;
    const association = (page[off + 1] >> 4) & 0x03;
    const len = page[off + 3];
    const body = page.subarray(off + 4, Math.min(off + 4 + len, end));
    if (association === 0 && codeSet === 1) return Buffer.from(body).toString("hex");
    if (association === 0 && codeSet === 2) return Buffer.from(body).toString("latin1");
    off += 4 + len;
  }
  return "";
}

/** SCSI VPD page 0x80 (unit serial number), untrimmed like Windows' SerialNumber; null when malformed. */
export function serialFromVpd(page: Uint8Array): string | null {
  if (page.length < 4 || page[1] !== 0x80) return null;
  const len = (page[2] << 8) | page[3];
  return Buffer.from(page.subarray(4, 4 + len)).toString("latin1");
}

/** page83 from a sysfs wwid ("naa.<hex>", "eui.<hex>", "t10.<ascii>"), in the VPD rendering above. */
export function page83FromWwid(wwid: string): string {
  const m = /^(naa|eui|t10)\.(.*)$/.exec(wwid.trim());
  if (!m) return "";
  return m[1] === "t10" ? m[2] : m[2].toLowerCase();
}

/**
 * ListDiskIDs identifiers. serialNumber: a loop device's backing file (so a caller can find the disk
 * it attached), else VPD 0x80, else the device's serial attribute, else "". page83: VPD 0x83, else
 * the wwid, else "" (loop and virtio disks have none).
 */
export function diskIds(disk: BlockDisk): DiskIds {
  const serialNumber = disk.loopBackingFile ?? (disk.vpdPage80 && serialFromVpd(disk.vpdPage80)) ?? disk.serial ?? "";
  let page83 = disk.vpdPage83 ? page83FromVpd(disk.vpdPage83) : "";
  if (!page83 && disk.wwid) page83 = page83FromWwid(disk.wwid);
  return { page83, serialNumber };
}

/* ---------------------------------------------------------------- partitions and volumes */

/** GPT types that never carry a volume: Microsoft reserved (upstream ignores it), BIOS boot. */
const NON_VOLUME_GPT_TYPES = new Set(["e3c9e316-0b5c-4db8-817d-f92df00215ae", "21686148-6449-6e6f-744e-656564454649"]);
/** MBR extended-partition containers: they hold logical partitions, not a filesystem. */
const MBR_EXTENDED_TYPES = new Set(["0x5", "0xf", "0x85"]);

export const MSR_TYPE = "e3c9e316-0b5c-4db8-817d-f92df00215ae";
/** GPT "Linux filesystem data": the type PartitionDisk gives the data partition on Linux. */
export const LINUX_DATA_GPT_TYPE = "0fc63daf-8483-4772-8e79-3d69d8477de4";
/** MBR "Linux" (0x83). */
export const LINUX_DATA_MBR_TYPE = "83";

/** The Microsoft reserved partition (upstream never counts it as a data partition). */
export function isReservedPartition(p: { typeId: string | null }): boolean {
  return p.typeId?.toLowerCase() === MSR_TYPE;
}

/** Partitions that are volumes: all but MSR, BIOS boot and MBR extended containers. */
export function isVolumePartition(p: { typeId: string | null }): boolean {
  const t = p.typeId?.toLowerCase() ?? "";
  return !NON_VOLUME_GPT_TYPES.has(t) && !MBR_EXTENDED_TYPES.has(t.replace(/^0x0*/, "0x"));
}

/** A volume: a partition, or a whole disk holding a filesystem without a partition table. */
export interface VolumeRef {
  id: string;
  disk: BlockDisk;
  partition: BlockPartition | null;
  /** The device node holding the filesystem. */
  devPath: string;
  dev: DevNumber;
}

/**
 * Volume id of a partition: `\\?\Volume{<PARTUUID>}\` (the shape Windows uses, so drivers' regexes
 * keep working; stable across formatting, unique per partition table). Partitions without a
 * PARTUUID and whole-disk filesystems get `\\?\Volume{dev-<major>-<minor>}\`, stable while the
 * device exists.
 */
export function volumeIdOf(dev: BlockPartition | BlockDisk): string {
  const uuid = "uuid" in dev ? dev.uuid : null;
  return `\\\\?\\Volume{${uuid ?? `dev-${dev.major}-${dev.minor}`}}\\`;
}

export function volumeOfPartition(disk: BlockDisk, p: BlockPartition): VolumeRef {
  return { id: volumeIdOf(p), disk, partition: p, devPath: p.devPath, dev: { major: p.major, minor: p.minor } };
}

export function volumeOfWholeDisk(disk: BlockDisk): VolumeRef {
  return { id: volumeIdOf(disk), disk, partition: null, devPath: disk.devPath, dev: { major: disk.major, minor: disk.minor } };
}

export type ParsedVolumeId = { kind: "uuid"; uuid: string } | { kind: "dev"; dev: DevNumber };

/**
 * Parses `\\?\Volume{X}\` (the trailing backslash is optional; Windows APIs accept both). X is a
 * PARTUUID (GPT GUID or MBR `xxxxxxxx-nn`) or `dev-<major>-<minor>`, compared case-insensitively
 * (keyword included, as Windows volume GUID paths are). Anything else: InvalidArgument.
 */
export function parseVolumeId(id: string): ParsedVolumeId {
  const m = /^\\\\\?\\Volume\{([^{}\\]+)\}\\?$/i.exec(id);
  const inner = m?.[1] ?? "";
  const dev = /^dev-(\d{1,4})-(\d{1,7})$/i.exec(inner);
  if (dev) return { kind: "dev", dev: { major: Number(dev[1]), minor: Number(dev[2]) } };
  if (/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(inner) || /^[0-9a-fA-F]{8}-[0-9a-fA-F]{2}$/.test(inner)) {
    return { kind: "uuid", uuid: inner.toLowerCase() };
  }
  throw invalidArgument(`volume id ${JSON.stringify(id)} is not of the form \\\\?\\Volume{<partition uuid>}\\`);
}

/* ---------------------------------------------------------------- host snapshot */

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
}

/** The reads a snapshot is taken with. */
export type SnapshotSources = Pick<BlockReads, "listDisks" | "findDisk" | "readMounts" | "listLoops"> & Pick<DeviceClaims, "readSwapDevices" | "deviceOpeners"> & Pick<OfflineMarks, "readOfflineMarks">;

export interface SnapshotOptions {
  /** Also scan for processes holding the disks' and partitions' nodes (a change that must refuse them; a scan of /proc). */
  openers?: boolean;
}

/**
 * Reads everything the hosts' facts need, once per operation: every disk, or (with `dev`) only the
 * disk with that device number — then `disks` is that disk or empty.
 */
export async function takeSnapshot(tools: SnapshotSources, dev?: DevNumber, options: SnapshotOptions = {}): Promise<BlockSnapshot> {
  const disks = dev ? tools.findDisk(dev).then((d) => (d ? [d] : [])) : tools.listDisks();
  const [all, mounts, swaps, marks, loops] = await Promise.all([disks, tools.readMounts(), tools.readSwapDevices(), tools.readOfflineMarks(), tools.listLoops()]);
  const snap: BlockSnapshot = { disks: visibleDisks(all), mounts, swaps, marks, loops };
  if (options.openers) snap.openers = await tools.deviceOpeners(snap.disks.flatMap((d) => [d, ...d.partitions]));
  return snap;
}

/** The disk with this number; NotFound otherwise. */
export function requireDisk(snap: BlockSnapshot, diskNumber: number): BlockDisk {
  const disk = snap.disks.find((d) => diskNumberOf(d) === diskNumber);
  if (!disk) throw notFound(`disk ${diskNumber} not found`);
  return disk;
}

/** The disk behind a volume id or NotFound (no partition has that id, or the device is gone). */
export function findVolume(snap: BlockSnapshot, id: string): VolumeRef {
  const parsed = parseVolumeId(id);
  const matches: VolumeRef[] = [];
  for (const disk of snap.disks) {
    if (parsed.kind === "dev" && sameDev(disk, parsed.dev)) matches.push(volumeOfWholeDisk(disk));
    for (const p of disk.partitions) {
      if (parsed.kind === "dev" ? sameDev(p, parsed.dev) : p.uuid?.toLowerCase() === parsed.uuid) matches.push(volumeOfPartition(disk, p));
    }
  }
  if (matches.length === 0) throw notFound(`volume ${id} not found`);
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
export const mountsOf = (snap: BlockSnapshot, dev: DevNumber): BlockMount[] => [...(blockIndex(snap.mounts).byDev.get(`${dev.major}:${dev.minor}`) ?? [])];

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
export const rootMount = (snap: BlockSnapshot) => mountAt(snap, "/");

/* ---------------------------------------------------------------- online / offline */

/** A mark counts for the device only while it holds the same medium (same diskseq). */
const markMatches = (mark: OfflineMark, disk: BlockDisk) => sameDev(mark, disk) && mark.diskSeq === disk.diskSeq;

export const markOf = (snap: BlockSnapshot, disk: BlockDisk) => snap.marks.find((m) => markMatches(m, disk));

/** Marks that still name an existing device with the same medium (stale ones are dropped on the next write). */
export const liveMarks = (snap: BlockSnapshot) => snap.marks.filter((m) => snap.disks.some((d) => markMatches(m, d)));

/** SCSI disks: device state "running"; other disks: no csi-proxy offline mark. */
export function isDiskOnline(snap: BlockSnapshot, disk: BlockDisk): boolean {
  if (disk.scsiState !== null) return disk.scsiState === "running";
  const mark = markOf(snap, disk);
  // A mark whose read-only flag was never set (the daemon stopped between recording and setting it) is not offline yet.
  return mark === undefined || (mark.setReadOnly && !disk.readOnly);
}


/* ---------------------------------------------------------------- facts for the services' refusals */

const MBR_EXTENDED = (typeId: string | null) => MBR_EXTENDED_TYPES.has((typeId ?? "").toLowerCase().replace(/^0x0*/, "0x"));

/**
 * Where the kernel's partition disagrees with the partition table on the disk (number, start, size;
 * an MBR extended container's size is not compared: the kernel shows it as 1 KiB), as a phrase that
 * follows "is"; null when they agree or the table cannot be read.
 */
export function tableMismatch(p: BlockPartition, disk: BlockDisk): string | null {
  const table = disk.partitionTable;
  if (!table) return null;
  const e = table.entries.find((x) => x.number === p.number);
  const fix = `re-read the table with partx --update ${disk.devPath}`;
  if (!e) return `shown by the kernel as partition ${p.number} (sectors ${p.startSectors}+${p.sizeSectors}), which the partition table of ${disk.devPath} does not have (stale kernel partition; ${fix})`;
  if (e.startSectors !== p.startSectors || (!MBR_EXTENDED(e.typeId) && e.sizeSectors !== p.sizeSectors)) {
    return `stale: the kernel shows partition ${p.number} at sectors ${p.startSectors}+${p.sizeSectors}, the partition table of ${disk.devPath} at ${e.startSectors}+${e.sizeSectors} (${fix})`;
  }
  return null;
}

const sameBacking = (a: LoopBacking, b: LoopBacking) =>
  a.kind === b.kind && sameDev(a.dev, b.dev) && (a.kind === "block" || (b.kind === "file" && a.ino === b.ino));

/** Bytes [start, end) of `dev` within its disk. */
function regionOf(dev: BlockDisk | BlockPartition, disk: BlockDisk): [bigint, bigint] {
  return "startSectors" in dev ? [dev.startSectors * 512n, (dev.startSectors + dev.sizeSectors) * 512n] : [0n, disk.sizeBytes];
}

/**
 * Loop devices reading or writing bytes of `dev` (a disk, or a partition of `disk`), which register no
 * holder and take no claim: loops on `dev` itself, on its disk at an overlapping offset, on one of its
 * partitions (for a disk), or on the same backing object as `disk` over overlapping bytes (the same
 * image attached twice). And the other way round: `disk` is itself a loop on a block device that is
 * mounted or swap. Phrases that follow "is".
 */
export function stackedUses(snap: BlockSnapshot, dev: BlockDisk | BlockPartition, disk: BlockDisk, within: BlockDisk | BlockPartition = dev): string[] {
  const [start, end] = regionOf(within, disk);
  const own = snap.loops.find((l) => sameDev(l, disk));
  const out: string[] = [];
  for (const l of snap.loops) {
    if (sameDev(l, disk) || !l.backing) continue;
    const overlaps = (s: bigint, e: bigint) => l.offsetBytes < e && s < l.offsetBytes + l.sizeBytes;
    let hit = false;
    if (l.backing.kind === "block") {
      const under = l.backing.dev;
      hit = sameDev(under, disk) ? overlaps(start, end) : sameDev(under, dev);
    }
    if (!hit && own?.backing && sameBacking(own.backing, l.backing)) hit = overlaps(own.offsetBytes + start, own.offsetBytes + end);
    if (hit) out.push(`in use by ${l.devPath} (a loop device on ${l.backingFile}, bytes ${l.offsetBytes}–${l.offsetBytes + l.sizeBytes})`);
  }
  if (own?.backing?.kind === "block") {
    const under = own.backing.dev;
    for (const m of mountsOf(snap, under)) out.push(`stacked on ${own.backingFile}, which is mounted at ${m.mountPoint}`);
    if (snap.swaps.some((x) => sameDev(x, under))) out.push(`stacked on ${own.backingFile}, which is in use as swap`);
  }
  return out;
}

/**
 * How the kernel uses a device (`dev`: a disk, or a partition of `disk`): the root filesystem, swap,
 * holders and loop devices stacked on it (on a disk: over the bytes of `within` when given, the
 * partition a volume operation concerns), partitions out of step with the table, its mounts; and
 * the processes holding its node, when the snapshot scanned for them.
 */
export function deviceUse(snap: BlockSnapshot, dev: BlockDisk | BlockPartition, disk: BlockDisk, within?: BlockPartition): DeviceUse {
  const root = rootMount(snap);
  const busy: string[] = [];
  if (snap.swaps.some((s) => sameDev(s, dev))) busy.push("in use as swap");
  if (dev.holders.length) busy.push(`in use by ${dev.holders.map((h) => `/dev/${h}`).join(", ")} (holders)`);
  busy.push(...stackedUses(snap, dev, disk, within));
  if ("startSectors" in dev) {
    const stale = tableMismatch(dev, disk);
    if (stale) busy.push(stale);
  } else {
    const stale = disk.partitions.filter((p) => tableMismatch(p, disk) !== null).map((p) => p.number);
    if (stale.length) busy.push(`out of step with its partition table: the kernel shows partition${stale.length > 1 ? "s" : ""} ${stale.join(", ")} where the table has none or another extent (re-read the table with partx --update ${disk.devPath})`);
  }
  const use: DeviceUse = {
    system: root && sameDev(root, dev) ? "the root filesystem /" : null,
    mountPoints: mountsOf(snap, dev)
      .map((m) => m.mountPoint)
      .filter((m) => m !== "/"), // reported as `system`
    busy,
  };
  if (snap.openers) use.openers = snap.openers.filter((o) => sameDev(o.dev, dev)).map(({ pid, command, access }) => ({ pid, command, access }));
  return use;
}

/** What counts as content and how signatures read in messages are policy's (policy/block-policy.ts). */
export { contentSignatures, describeSignatures } from "../../policy/block-policy.ts";

/** Nothing known about a device the kernel does not show. */
export const noUse = (): DeviceUse => ({ system: null, mountPoints: [], busy: [] });

/** "xfs", "LVM2_member (raid)", "conflicting signatures (…)" for messages. */
export function describeProbe(p: ProbeResult): string {
  if (p.kind === "empty") return "no signature";
  if (p.kind === "ambivalent") return `conflicting signatures (${p.detail})`;
  if (p.ptType && !p.type) return `a ${p.ptType} partition table`;
  return `${p.type ?? "an unknown signature"}${p.usage && p.usage !== "filesystem" ? ` (${p.usage})` : ""}`;
}

/** A probe that found exactly one filesystem. */
export const isFilesystem = (p: ProbeResult): p is { kind: "found"; type: string; usage: string; ptType: string | null } =>
  p.kind === "found" && p.usage === "filesystem" && p.type !== null;

/** resize2fs grows the whole ext family; xfs_growfs grows xfs. Other filesystems cannot be grown here. */
export function growableFamily(fsType: string | null): ManagedFsType | null {
  if (fsType === "ext2" || fsType === "ext3" || fsType === "ext4") return "ext4";
  if (fsType === "xfs") return "xfs";
  return null;
}

/** What the uid means for managing block devices: root is needed (block devices, mount, mkfs). */
export function rootRequirement(uid: number): string | null {
  return uid === 0 ? null : `csi-proxy must run as root to manage block devices (it runs as uid ${uid})`;
}
