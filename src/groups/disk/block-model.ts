/**
 * The Linux block-device model behind the disk and volume groups: pure decisions shared by both
 * services (docs/linux-concept-map.md explains every choice). Nothing here touches the host; the
 * services feed it what their host reports.
 */
import { Code, CsiProxyError, failedPrecondition, invalidArgument, notFound, permissionDenied } from "../../errors.ts";
import type { BlockDisk, BlockHostApi, BlockMount, BlockPartition, DevNumber, OfflineMark } from "./host-api.ts";
import type { DiskIds, DiskLocation } from "./types.ts";

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

/** InvalidArgument unless `n` is a uint32 (the wire type); protects services called in-process. */
export function checkDiskNumber(n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw invalidArgument(`disk number ${n} is not a uint32`);
  return n;
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

/** Upstream's "data partition" test: every partition except the Microsoft reserved one (MBR partitions count). */
export function isDataPartition(p: { typeId: string | null }): boolean {
  return p.typeId?.toLowerCase() !== MSR_TYPE;
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
 * PARTUUID (GPT GUID or MBR `xxxxxxxx-nn`) or `dev-<major>-<minor>`. Anything else: InvalidArgument.
 */
export function parseVolumeId(id: string): ParsedVolumeId {
  const m = /^\\\\\?\\Volume\{([^{}\\]+)\}\\?$/.exec(id);
  const inner = m?.[1] ?? "";
  const dev = /^dev-(\d{1,4})-(\d{1,7})$/.exec(inner);
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
}

export async function takeSnapshot(host: BlockHostApi): Promise<BlockSnapshot> {
  const [disks, mounts, swaps, marks] = await Promise.all([host.listDisks(), host.readMounts(), host.readSwapDevices(), host.readOfflineMarks()]);
  return { disks: visibleDisks(disks), mounts, swaps, marks };
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

/** Mount entries of a device, in mount-table order. */
export const mountsOf = (snap: BlockSnapshot, dev: DevNumber) => snap.mounts.filter((m) => sameDev(m, dev));

/** The mount visible at `mountPoint` (the last one mounted there), if any. */
export function mountAt(snap: BlockSnapshot, mountPoint: string): BlockMount | undefined {
  return snap.mounts.findLast((m) => m.mountPoint === mountPoint);
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
  return markOf(snap, disk) === undefined;
}

export function requireOnline(snap: BlockSnapshot, disk: BlockDisk, what: string): void {
  if (!isDiskOnline(snap, disk)) {
    throw failedPrecondition(`cannot ${what}: disk ${diskNumberOf(disk)} (${disk.devPath}) is offline; bring it online with SetDiskState first`);
  }
}

/* ---------------------------------------------------------------- in-use refusals */

/** Answers whether a mount point lies inside the kubelet path / working dirs. */
export type AllowedMountPoint = (mountPoint: string) => Promise<boolean>;

export interface InUseOptions {
  /** What is about to happen, for the message ("partition disk 7340035"). */
  what: string;
  /** Mounts inside the allowed dirs are fine (true) or also refused (false: e.g. going offline). */
  allowMountsInside: boolean;
  isAllowed: AllowedMountPoint;
}

/**
 * Never destroy data: FailedPrecondition when any of `devices` (a disk and its partitions, or one
 * volume plus its disk's holders) holds `/`, is used as swap, has holders (device-mapper, md,
 * bcache… stacked on it), or is mounted outside the allowed dirs (or anywhere, when mounts are not
 * allowed). The message names every reason.
 */
export async function refuseInUse(snap: BlockSnapshot, devices: readonly (BlockDisk | BlockPartition)[], options: InUseOptions): Promise<void> {
  const reasons: string[] = [];
  const root = rootMount(snap);
  for (const dev of devices) {
    if (root && sameDev(root, dev)) reasons.push(`${dev.devPath} holds the root filesystem /`);
    if (snap.swaps.some((s) => sameDev(s, dev))) reasons.push(`${dev.devPath} is in use as swap`);
    if (dev.holders.length) reasons.push(`${dev.devPath} is in use by ${dev.holders.map((h) => `/dev/${h}`).join(", ")} (holders)`);
    for (const m of mountsOf(snap, dev)) {
      if (m.mountPoint === "/") continue; // reported above
      const inside = await options.isAllowed(m.mountPoint);
      if (!inside) reasons.push(`${dev.devPath} is mounted at ${m.mountPoint}, outside the kubelet and working directories`);
      else if (!options.allowMountsInside) reasons.push(`${dev.devPath} is mounted at ${m.mountPoint}; unmount it first`);
    }
  }
  if (reasons.length) throw failedPrecondition(`refusing to ${options.what}: ${[...new Set(reasons)].join("; ")}`);
}

/** A path policy's `check` turned into an inside/outside answer for mount points. */
export function allowedMountPoint(policy: { check(path: string): Promise<string> }): AllowedMountPoint {
  return (mountPoint) => policy.check(mountPoint).then(
    () => true,
    () => false,
  );
}

/* ---------------------------------------------------------------- privileges */

/**
 * Disk and volume operations need root (block devices, mount, mkfs). Checked once when the service
 * is built; afterwards every call of a non-root daemon fails the same clear way.
 */
export function rootGuard(host: Pick<BlockHostApi, "effectiveUid">, group: string): (method: string) => void {
  const uid = host.effectiveUid();
  return (method) => {
    if (uid !== 0) {
      throw permissionDenied(`${group} ${method}: csi-proxy must run as root to manage block devices (it runs as uid ${uid})`);
    }
  };
}

/** Wraps a host error with context, keeping its code (host errors are Internal unless the host knew better). */
export function hostFailure(what: string, err: unknown): CsiProxyError {
  const e = CsiProxyError.from(err, Code.Internal);
  return new CsiProxyError(e.code, `${what}: ${e.message}`, { cause: err });
}
