/**
 * A device as the services' shared refusals (block-policy.ts) see it: a name for messages and the
 * uses a host reports. Disks and partitions (groups/disk/host-api.ts) and volumes
 * (groups/volume/host-api.ts) carry it.
 */

/**
 * How a disk, partition or volume is used. The services refuse to change devices in use, from these
 * facts alone; a host reports what it can see (Windows sees no holders or swap, for instance).
 */
export interface DeviceUse {
  /**
   * The operating system's own filesystem on it (`the root filesystem /`, `the Windows system volume C:`),
   * null when none. Its mount is not repeated in {@link mountPoints}.
   */
  system: string | null;
  /** Where it is mounted by anyone: absolute mount points as the host shows them. */
  mountPoints: string[];
  /** Other uses that keep it busy, each a phrase that follows "is" (`in use as swap`, `in use by /dev/dm-0 (holders)`). */
  busy: string[];
  /**
   * Processes other than csi-proxy holding its device node open or mapped (a backup agent, `dd`, a
   * VM's raw disk) — not users of files on a filesystem mounted from it. Read by hosts that can see
   * them (Linux) on the reading a write verifies, right before it; absent when the host did not look.
   */
  openers?: DeviceOpenerFact[];
}

/** A process holding a device node: by an open descriptor (read-only or writable) or only a mapping. */
export interface DeviceOpenerFact {
  pid: number;
  /** Its command name ("dd"); "" when unknown. */
  command: string;
  access: "read" | "read-write" | "mapped";
}

/** A disk or partition, named for messages, with its uses. */
export interface HostDevice {
  /** For messages: `/dev/loop3`, `\\.\PhysicalDrive1`, `disk 1 partition 2`. */
  name: string;
  use: DeviceUse;
}

/**
 * A signature a host found on a device (libblkid's list of every superblock and partition table it
 * can see: `ext4`, `LVM2_member`, `crypto_LUKS`, `gpt`…), with where it starts, for messages.
 * Reported by hosts that can list them (Linux), on the reading a write verifies.
 */
export interface SignatureFact {
  type: string;
  /** Byte offset of the signature in the device. */
  offset: bigint;
}

/** A mount of a device in some mount namespace (csi-proxy's own included), and a process living in that namespace. */
export interface NamespaceMountFact {
  /** As that namespace shows it. */
  mountPoint: string;
  pid: number;
}
