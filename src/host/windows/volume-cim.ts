import * as fs from "node:fs/promises";
import type { Awaitable, Win32 } from "../../win32/win32.ts";
import { windowsFsError } from "./windows-fs-error.ts";
import type { CimPartition, CimVolume } from "./cim-types.ts";
import type { PowerShellPool } from "./powershell-pool.ts";
import { parsePartition, parseStringList, parseSupportedSize, parseVolume } from "./cim-output.ts";

/** The Win32 calls the volume host needs (a {@link Win32}, or a fake in tests). */
export type VolumeWin32 = Awaitable<Pick<Win32, "setVolumeMountPoint" | "deleteVolumeMountPoint" | "getVolumePathName" | "getVolumeNameForVolumeMountPoint" | "reparseTag">>;

/**
 * The Storage WMI volume calls and Win32 mount-point calls upstream csi-proxy's `pkg/os/volume`
 * makes: one worker op (MSFT_Volume, MSFT_Partition through the PowerShell pool) or one Win32 call
 * (koffi) each. Pass-through; host/windows/volume.ts turns this into the volume group's host.
 *
 * Errors are CsiProxyErrors: unknown volume / partition NotFound; CIM errors and failed method
 * return values mapped by worker-error-codes.ts; Win32 errors by win32/win32-errors.ts.
 */
export class WindowsVolumeCim {
  readonly #pool: PowerShellPool;
  readonly #win32: VolumeWin32;

  constructor(pool: PowerShellPool, win32: VolumeWin32) {
    this.#pool = pool;
    this.#win32 = win32;
  }

  /** MSFT_Partition of the disk (all, or PartitionNumber) → MSFT_PartitionToVolume → UniqueId. */
  async listVolumesOnDisk(diskNumber: number, partitionNumber: number): Promise<string[]> {
    return parseStringList("volume.listOnDisk", await this.#pool.call("volume.listOnDisk", { diskNumber, partitionNumber }));
  }

  /** The MSFT_Volume with this UniqueId, exact (case-insensitive) match (NotFound). */
  async getVolume(volumeId: string): Promise<CimVolume> {
    return parseVolume("volume.get", await this.#pool.call("volume.get", { volumeId }));
  }

  /**
   * MSFT_Volume.Format(FileSystem="NTFS", FileSystemLabel="", Full=false, Force=true): a quick format. Refused
   * first, in the same worker call (FailedPrecondition, nothing written), when the partition has a drive
   * letter or any access path besides its `\\?\Volume{…}` name, or the volume holds a file system other
   * than NTFS.
   */
  async formatVolume(volumeId: string): Promise<void> {
    await this.#pool.call("volume.format", { volumeId }, { timeoutMs: 15 * 60_000 });
  }

  /** MSFT_Volume.Flush(). */
  async flushVolume(volumeId: string): Promise<void> {
    await this.#pool.call("volume.flush", { volumeId });
  }

  /** The volume's MSFT_Partition (MSFT_PartitionToVolume; NotFound when none). */
  async getVolumePartition(volumeId: string): Promise<CimPartition> {
    return parsePartition("volume.partition", await this.#pool.call("volume.partition", { volumeId }));
  }

  /** MSFT_Partition.GetSupportedSize() of the volume's partition. */
  async getPartitionSupportedSize(volumeId: string): Promise<{ sizeMin: bigint; sizeMax: bigint }> {
    return parseSupportedSize("volume.supportedSize", await this.#pool.call("volume.supportedSize", { volumeId }));
  }

  /** MSFT_Partition.Resize(Size) of the volume's partition, then MSFT_Disk.Refresh(). */
  async resizePartition(volumeId: string, sizeBytes: bigint): Promise<void> {
    await this.#pool.call("volume.resize", { volumeId, size: sizeBytes.toString() }, { timeoutMs: 15 * 60_000 });
  }

  /** SetVolumeMountPointW(mountPoint ending in `\`, volumeId). */
  async setVolumeMountPoint(mountPoint: string, volumeId: string): Promise<void> {
    await this.#win32.setVolumeMountPoint(mountPoint, volumeId);
  }

  /** DeleteVolumeMountPointW(mountPoint ending in `\`). */
  async deleteVolumeMountPoint(mountPoint: string): Promise<void> {
    await this.#win32.deleteVolumeMountPoint(mountPoint);
  }

  /** GetVolumePathNameW(path): the mount point (`C:\`, `C:\mnt\x\`) of the volume holding path. */
  async getVolumePathName(path: string): Promise<string> {
    return this.#win32.getVolumePathName(path);
  }

  /** GetVolumeNameForVolumeMountPointW(mountPoint ending in `\`): `\\?\Volume{GUID}\`. */
  async getVolumeNameForVolumeMountPoint(mountPoint: string): Promise<string> {
    return this.#win32.getVolumeNameForVolumeMountPoint(mountPoint);
  }

  /** Reparse tag of `path` (FindFirstFileW dwReserved0) when it is a reparse point, else null (also when missing). */
  async reparseTag(path: string): Promise<number | null> {
    return this.#win32.reparseTag(path);
  }

  /** Target of a symlink/junction (Node readlink). */
  async readLink(path: string): Promise<string> {
    return fs.readlink(path).catch((err) => {
      throw windowsFsError(err, "readlink", path);
    });
  }
}
