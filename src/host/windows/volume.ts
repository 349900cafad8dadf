import * as fs from "node:fs/promises";
import type { Win32 } from "../../windows/win32.ts";
import { fsError } from "../fs-error.ts";
import type { CimPartition, CimVolume, WindowsVolumeHostApi } from "./host-api.ts";
import type { PowerShellPool } from "./powershell-pool.ts";
import { parsePartition, parseStringList, parseSupportedSize, parseVolume } from "./cim-output.ts";

/** The Win32 calls the volume host needs (a {@link Win32}, or a fake in tests). */
export type VolumeWin32 = Pick<Win32, "setVolumeMountPoint" | "deleteVolumeMountPoint" | "getVolumePathName" | "getVolumeNameForVolumeMountPoint" | "reparseTag">;

/** Volume host on Windows: CIM (MSFT_Volume, MSFT_Partition) through the worker pool; mount points through Win32 (koffi). */
export class WindowsVolumeHost implements WindowsVolumeHostApi {
  readonly #pool: PowerShellPool;
  readonly #win32: VolumeWin32;

  constructor(pool: PowerShellPool, win32: VolumeWin32) {
    this.#pool = pool;
    this.#win32 = win32;
  }

  async listVolumesOnDisk(diskNumber: number, partitionNumber: number): Promise<string[]> {
    return parseStringList("volume.listOnDisk", await this.#pool.call("volume.listOnDisk", { diskNumber, partitionNumber }));
  }

  async getVolume(volumeId: string): Promise<CimVolume> {
    return parseVolume("volume.get", await this.#pool.call("volume.get", { volumeId }));
  }

  async formatVolume(volumeId: string): Promise<void> {
    await this.#pool.call("volume.format", { volumeId }, { timeoutMs: 15 * 60_000 });
  }

  async flushVolume(volumeId: string): Promise<void> {
    await this.#pool.call("volume.flush", { volumeId });
  }

  async getVolumePartition(volumeId: string): Promise<CimPartition> {
    return parsePartition("volume.partition", await this.#pool.call("volume.partition", { volumeId }));
  }

  async getPartitionSupportedSize(volumeId: string): Promise<{ sizeMin: bigint; sizeMax: bigint }> {
    return parseSupportedSize("volume.supportedSize", await this.#pool.call("volume.supportedSize", { volumeId }));
  }

  async resizePartition(volumeId: string, sizeBytes: bigint): Promise<void> {
    await this.#pool.call("volume.resize", { volumeId, size: sizeBytes.toString() }, { timeoutMs: 15 * 60_000 });
  }

  async setVolumeMountPoint(mountPoint: string, volumeId: string): Promise<void> {
    this.#win32.setVolumeMountPoint(mountPoint, volumeId);
  }

  async deleteVolumeMountPoint(mountPoint: string): Promise<void> {
    this.#win32.deleteVolumeMountPoint(mountPoint);
  }

  async getVolumePathName(path: string): Promise<string> {
    return this.#win32.getVolumePathName(path);
  }

  async getVolumeNameForVolumeMountPoint(mountPoint: string): Promise<string> {
    return this.#win32.getVolumeNameForVolumeMountPoint(mountPoint);
  }

  async reparseTag(path: string): Promise<number | null> {
    return this.#win32.reparseTag(path);
  }

  async readLink(path: string): Promise<string> {
    return fs.readlink(path).catch((err) => {
      throw fsError(err, "readlink", path);
    });
  }

  async inspectDirectory(path: string): Promise<{ isDirectory: boolean; empty: boolean } | null> {
    let st;
    try {
      st = await fs.stat(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw fsError(err, "stat", path);
    }
    if (!st.isDirectory()) return { isDirectory: false, empty: false };
    const dir = await fs.opendir(path).catch((err) => {
      throw fsError(err, "read directory", path);
    });
    try {
      return { isDirectory: true, empty: (await dir.read()) === null };
    } finally {
      await dir.close().catch(() => {});
    }
  }
}
