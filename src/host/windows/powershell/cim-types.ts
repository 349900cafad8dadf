/**
 * The Storage WMI objects (namespace root/Microsoft/Windows/Storage) the Windows disk and volume
 * hosts read, as the worker script reports them (cim-output.ts parses them), and the constants
 * upstream csi-proxy uses with them.
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
  /** Where the partition is reachable besides its volume's `\\?\Volume{…}` name: its drive letter (`E:\`) first, then folder access paths. */
  accessPaths: string[];
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
