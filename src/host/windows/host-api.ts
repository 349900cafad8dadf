/**
 * Host operations of the disk and volume groups on Windows: pass-through, one CIM query/method
 * (through the PowerShell worker pool) or one Win32 call (koffi) each, shaped after upstream
 * csi-proxy's `pkg/os/disk` / `pkg/os/volume` APIs. Decisions (initialise only RAW disks, tolerate
 * "access path in use", the 100 MiB resize threshold, mount idempotency…) live in
 * windows-disk-service.ts / windows-volume-service.ts.
 *
 * (The groups' own host-api.ts files describe Linux block devices — sysfs, dev_t numbers, blkid —
 * which Windows does not have; Windows disks are MSFT_Disk numbers and volumes MSFT_Volume ids.)
 *
 * Errors are CsiProxyErrors: unknown disk / volume / partition NotFound; CIM errors and failed
 * method return values mapped by powershell-pool.ts; Win32 errors by windows/win32.ts.
 */

/** MSFT_Disk, as csi-proxy uses it. */
export interface CimDisk {
  number: number;
  /** e.g. `PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0` ("" when none). */
  location: string;
  /** Device path for CreateFile (`\\?\scsi#disk&…#{53f56307-…}`). */
  path: string;
  /** Untrimmed (may be all spaces); null when the disk reports none. */
  serialNumber: string | null;
  size: bigint;
  isOffline: boolean;
  /** 0 RAW (no partition table), 1 MBR, 2 GPT. */
  partitionStyle: number;
}

/** MSFT_Partition, as csi-proxy uses it. */
export interface CimPartition {
  diskNumber: number;
  partitionNumber: number;
  /** `{e3c9e316-…}` etc.; "" on MBR disks. */
  gptType: string;
  mbrType: number | null;
  size: bigint;
  offset: bigint;
  driveLetter: string;
}

/** MSFT_Volume, as csi-proxy uses it. */
export interface CimVolume {
  /** `\\?\Volume{GUID}\` */
  uniqueId: string;
  /** MSFT_Volume.FileSystemType: 0 Unknown (unformatted), 14 NTFS, 15 ReFS… */
  fileSystemType: number;
  fileSystem: string;
  size: bigint;
  sizeRemaining: bigint;
}

export const PartitionStyle = { RAW: 0, MBR: 1, GPT: 2 } as const;
export const FileSystemType = { Unknown: 0, NTFS: 14 } as const;
/** GPT partition types upstream uses. */
export const GPT_BASIC_DATA = "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}";
export const GPT_MICROSOFT_RESERVED = "{e3c9e316-0b5c-4db8-817d-f92df00215ae}";

export interface WindowsDiskHostApi {
  /** SELECT * FROM MSFT_Disk. */
  listDisks(): Promise<CimDisk[]>;
  /** The MSFT_Disk with this Number (NotFound). */
  getDisk(diskNumber: number): Promise<CimDisk>;
  /** MSFT_Disk.Initialize(PartitionStyle). */
  initializeDisk(diskNumber: number, partitionStyle: number): Promise<void>;
  /** MSFT_Partition rows of the disk. */
  listPartitions(diskNumber: number): Promise<CimPartition[]>;
  /** MSFT_Disk.CreatePartition(UseMaximumSize, AssignDriveLetter=false, GptType when given, IsHidden=false, IsActive=false). */
  createPartition(diskNumber: number, gptType: string | null): Promise<void>;
  /** MSFT_Disk.Refresh(). */
  refreshDisk(diskNumber: number): Promise<void>;
  /** MSFT_Partition.Online(). */
  onlinePartition(diskNumber: number, partitionNumber: number): Promise<void>;
  /** MSFT_StorageSetting.UpdateHostStorageCache(). */
  rescan(): Promise<void>;
  /** MSFT_Disk.Online() / Offline(). */
  setDiskOnline(diskNumber: number, online: boolean): Promise<void>;
  /** CreateFileW(path) + IOCTL_STORAGE_GET_DEVICE_NUMBER + IOCTL_STORAGE_QUERY_PROPERTY(StorageDeviceIdProperty). */
  queryDeviceIds(path: string): Promise<{ deviceNumber: number; page83: string }>;
}

export interface WindowsVolumeHostApi {
  /** MSFT_Partition of the disk (all, or PartitionNumber) → MSFT_PartitionToVolume → UniqueId. */
  listVolumesOnDisk(diskNumber: number, partitionNumber: number): Promise<string[]>;
  /** The MSFT_Volume with this UniqueId, exact (case-insensitive) match (NotFound). */
  getVolume(volumeId: string): Promise<CimVolume>;
  /** MSFT_Volume.Format(FileSystem="NTFS", FileSystemLabel="", Full=false, Force=true). */
  formatVolume(volumeId: string): Promise<void>;
  /** MSFT_Volume.Flush(). */
  flushVolume(volumeId: string): Promise<void>;
  /** The volume's MSFT_Partition (MSFT_PartitionToVolume; NotFound when none). */
  getVolumePartition(volumeId: string): Promise<CimPartition>;
  /** MSFT_Partition.GetSupportedSize() of the volume's partition. */
  getPartitionSupportedSize(volumeId: string): Promise<{ sizeMin: bigint; sizeMax: bigint }>;
  /** MSFT_Partition.Resize(Size) of the volume's partition, then MSFT_Disk.Refresh(). */
  resizePartition(volumeId: string, sizeBytes: bigint): Promise<void>;
  /** SetVolumeMountPointW(mountPoint ending in `\`, volumeId). */
  setVolumeMountPoint(mountPoint: string, volumeId: string): Promise<void>;
  /** DeleteVolumeMountPointW(mountPoint ending in `\`). */
  deleteVolumeMountPoint(mountPoint: string): Promise<void>;
  /** GetVolumePathNameW(path): the mount point (`C:\`, `C:\mnt\x\`) of the volume holding path. */
  getVolumePathName(path: string): Promise<string>;
  /** GetVolumeNameForVolumeMountPointW(mountPoint ending in `\`): `\\?\Volume{GUID}\`. */
  getVolumeNameForVolumeMountPoint(mountPoint: string): Promise<string>;
  /** Reparse tag of `path` (FindFirstFileW dwReserved0) when it is a reparse point, else null (also when missing). */
  reparseTag(path: string): Promise<number | null>;
  /** Target of a symlink/junction (Node readlink). */
  readLink(path: string): Promise<string>;
  /** Whether `path` exists, and whether it is a directory with no entries; null when nothing is there. */
  inspectDirectory(path: string): Promise<{ isDirectory: boolean; empty: boolean } | null>;
}
