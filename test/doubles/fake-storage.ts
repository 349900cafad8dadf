/**
 * A stateful in-memory storage host in upstream's (Windows') terms — numbered disks with a partition
 * style, partitions with types and drive letters, volumes with `\\?\Volume{GUID}\` ids, file systems
 * and mount points — behind the platform-neutral fakes of test/doubles/fake-disk-host.ts and test/doubles/fake-volume-host.ts.
 * The group services' unit tests run against it.
 *
 * It behaves like Windows where that matters for the services' decisions: Initialize turns a RAW
 * disk into GPT (optionally adding a Microsoft reserved partition, as Windows does on larger disks),
 * CreatePartition fills the free space with a basic data partition and its (unformatted) volume,
 * Resize grows the file system with its partition, SetVolumeMountPoint needs an existing directory.
 * Every mutating host call is logged in `calls`; `failNext(method, error)` injects a failure.
 */
import type { DeviceUse } from "../../src/policy/host-device.ts";
import type { DiskIds, DiskLocation } from "../../src/groups/disk/types.ts";
import { alreadyExists, internal, notFound } from "../../src/errors.ts";
import { FakeCallLog } from "./fake-call-log.ts";

const MiB = 1024n * 1024n;
export const BASIC_DATA = "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}";
export const MICROSOFT_RESERVED = "{e3c9e316-0b5c-4db8-817d-f92df00215ae}";

export interface FakeVolume {
  id: string;
  /** null: FileSystemType Unknown. */
  fileSystem: string | null;
  /** What it holds when that is not a file system the host knows (null: nothing). */
  foreign: string | null;
  sizeBytes: bigint;
  freeBytes: bigint;
}

export interface FakePartitionRow {
  number: number;
  type: string;
  reserved: boolean;
  sizeBytes: bigint;
  /** Largest size it may grow to (GetSupportedSize SizeMax). */
  maxBytes: bigint;
  /** null: the host does not report it (Windows). */
  online: boolean | null;
  driveLetter: string;
  /** Access paths besides the drive letter and the volume's own `\\?\Volume{…}` name (folder mount points). */
  accessPaths?: string[];
  /** Extra uses to report (holders, swap, mounts): for tests of the refusals. */
  use: Partial<DeviceUse>;
  volume: FakeVolume | null;
}

export interface FakeDiskRow {
  number: number;
  location: DiskLocation | null;
  ids: DiskIds;
  sizeBytes: bigint;
  /** Size the medium grew to, visible after a rescan. */
  pendingSizeBytes?: bigint;
  online: boolean;
  style: "raw" | "gpt" | "mbr" | "unknown";
  /** What a RAW disk holds (null: nothing, or the host cannot tell). */
  content: string | null;
  use: Partial<DeviceUse>;
  partitions: FakePartitionRow[];
}

export class FakeStorage extends FakeCallLog {
  disks: FakeDiskRow[] = [];
  /** Mounts by directory (as given): a volume id, or a description of something else mounted there. */
  mounts = new Map<string, { volumeId: string | null; description: string }>();
  /** Existing directories and how many entries each has. */
  dirs = new Map<string, number>();
  /** Drive letter of the system volume. */
  systemDrive = "C";
  /** What the host says is missing to manage disks at all. */
  missingPrivilege: string | null = null;
  defaultFileSystem = "NTFS";
  mountRequiresFilesystem = false;
  /** How the file system follows a growing partition (Windows: with it). */
  growth: "none" | "separate" | { kind: "unsupported" | "needs-privilege"; reason: string } = "none";
  /** Initialize(GPT) also creates a Microsoft reserved partition (Windows does on disks ≥ 16 GiB). */
  reservedOnInitialize = false;
  /** CreatePartition creates the partition but reports 42002 "access path already in use" (AlreadyExists). */
  accessPathInUse = false;
  /** Scanning returns these disks for one-by-one size refreshes (Linux-like); Windows refreshes all itself. */
  refreshOneByOne = false;
  private nextGuid = 1;

  addDisk(init: Partial<FakeDiskRow> & { number: number }): FakeDiskRow {
    const disk: FakeDiskRow = {
      location: null,
      ids: { page83: "", serialNumber: "" },
      sizeBytes: 10n * 1024n * MiB,
      online: true,
      style: "raw",
      content: null,
      use: {},
      partitions: [],
      ...init,
    };
    this.disks.push(disk);
    return disk;
  }

  /** Adds a partition (and, unless reserved, its volume) to a disk; returns it. */
  addPartition(diskNumber: number, init: Partial<Omit<FakePartitionRow, "volume">> & { volume?: Partial<FakeVolume> | null } = {}): FakePartitionRow {
    const disk = this.disk(diskNumber);
    const reserved = init.reserved ?? init.type?.toLowerCase() === MICROSOFT_RESERVED;
    const sizeBytes = init.sizeBytes ?? 1024n * MiB;
    const { volume, ...rest } = init;
    const p: FakePartitionRow = {
      number: disk.partitions.length + 1,
      type: BASIC_DATA,
      reserved,
      sizeBytes,
      maxBytes: sizeBytes,
      online: null,
      driveLetter: "",
      use: {},
      volume: reserved || volume === null ? null : { id: this.newVolumeId(), fileSystem: null, foreign: null, sizeBytes, freeBytes: sizeBytes, ...volume },
      ...rest,
    };
    disk.partitions.push(p);
    if (disk.style === "raw") disk.style = "gpt";
    return p;
  }

  newVolumeId(): string {
    return `\\\\?\\Volume{00000000-0000-4000-8000-${(this.nextGuid++).toString(16).padStart(12, "0")}}\\`;
  }

  disk(n: number): FakeDiskRow {
    const d = this.disks.find((x) => x.number === n);
    if (!d) throw notFound(`disk ${n} not found`);
    return d;
  }

  /** The volume with this id (case-insensitive, trailing backslash optional) and where it lives; NotFound otherwise. */
  volume(id: string): { disk: FakeDiskRow; partition: FakePartitionRow; volume: FakeVolume } {
    const norm = (x: string) => (x.endsWith("\\") ? x : `${x}\\`).toLowerCase();
    for (const disk of this.disks) {
      for (const partition of disk.partitions) {
        if (partition.volume && norm(partition.volume.id) === norm(id)) return { disk, partition, volume: partition.volume };
      }
    }
    throw notFound(`volume ${id} not found`);
  }

  /** Uses of a partition: the system drive, plus what a test added. */
  partitionUse(p: FakePartitionRow): DeviceUse {
    return {
      system: p.driveLetter.toUpperCase() === this.systemDrive ? `the Windows system volume ${this.systemDrive}:` : (p.use.system ?? null),
      mountPoints: [...(p.use.mountPoints ?? [])],
      busy: [...(p.use.busy ?? [])],
    };
  }

  /* ---------------------------------------------------------------- mutations the hosts perform */

  initialize(n: number): void {
    const disk = this.disk(n);
    if (disk.style !== "raw") throw alreadyExists(`fake Initialize: disk ${n} is already initialised`);
    disk.style = "gpt";
    if (this.reservedOnInitialize) this.addPartition(n, { type: MICROSOFT_RESERVED, sizeBytes: 16n * MiB });
  }

  createPartition(n: number, style: "gpt" | "mbr"): void {
    const disk = this.disk(n);
    if (!disk.online) throw internal(`fake CreatePartition: disk ${n} is offline`);
    const used = disk.partitions.reduce((sum, p) => sum + p.sizeBytes, 0n);
    const free = disk.sizeBytes - used - 2n * MiB;
    if (free <= 0n) throw internal(`fake CreatePartition: no free space on disk ${n}`);
    this.addPartition(n, { type: style === "gpt" ? BASIC_DATA : "0x7", sizeBytes: free, maxBytes: free });
    if (this.accessPathInUse) throw alreadyExists("MSFT_Disk.CreatePartition failed: code=42002");
  }

  /** The medium grows (cloud disk expanded); visible after a rescan. */
  growMedium(n: number, sizeBytes: bigint): void {
    this.disk(n).pendingSizeBytes = sizeBytes;
  }

  applyPendingSize(disk: FakeDiskRow): void {
    if (disk.pendingSizeBytes === undefined) return;
    const grownBy = disk.pendingSizeBytes - disk.sizeBytes;
    disk.sizeBytes = disk.pendingSizeBytes;
    delete disk.pendingSizeBytes;
    const last = disk.partitions.at(-1);
    if (last) last.maxBytes += grownBy;
  }
}
