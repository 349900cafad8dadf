/**
 * The Linux kernel interfaces and tools the Linux disk and volume hosts (disk.ts, volume.ts) are built
 * on: sysfs/procfs reads, blkid, util-linux, e2fsprogs, xfsprogs. One implementation runs them for
 * real (linux-block-tools.ts); a stateful fake (test/doubles/fake-block-tools.ts) models a Linux host's block
 * devices for the unit tests of the Linux semantics.
 *
 * Every method does one thing and decides nothing: what a Linux block device means in the API's
 * terms is interpreted in block-model.ts, and what to do about it is decided by the group services.
 * Errors: a failing tool or syscall rejects with a CsiProxyError (HostCommandError for tools).
 */


/** How long read-only openers of a device node are given to close before they count (udev probing takes milliseconds). */
export const OPENER_SETTLE_MS = 1000;

/** A Linux device number. */
export interface DevNumber {
  major: number;
  minor: number;
}

/** A process holding a block device node: descriptor access mode, or a mapping. */
export interface DeviceOpener {
  pid: number;
  /** /proc/<pid>/comm ("dd", "qemu-system-x86"), "" when it cannot be read. */
  command: string;
  dev: DevNumber;
  /** "read" / "read-write": an open descriptor (O_RDONLY, or O_WRONLY/O_RDWR); "mapped": a file mapping only. */
  access: "read" | "read-write" | "mapped";
}

/** One line of the mount table that matters here. */
export interface BlockMount {
  /** Device of the mounted filesystem (st_dev): for a block filesystem, its block device. */
  major: number;
  minor: number;
  /** Absolute mount point, canonical (as the kernel shows it). */
  mountPoint: string;
  fsType: string;
  /** Mount source as shown, e.g. /dev/loop3p1. */
  source: string;
  /** The mount's id in mountinfo (unique while it exists); absent where the reader does not know it. */
  mountId?: number;
}

/** A partition the kernel knows (a /sys/block/<disk>/<part> entry), with what its table says. */
export interface BlockPartition {
  /** Kernel name, e.g. "loop3p1". */
  name: string;
  /** Device node, e.g. "/dev/loop3p1". */
  devPath: string;
  major: number;
  minor: number;
  /** Partition number as the kernel numbers it (GPT entry index + 1, MBR slot). */
  number: number;
  /** Start and size in 512-byte units (sysfs units, whatever the logical block size). */
  startSectors: bigint;
  sizeSectors: bigint;
  /** PARTUUID, lower case: the GPT entry's unique GUID, or "<mbr signature>-<nn>" for MBR; null when unknown. */
  uuid: string | null;
  /** Lower-case GPT partition type GUID, or MBR type as "0x83"; null when unknown. */
  typeId: string | null;
  /** Kernel names of devices stacked on this partition (/sys/.../holders: dm, md, bcache…). */
  holders: string[];
  readOnly: boolean;
}

/** The partition table read from the disk itself (not the kernel's view). */
export interface PartitionTable {
  type: "gpt" | "dos";
  /** Table entries, whether or not the kernel shows them. Same units as BlockPartition. */
  entries: {
    number: number;
    startSectors: bigint;
    sizeSectors: bigint;
    uuid: string | null;
    typeId: string | null;
    /** MBR logical partitions: where their extended boot record sits (512-byte units). */
    ebrSectors?: bigint;
  }[];
  /** GPT: last LBA usable for partitions, in 512-byte units, as the primary header records it. */
  lastUsableSectors?: bigint;
  /** GPT: whether the backup header sits on the disk's last sector (false after the disk grew). */
  backupAtEnd?: boolean;
  /** GPT: 512-byte units at the end of the disk taken by the backup entries and header (33 for the usual 128-entry table on 512-byte sectors). */
  trailerSectors?: bigint;
}

/** A whole block device: one /sys/block entry. */
export interface BlockDisk {
  /** Kernel name, e.g. "loop3", "sda", "nvme0n1". */
  name: string;
  devPath: string;
  major: number;
  minor: number;
  /** /sys/block/X/diskseq (increases each time a device number gets new media, e.g. a loop re-attach); null if the kernel has none. */
  diskSeq: string | null;
  sizeBytes: bigint;
  logicalBlockSize: number;
  readOnly: boolean;
  removable: boolean;
  /** Loop device: the backing file (null when not a loop device or not attached). */
  loopBackingFile: string | null;
  /** SCSI address (H:C:T:L) of /sys/block/X/device, when it is a SCSI device. */
  scsiAddress: { host: number; channel: number; target: number; lun: number } | null;
  /** SCSI device state (/sys/block/X/device/state: "running", "offline", …); null when not SCSI. */
  scsiState: string | null;
  /** Serial attribute of the device (virtio /sys/block/X/serial, NVMe device/serial), untrimmed. */
  serial: string | null;
  /** Raw SCSI VPD pages 0x80 (unit serial) and 0x83 (device identification), when exposed. */
  vpdPage80: Uint8Array | null;
  vpdPage83: Uint8Array | null;
  /** /sys/block/X/wwid or device/wwid (NVMe, some SCSI), trimmed. */
  wwid: string | null;
  holders: string[];
  partitions: BlockPartition[];
  /** Read from the device only when the kernel shows partitions; null otherwise (and for unreadable tables). */
  partitionTable: PartitionTable | null;
}

/** What `blkid -p` finds on a device (superblock / partition-table probing, no cache). */
export type ProbeResult =
  | { kind: "empty" }
  /** Exactly one recognised signature. usage: "filesystem", "raid", "crypto", "other"… */
  | { kind: "found"; type: string | null; usage: string | null; ptType: string | null }
  /** Several conflicting signatures (blkid "ambivalent result"). */
  | { kind: "ambivalent"; detail: string };

/** What a loop device reads and writes: a regular file (identified by st_dev/st_ino) or a block device (its number). */
export type LoopBacking = { kind: "file"; dev: DevNumber; ino: bigint } | { kind: "block"; dev: DevNumber };

/** An attached loop device (/sys/block/loopN/loop), whatever the API shows of it. */
export interface LoopDevice {
  name: string;
  devPath: string;
  major: number;
  minor: number;
  /** Bytes the loop device exposes (its /sys size). */
  sizeBytes: bigint;
  /** Where in the backing object it starts (losetup --offset), bytes. */
  offsetBytes: bigint;
  /** Backing file path as the kernel shows it (for messages). */
  backingFile: string;
  /** null when the backing object cannot be identified any more (deleted file). */
  backing: LoopBacking | null;
}

/** One signature wipefs finds (every superblock and partition-table signature at any offset libblkid probes). */
export interface Signature {
  type: string;
  /** Byte offset in the probed device. */
  offset: bigint;
}

/** A held exclusive claim on a block device (open with O_EXCL). */
export interface DeviceClaim {
  /** Ends the claim (closes the file). Idempotent. */
  release(): Promise<void>;
}

/** A persisted "offline" mark for a device without a native offline state (see docs/linux-concept-map.md). */
export interface OfflineMark {
  major: number;
  minor: number;
  /** The device's diskseq when marked: a mark for an earlier medium (re-attached loop) does not count. */
  diskSeq: string | null;
  /** Whether csi-proxy set the kernel read-only flag (and must clear it when going online). */
  setReadOnly: boolean;
}

/** Filesystem size as the filesystem itself reports it, in bytes. */
export interface FilesystemUsage {
  totalBytes: bigint;
  /** Free blocks (including those reserved for root), as `df` counts "used" = total − free. */
  freeBytes: bigint;
}

/** A mount seen in some mount namespace: the pid it was read through and the mount point there. */
export interface NamespaceMount {
  pid: number;
  mountPoint: string;
  /** The mount's id (mount ids are unique across namespaces); absent where the reader does not know it. */
  mountId?: number;
}

/** Filesystems csi-proxy creates and grows on Linux. */
export type ManagedFsType = "ext4" | "xfs";

export interface BlockTools {
  /* ---- reads */
  /** The daemon's effective uid (0 = root). Synchronous. */
  effectiveUid(): number;
  /** Capabilities in the effective set, by name ("CAP_SYS_RESOURCE"…), read from /proc/self/status. */
  effectiveCapabilities(): Promise<Set<string>>;
  /**
   * Every whole block device (/sys/block) with a medium (size > 0), with its partitions. With
   * `tables: false` no partition table is read off a device (partitionTable, and the partitions'
   * uuid and typeId, are null): for answers that need only sysfs (identifiers, locations). With
   * `partitions: false`, identity only: no partition, holder, read-only or SCSI state is read
   * (`partitions` and `holders` empty): what ListDiskIDs needs, a few sysfs reads per disk.
   */
  listDisks(options?: { tables?: boolean; partitions?: boolean }): Promise<BlockDisk[]>;
  /** The whole block device with this number (via /sys/dev/block), null when there is none (or it is a partition). */
  findDisk(dev: DevNumber): Promise<BlockDisk | null>;
  /**
   * The whole disk holding a disk or partition device number (itself for a disk), null when it is
   * neither; lets a read take a snapshot of that one disk. Optional: without it, every disk is read.
   */
  diskOfDevice?(dev: DevNumber): DevNumber | null;
  /**
   * A text that changes whenever a block device appears, goes or gets a new medium (names and
   * diskseq of /sys/block); undefined where the kernel gives no diskseq. Optional.
   */
  diskSetKey?(): string | undefined;
  readMounts(): Promise<BlockMount[]>;
  /**
   * Mounts of the device number in every mount namespace this process can see (each /proc/<pid>/mountinfo,
   * one process per namespace), this process's own included: what FormatVolume names when it refuses a
   * mounted volume. Processes that end or cannot be read meanwhile are skipped.
   */
  mountsInAnyNamespace(dev: DevNumber): Promise<NamespaceMount[]>;
  /** Devices in use as swap (/proc/swaps). */
  readSwapDevices(): Promise<DevNumber[]>;
  /**
   * Processes other than this daemon holding one of `devs`' device nodes open or mapped
   * (device-openers.ts: /proc/<pid>/fd and map_files matched by st_rdev). When every opener found
   * holds the node read-only (udev's blkid probing after a change), they are looked at again for up
   * to {@link OPENER_SETTLE_MS} and only those still open are reported.
   */
  deviceOpeners(devs: readonly DevNumber[]): Promise<DeviceOpener[]>;
  /** Signature probe of a device node (blkid -p). */
  probe(devPath: string): Promise<ProbeResult>;
  /** Every signature on the device, partition tables included, whatever blkid's verdict (wipefs --no-act). */
  listSignatures(devPath: string): Promise<Signature[]>;
  /** Every attached loop device with its backing object, offset and size (sysfs, stat). */
  listLoops(): Promise<LoopDevice[]>;
  /** Filesystem types the running kernel supports (/proc/filesystems). */
  kernelFilesystems(): Promise<Set<string>>;
  /** Reads the partition table from the disk itself (GPT or MBR); null when there is none it can parse. */
  readPartitionTable(disk: Pick<BlockDisk, "devPath" | "logicalBlockSize" | "sizeBytes">): Promise<PartitionTable | null>;
  /** Persisted offline marks (empty when none were ever written). */
  readOfflineMarks(): Promise<OfflineMark[]>;
  /** Whether `path` is an existing directory, and whether it has entries; null when nothing is there. Follows symlinks. */
  inspectDirectory(path: string): Promise<{ isDirectory: boolean; empty: boolean } | null>;
  /** statfs of a mounted filesystem (no process). */
  statfs(mountPoint: string): Promise<FilesystemUsage>;
  /** Size of an unmounted filesystem from its superblock (dumpe2fs -h / xfs_db -r). */
  readFilesystemUsage(devPath: string, fsType: ManagedFsType): Promise<FilesystemUsage>;

  /**
   * Takes the kernel's exclusive claim on a block device (open O_EXCL): while held, nothing else can
   * mount it, claim it, or claim its disk (for a partition) or any of its partitions (for a disk).
   * FailedPrecondition when the device is claimed already, or when the node no longer is device `dev`.
   */
  claimExclusive(devPath: string, dev: DevNumber): Promise<DeviceClaim>;

  /* ---- disks */
  /** Writes an empty GPT partition table to the disk. */
  createGptTable(devPath: string): Promise<void>;
  /** Appends one partition of type `typeId` (GPT GUID or MBR hex type) filling the largest free area, then syncs the kernel's partition list. */
  appendPartition(devPath: string, typeId: string): Promise<void>;
  /** Makes the kernel's partition devices match the on-disk table (BLKPG via partx --update). */
  syncPartitions(devPath: string): Promise<void>;
  /** Host numbers of the SCSI adapters (/sys/class/scsi_host/hostN). */
  listScsiHosts(): Promise<number[]>;
  /** Asks a SCSI adapter to scan for new devices (writes "- - -" to its scan file). */
  scanScsiHost(host: number): Promise<void>;
  /** Asks a SCSI disk to re-read its capacity (writes 1 to device/rescan). */
  rescanScsiDevice(name: string): Promise<void>;
  /** Re-reads a loop device's capacity from its backing file (losetup --set-capacity). */
  refreshLoopCapacity(devPath: string): Promise<void>;
  /** Writes the SCSI device state ("running" or "offline"). */
  setScsiState(name: string, state: "running" | "offline"): Promise<void>;
  /** Sets or clears the kernel read-only flag of a block device (blockdev --setro/--setrw). */
  setReadOnly(devPath: string, readOnly: boolean): Promise<void>;
  /** Replaces the persisted offline marks. */
  writeOfflineMarks(marks: OfflineMark[]): Promise<void>;

  /* ---- volumes */
  /**
   * Creates a filesystem, quick (mkfs.ext4 / mkfs.xfs defaults: no full write of the device). `replace`:
   * the device holds a filesystem of `fsType` the caller verified as unused, to be replaced (mkfs.xfs
   * refuses an existing filesystem without -f; mke2fs asks only on a terminal). Without it no force flag
   * is passed. Neither ever overrides the tools' own refusal of a mounted or busy device.
   */
  makeFilesystem(devPath: string, fsType: ManagedFsType, replace?: boolean): Promise<void>;
  /**
   * Mounts devPath (fsType, no options) on target, an absolute canonical directory, which is held as a
   * handle opened without following links; a link on the way or a target moved meanwhile: FailedPrecondition.
   */
  mount(devPath: string, target: string, fsType: string): Promise<void>;
  /**
   * Unmounts the mount whose mount point is target (not lazy, not forced), found through its parent
   * held as a handle; a link on the way or a different mount there: FailedPrecondition.
   */
  unmount(target: string): Promise<void>;
  /**
   * syncfs(2) of the filesystem mounted at `mountPoint` (opened as a directory, no final link
   * followed; with `mountId`, FailedPrecondition unless the opened directory lies on that mount),
   * through a descriptor opened for this call and closed after it. A write-back error the kernel
   * reports (EIO, ENOSPC, EDQUOT; EROFS from a filesystem whose journal aborted), or a filesystem
   * that can no longer be opened with EIO (xfs after a shutdown), rejects with DataLoss.
   */
  flushFilesystem(mountPoint: string, mountId?: number): Promise<void>;
  /**
   * fsync(2) of the block device node (opened read-only for this call; FailedPrecondition when it is
   * no longer device `dev`): the device's own cached writes. A write-back error rejects with DataLoss.
   */
  flushDevice(devPath: string, dev: DevNumber): Promise<void>;
  /** Moves a GPT backup header to the disk's current last sector (sfdisk --relocate gpt-bak-std). */
  relocateGptBackup(diskDevPath: string): Promise<void>;
  /** Sets partition `number`'s size to `sizeSectors` (512-byte units, start unchanged) and tells the kernel (BLKPG via partx). */
  resizePartition(diskDevPath: string, number: number, sizeSectors: bigint): Promise<void>;
  /** Forced check of an unmounted filesystem, fixing only what is safe to fix automatically (e2fsck -f -p). */
  checkFilesystem(devPath: string, fsType: ManagedFsType): Promise<void>;
  /** Grows a filesystem to fill its device: resize2fs on the device (online or offline), xfs_growfs on the mount point. */
  growFilesystem(devPath: string, fsType: ManagedFsType, mountPoint: string | null): Promise<void>;
  /** Creates a private empty directory for a temporary mount (mode 0700) and returns its path. */
  makeTempDir(): Promise<string>;
  /** Removes an empty directory made by makeTempDir. */
  removeTempDir(path: string): Promise<void>;
}
