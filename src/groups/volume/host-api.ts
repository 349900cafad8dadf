/**
 * What the volume group knows about the host. One interface for every platform, modelled on
 * upstream csi-proxy's Windows concepts (MSFT_Volume ids, the partition behind a volume, volume mount
 * points): Linux (host/linux/volume.ts), Windows (host/windows/volume.ts), fake (test/doubles/fake-volume-host.ts).
 *
 * Who decides what (as in disk/host-api.ts):
 * - volume-service.ts decides every refusal, through policy/block-policy.ts, from the facts reported
 *   here: what may be formatted (an empty volume or one holding the default filesystem, not mounted
 *   or reachable anywhere), mounted, unmounted and resized; disk offline; the volume or its disk
 *   holds the OS, is busy, is open, or is mounted outside the allowed directories.
 * - A host reports facts and carries out one operation per method. Its writes take the service's
 *   {@link WriteCheck}: right before writing, the host reads the facts again ({@link VolumeFacts})
 *   and hands them to the check, which is the service's rule (same identity, same refusals) —
 *   FailedPrecondition, nothing changed. No host has a rule of its own:
 *   * Linux (host/linux/volume.ts): the facts of a fresh reading (the processes holding the nodes
 *     too; for a format every signature and its mounts in every mount namespace); then the kernel's
 *     exclusive claim is taken and released (the kernel's refusal; mkfs keeps its own), and a mount
 *     refuses a link on the way to its target (anchored-mount.ts).
 *   * Windows (host/windows/volume.ts): the facts read through the worker; then the worker's
 *     `volume.format` gets those facts as data and refuses, in the same PowerShell call as the
 *     Format, only when they changed (host/windows/expected-facts.ts); the CIM provider's failures
 *     come back coded (host/windows/worker-error-codes.ts).
 *
 * Volume ids are the host's own (`\\?\Volume{GUID}\` on Windows; the Linux shape is in
 * docs/linux-concept-map.md). A volume id the host does not know is NotFound; a string that cannot
 * be a volume id on this host may be InvalidArgument.
 */
import type { HostDevice, NamespaceMountFact, SignatureFact } from "../../policy/host-device.ts";

/** Where a volume lives and what it depends on. */
export interface VolumeLocation {
  /** The volume's id as the host lists it (compare ids case-insensitively, trailing `\` optional). */
  id: string;
  diskNumber: number;
  /** The partition holding it; null for a volume without partition (Linux: a whole-disk filesystem). */
  partitionNumber: number | null;
  /** Size of that partition (of the whole disk when there is none), bytes. */
  sizeBytes: bigint;
  /** For messages: `/dev/loop3p1`, `disk 1 partition 2`. */
  name: string;
  /** Whether its disk is online; null when the host does not report it with the volume. */
  diskOnline: boolean | null;
  /** The volume's device and the devices it depends on (its disk), with their uses. */
  devices: HostDevice[];
  /**
   * What must not change between looking the volume up and writing to it (Linux: device number,
   * diskseq, partition extent), opaque; the host's writes refuse with FailedPrecondition when it
   * differs. Absent when the host has no such facts.
   */
  identity?: string;
  /**
   * Where else the volume is reachable, besides its own name: Windows' drive letter (`E:\\`) and folder
   * access paths of its partition. Absent where the host has no such thing (Linux: mounts are in
   * {@link devices}).
   */
  accessPaths?: string[];
}

/** What a volume holds. */
export interface VolumeContent {
  /** Its filesystem ("ext4", "NTFS"), null when it holds none. */
  fileSystem: string | null;
  /** Nothing at all on it: no filesystem and no other signature the host can see. */
  empty: boolean;
  /** For messages: "ext4", "LVM2_member (raid)", "conflicting signatures (…)", "no signature". */
  description: string;
}

/** Sizes of a volume's filesystem, as the filesystem reports them. */
export interface VolumeUsage {
  totalBytes: bigint;
  freeBytes: bigint;
}

/** How a volume's filesystem follows its partition when the partition grows. */
export type FilesystemGrowth =
  /** Nothing to do after the partition: no filesystem, or the host grows it with the partition (Windows). */
  | { kind: "none" }
  /** Grow it with {@link VolumeHostApi.growFilesystem} after the partition (Linux ext*, xfs). */
  | { kind: "separate" }
  /** It cannot be grown here (`growing vfat is not supported`). */
  | { kind: "unsupported"; reason: string }
  /** Growing it needs a privilege this daemon lacks; the reason says which and what to do instead. */
  | { kind: "needs-privilege"; reason: string };

/** What is mounted at a directory. */
export interface MountedVolume {
  mountPoint: string;
  /** The volume mounted there; null when what is mounted is not a volume (a tmpfs, say). */
  volumeId: string | null;
  /** For messages: `volume \\?\Volume{…}\`, `a tmpfs filesystem (tmpfs)`. */
  description: string;
}

/**
 * The facts a volume write is decided on, as a host reads them right before writing: the volume
 * located on that reading (with the processes holding its nodes, where the host sees them) and, for
 * a format, what it holds, every signature (hosts that list them) and its mounts in every mount
 * namespace (hosts that see them).
 */
export interface VolumeFacts {
  location: VolumeLocation;
  content?: VolumeContent;
  signatures?: SignatureFact[];
  namespaceMounts?: NamespaceMountFact[];
}

/**
 * The service's decision on a write (policy/block-policy.ts `volumeWriteCheck`): the host runs it on
 * the {@link VolumeFacts} it reads right before writing, and writes only when it resolves.
 */
export type WriteCheck = (now: VolumeFacts) => Promise<void>;

/**
 * Writes (formatVolume, resizePartition, growFilesystem, mountVolume) take the service's
 * {@link WriteCheck} and run it on the facts read right before writing: FailedPrecondition when the
 * volume changed or is in use. resizePartition may return the id that names the volume afterwards
 * (a Linux `dev-` id changes when the kernel re-creates the partition).
 */
export interface VolumeHostApi {
  /** Why this daemon cannot manage volumes at all (Linux: it is not root), or null. Synchronous: read once. */
  missingPrivilege(): string | null;
  /**
   * Runs one operation of the service (called holding the volume's disk lock): the host's reads inside
   * it may share one reading of the host, taken at the first read after the start or after a write;
   * every write verifies on a reading of its own, taken right before it acts (Linux: snapshot-session.ts).
   */
  session?<T>(fn: () => Promise<T>): Promise<T>;
  /** The filesystem FormatVolume creates: NTFS on Windows, ext4 or xfs (-default-fs-type) on Linux. */
  readonly defaultFileSystem: string;
  /** Whether a volume must hold a filesystem to be mounted (Linux: yes; Windows mounts RAW volumes too). */
  readonly mountRequiresFilesystem: boolean;

  /** Ids of the volumes on a disk; partitionNumber 0 = every partition. Unknown disk: empty list. */
  listVolumes(diskNumber: number, partitionNumber: number): Promise<string[]>;
  locateVolume(volumeId: string): Promise<VolumeLocation>;
  getVolumeContent(volumeId: string): Promise<VolumeContent>;
  /**
   * {@link VolumeContent.fileSystem} alone, where the host can tell it with less work than the whole
   * content (Linux: blkid's verdict without wipefs's list of every signature). Same answer.
   */
  getVolumeFilesystem?(volumeId: string): Promise<string | null>;
  /** Filesystem sizes (MSFT_Volume Size/SizeRemaining; Linux statfs or the superblock). FailedPrecondition when the host cannot measure what the volume holds. */
  getVolumeUsage(volumeId: string): Promise<VolumeUsage>;
  /**
   * Creates {@link defaultFileSystem} on the volume (a quick format), replacing one of that type, once
   * `check` passed on the facts read right before (content, signatures and mounts elsewhere included).
   */
  formatVolume(volumeId: string, check: WriteCheck): Promise<void>;
  /** Writes the volume's cached data to stable storage. */
  flushVolume(volumeId: string): Promise<void>;
  /** The largest size the volume's partition can have (MSFT_Partition.GetSupportedSize SizeMax), and the unit partition sizes are rounded down to. */
  getPartitionSupportedSize(volumeId: string): Promise<{ maxBytes: bigint; alignBytes: bigint }>;
  getFilesystemGrowth(volumeId: string): Promise<FilesystemGrowth>;
  /** Sets the size of the volume's partition (bytes, a multiple of alignBytes; start unchanged). */
  resizePartition(volumeId: string, sizeBytes: bigint, check: WriteCheck): Promise<string | void>;
  /** Grows the volume's filesystem to fill its partition (only for {@link FilesystemGrowth} "separate"). */
  growFilesystem(volumeId: string, check: WriteCheck): Promise<void>;
  /**
   * Hosts that grow filesystems separately (Linux): bytes of the partition the filesystem does not
   * cover yet (partition size − filesystem size from its superblock), 0 when it fills it or cannot
   * be measured. A resize interrupted between the partition and the filesystem shows here.
   */
  filesystemShortfall?(volumeId: string): Promise<bigint>;
  /**
   * Hosts whose partition changes reach the kernel in a separate step (Linux): when the volume's
   * partition table entry has the kernel's number and start but a larger size — a resize interrupted
   * between writing the table and telling the kernel — the kernel is told the table's size (the data
   * is not touched). True when it did; any other disagreement is left to the refusals.
   */
  syncInterruptedResize?(volumeId: string): Promise<boolean>;
  /** What is mounted exactly at `path` (a link to a volume mount point counts on Windows); null when it is not a mount point. */
  mountedAt(path: string): Promise<MountedVolume | null>;
  /** The mount holding `path`: the nearest mount point at or above it, links followed; null when none. */
  volumeHolding(path: string): Promise<MountedVolume | null>;
  /** Whether `path` is a directory and whether it has entries; null when nothing is there. Follows links. */
  inspectDirectory(path: string): Promise<{ isDirectory: boolean; empty: boolean } | null>;
  /** Mounts the volume at `path` (an existing empty directory). `fileSystem`: its filesystem when the caller has read it. */
  mountVolume(volumeId: string, path: string, fileSystem: string | null, check: WriteCheck): Promise<void>;
  /** Removes the mount at `path`; the directory stays. */
  unmountVolume(path: string): Promise<void>;
}
