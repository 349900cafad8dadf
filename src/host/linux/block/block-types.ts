/**
 * What the Linux block tools report: device numbers, disks and their partitions, partition tables,
 * mounts, loop devices, signatures, openers and offline marks. Data only; the interfaces that report
 * them are split by concern (block-reads.ts, signature-probe.ts, device-claims.ts, partitioning.ts,
 * filesystem-tools.ts, mount-tools.ts, write-back.ts, device-state.ts, privileges.ts) and put
 * together for the Linux hosts in linux-block-tools.ts.
 */

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
  /**
   * Set when the kernel shows partitions but their table could not be read off the device (an I/O
   * error: the message names the device, bytes and errno; sysfs-block.ts). The partitions' uuid and
   * typeId are then null: a look-up that misses answers this error, never NotFound (block-snapshot.ts).
   */
  tableError?: string;
}

/** What `blkid -p` finds on a device (superblock / partition-table probing, no cache). */
export type ProbeResult =
  | { kind: "empty" }
  /**
   * Exactly one recognised signature. usage: "filesystem", "raid", "crypto", "other"…; `unfinished`: a
   * filesystem whose mkfs never finished (xfs's sb_inprogress still set: a stopped mkfs.xfs), which
   * IsVolumeFormatted does not count as formatted.
   */
  | { kind: "found"; type: string | null; usage: string | null; ptType: string | null; unfinished?: true }
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

/** A persisted "offline" mark for a device without a native offline state (see docs/linux-concept-map.md). */
export interface OfflineMark {
  major: number;
  minor: number;
  /** The device's diskseq when marked: a mark for an earlier medium (re-attached loop) does not count. */
  diskSeq: string | null;
  /** Whether csi-proxy set the kernel read-only flag (and must clear it when going online). */
  setReadOnly: boolean;
}

/** Filesystems csi-proxy creates and grows on Linux. */
export type ManagedFsType = "ext4" | "xfs";
