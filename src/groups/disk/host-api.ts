/**
 * What the disk group knows about the host, and the device facts it shares with the volume group
 * (volume/host-api.ts). One interface for every platform, modelled on upstream csi-proxy's Windows
 * concepts (MSFT_Disk numbers, RAW/GPT/MBR partition styles, partitions with types):
 * - Linux: host/linux/disk.ts (block devices; docs/linux-concept-map.md maps every concept);
 * - Windows: host/windows/disk.ts (MSFT_Disk / MSFT_Partition through CIM);
 * - fake: test/doubles/fake-disk-host.ts (stateful, Windows-shaped).
 *
 * Who decides what:
 * - disk-service.ts decides every refusal, through policy/block-policy.ts, from the facts reported
 *   here: initialise only a raw disk that holds nothing, add a data partition only when there is
 *   none, refuse disks that are offline or in use, when to bring a partition online.
 * - A host reports facts and carries out one operation per method. Its writes take the service's
 *   {@link DiskWriteCheck}: right before writing, the host reads the facts again ({@link DiskFacts})
 *   and hands them to the check (same disk, same refusals) — FailedPrecondition, nothing written. No
 *   host has a rule of its own:
 *   * Linux (host/linux/disk.ts): the facts of a fresh reading (openers of the nodes, and for a
 *     partition-table write every signature on the disk); then the kernel's exclusive claim is taken
 *     and released (sfdisk takes it again itself). The Linux host also keeps state: the offline
 *     marks (host/linux/offline-marks-file.ts).
 *   * Windows (host/windows/disk.ts): the facts read through the worker; the worker's write ops get
 *     the disk's facts as data and refuse only when they changed (host/windows/expected-facts.ts);
 *     the CIM provider's failures come back coded (host/windows/worker-error-codes.ts).
 *
 * Errors: an unknown disk number is NotFound; a failing tool, syscall or CIM method rejects with a
 * CsiProxyError (Internal unless the host knows better). Hosts never choose codes from request meaning.
 */
/** The device facts shared with the volume group (HostDevice, DeviceUse) live in policy/host-device.ts. */
import type { HostDevice, SignatureFact } from "../../policy/host-device.ts";
import type { DiskIds, DiskLocation } from "./types.ts";

export interface HostDisk extends HostDevice {
  /** The disk number of the API (uint32). */
  number: number;
  /** Adapter/bus/target/LUN; null for disks without a location (they are left out of ListDiskLocations). */
  location: DiskLocation | null;
  sizeBytes: bigint;
  online: boolean;
  /**
   * What must not change between looking the disk up and writing to it (Linux: device number,
   * diskseq, size; Windows: MSFT_Disk Path and size), opaque; the service's check refuses a write
   * whose fresh reading differs. Absent when the host has no such facts.
   */
  identity?: string;
}

export type PartitionStyle = "raw" | "gpt" | "mbr";

export interface HostPartition extends HostDevice {
  /** Partition number within the disk (1-based). */
  number: number;
  /** Partition type as the host writes it (GPT type GUID, MBR type), for messages. */
  type: string;
  /** The Microsoft reserved partition: upstream never counts it as a data partition. */
  reserved: boolean;
  /** Whether the host has the partition online (Linux: the kernel shows it); null when the host does not report it. */
  online: boolean | null;
}

/** A disk with what is on it, read for PartitionDisk. */
export interface DiskLayout {
  disk: HostDisk;
  /**
   * `raw`: no partition table; `unknown`: something the host cannot read as a partition table (see
   * {@link content}); null: the host can only tell by reading the disk's content, which
   * {@link DiskHostApi.probeDiskLayout} does (Linux, for a disk the kernel shows no partitions on).
   */
  partitionStyle: PartitionStyle | "unknown" | null;
  /**
   * Raw disk: what it holds without a partition table (`ext4 (filesystem)`, `conflicting signatures (…)`),
   * null when nothing or when the host cannot tell. Unknown style: what the host found instead.
   */
  content: string | null;
  /** The entries of its partition table (none when raw or unknown, unless the host shows partitions anyway). */
  partitions: HostPartition[];
  /** A destructive step on this disk whose end nobody saw (Linux intent records, state/intent-records.ts), when there is one. */
  unfinished?: UnfinishedStep;
}

/** An intent record left on a disk: the step counts as not ended. */
export interface UnfinishedStep {
  /** For messages: the record, its step, tool, pid and start. */
  intent: string;
  /** The signature types that step can leave on the disk. */
  writes: string[];
  /** Its tool is gone and the disk shows nothing but what that step can leave: the step may be redone. */
  onlyItsOwn: boolean;
}

/**
 * The facts a disk write is decided on, as a host reads them right before writing: the disk and its
 * partitions with their uses (with the processes holding their nodes, where the host sees them) and,
 * for a partition-table write, every signature on the disk (hosts that list them).
 */
export interface DiskFacts {
  disk: HostDisk;
  partitions: HostPartition[];
  signatures?: SignatureFact[];
  /** With the signatures: a step whose end nobody saw, whose tool is gone (see {@link DiskLayout.unfinished}). */
  unfinished?: Pick<UnfinishedStep, "intent" | "writes">;
}

/**
 * The service's decision on a write (policy/block-policy.ts `diskWriteCheck`): the host runs it on
 * the {@link DiskFacts} it reads right before writing, and writes only when it resolves.
 */
export type DiskWriteCheck = (now: DiskFacts) => Promise<void>;

/** Writes (initializeDisk, createDataPartition, setDiskOnline) take the service's {@link DiskWriteCheck} and run it on the facts read right before writing. */
export interface DiskHostApi {
  /** Why this daemon cannot manage disks at all (Linux: it is not root), or null. Synchronous: read once when a service is built. */
  missingPrivilege(): string | null;
  /**
   * Runs one operation of the service (called holding the disk's lock): the host's reads inside it
   * may share one reading of the host, taken at the first read after the start or after a write; every
   * write verifies on a reading of its own, taken right before it acts (Linux: snapshot-session.ts).
   */
  session?<T>(fn: () => Promise<T>): Promise<T>;
  /** Every disk, sorted by disk number. */
  listDisks(): Promise<HostDisk[]>;
  /** Identifiers by disk number. May open every disk; a disk that cannot be queried fails the call (upstream). */
  listDiskIds(): Promise<Map<number, DiskIds>>;
  /** NotFound when there is no such disk. */
  getDisk(diskNumber: number): Promise<HostDisk>;
  /** The disk, its partition style and partitions, as far as the host knows them without reading the disk's content. NotFound when absent. */
  getDiskLayout(diskNumber: number): Promise<DiskLayout>;
  /** {@link getDiskLayout}, reading the disk's content where needed (blkid): partitionStyle is never null. */
  probeDiskLayout(diskNumber: number): Promise<DiskLayout>;
  /** The entries of the disk's partition table, read off the disk where needed (after a change). */
  listPartitions(diskNumber: number): Promise<HostPartition[]>;
  /** Writes an empty GPT partition table (MSFT_Disk.Initialize(GPT)). */
  initializeDisk(diskNumber: number, check: DiskWriteCheck): Promise<void>;
  /** Adds one partition of the host's data type filling the largest free area, without drive letter. A Windows "access path in use" (42002) is AlreadyExists. */
  createDataPartition(diskNumber: number, style: "gpt" | "mbr", check: DiskWriteCheck): Promise<void>;
  /** Re-reads the disk's partitions (MSFT_Disk.Refresh). */
  refreshDisk(diskNumber: number): Promise<void>;
  /** Brings a partition online (MSFT_Partition.Online; Linux: has the kernel show it, Internal if it still does not). */
  onlinePartition(diskNumber: number, partitionNumber: number): Promise<void>;
  /** Asks the host to look for new and changed disks; returns the disks whose size must then be re-read one by one with {@link refreshDiskSize}. */
  scanForDisks(): Promise<number[]>;
  /** Re-reads one disk's size from its device (Linux: SCSI rescan, loop capacity). */
  refreshDiskSize(diskNumber: number): Promise<void>;
  /** Brings the disk online or takes it offline (MSFT_Disk.Online/Offline; Linux: docs/linux-concept-map.md "Online / offline"). */
  setDiskOnline(diskNumber: number, online: boolean, check: DiskWriteCheck): Promise<void>;
}
