import type { BlockHostApi } from "../disk/host-api.ts";

/** Filesystem size as the filesystem itself reports it, in bytes. */
export interface FilesystemUsage {
  totalBytes: bigint;
  /** Free blocks (including those reserved for root), as `df` counts "used" = total − free. */
  freeBytes: bigint;
}

/** Filesystems csi-proxy creates and grows on Linux. */
export type ManagedFsType = "ext4" | "xfs";

/**
 * Volume group host operations: pass-through (see disk/host-api.ts for the rules). Device paths come
 * from the block-device listing; mount points are absolute paths already checked by the service.
 */
export interface VolumeHostApi extends BlockHostApi {
  /** Creates a filesystem (mkfs.ext4 / mkfs.xfs without force flags: the tools' own "already formatted" checks stay armed). */
  makeFilesystem(devPath: string, fsType: ManagedFsType): Promise<void>;
  /** `mount -t fsType devPath target`. */
  mount(devPath: string, target: string, fsType: string): Promise<void>;
  /** `umount target` (not lazy, not forced). */
  unmount(target: string): Promise<void>;
  /** Whether `path` is an existing directory, and whether it has entries; null when nothing is there. Follows symlinks. */
  inspectDirectory(path: string): Promise<{ isDirectory: boolean; empty: boolean } | null>;
  /** statfs of a mounted filesystem (no process). */
  statfs(mountPoint: string): Promise<FilesystemUsage>;
  /** Size of an unmounted filesystem from its superblock (dumpe2fs -h / xfs_db -r). */
  readFilesystemUsage(devPath: string, fsType: ManagedFsType): Promise<FilesystemUsage>;
  /** Writes dirty data of the device and any filesystem mounted from it to stable storage (blockdev --flushbufs). */
  flush(devPath: string): Promise<void>;
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
