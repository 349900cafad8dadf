import * as fs from "node:fs/promises";
import type { Awaitable, Win32 } from "../../../win32/win32.ts";
import { windowsFsError } from "../windows-fs-error.ts";
import type { CimPartition, CimVolume } from "./cim-types.ts";
import type { PowerShellPool } from "./powershell-pool.ts";
import { WorkerHeldError, WorkerKilledError } from "./powershell-worker.ts";
import { Code, CsiProxyError } from "../../../errors.ts";
import { outlivingRecorder, runInCall } from "../../../util/call-scope.ts";
import type { ExpectedVolumeFacts } from "./expected-facts.ts";

/** Bound of one Format or Resize worker call, and of the wait for the storage service after its worker was killed. */
export const STORAGE_OP_TIMEOUT_MS = 15 * 60_000;

export interface VolumeCimOptions {
  /** Milliseconds between two looks at a volume whose Format/Resize outlived its worker. Default 2000. */
  idlePollMs?: number;
  /** How long to wait for it at most; the volume is then taken as idle. Default {@link STORAGE_OP_TIMEOUT_MS}. */
  idleBoundMs?: number;
}
import { parseStringList, parseSupportedSize, parseVolume, parseVolumeFacts } from "./cim-output.ts";

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
  readonly #idlePollMs: number;
  readonly #idleBoundMs: number;

  constructor(pool: PowerShellPool, win32: VolumeWin32, options: VolumeCimOptions = {}) {
    this.#pool = pool;
    this.#win32 = win32;
    this.#idlePollMs = options.idlePollMs ?? 2000;
    this.#idleBoundMs = options.idleBoundMs ?? STORAGE_OP_TIMEOUT_MS;
  }

  /**
   * A Format or Resize: the worker calls the CIM method, which the storage service carries out. The
   * call is held (powershell-pool.ts): its deadline, cancel or timeout answers the caller while the
   * worker is left to finish, and the disk's lock is released when the worker answers or exits. When
   * the worker is nevertheless killed during the call (its caller went away, or its timeout), killing
   * powershell.exe does not stop what the service already started: the call answers saying so, and
   * the work is recorded as outliving it (util/call-scope.ts) until {@link #untilIdle}, so the disk's
   * operation lock stays held until the volume is seen idle.
   */
  async #storageOp(op: "volume.format" | "volume.resize", args: { [key: string]: string | ExpectedVolumeFacts }, volumeId: string): Promise<void> {
    const note = outlivingRecorder();
    try {
      await this.#pool.call(op, args, { timeoutMs: STORAGE_OP_TIMEOUT_MS, hold: true });
    } catch (e) {
      // held: the worker finishes the op and its answer or exit ends the outliving work (the pool recorded it)
      if (e instanceof WorkerHeldError || !(e instanceof WorkerKilledError)) throw e;
      note({ description: `${op} of volume ${volumeId}, handed to the Windows storage service before its worker was killed`, ended: this.#untilIdle(volumeId) });
      throw new CsiProxyError(e.code, `${e.message}; the storage service may still be carrying it out: the volume's disk stays locked until it is seen idle`, { cause: e });
    }
  }

  /**
   * Settles once a fresh worker sees the volume idle — no storage job new, starting or running
   * (MSFT_StorageJob JobState 2–4) and the volume answering — or gone (NotFound), or after
   * idleBoundMs, or when the pool closes. Runs outside the call (no signal). Never rejects.
   */
  #untilIdle(volumeId: string): Promise<void> {
    return runInCall(undefined, async () => {
      const end = Date.now() + this.#idleBoundMs;
      while (Date.now() < end && !this.#pool.closed) {
        await new Promise((r) => setTimeout(r, this.#idlePollMs));
        try {
          if ((await this.storageBusy(volumeId)) === 0) return;
        } catch (e) {
          if (e instanceof CsiProxyError && e.code === Code.NotFound) return;
        }
      }
    });
  }

  /** Storage jobs new, starting or running on the host (MSFT_StorageJob), looked at with the volume (NotFound when it is gone). */
  async storageBusy(volumeId: string): Promise<number> {
    const r = (await this.#pool.call("volume.busy", { volumeId })) as { runningJobs?: unknown } | null;
    return typeof r?.runningJobs === "number" ? r.runningJobs : 0;
  }

  /** MSFT_Partition of the disk (all, or PartitionNumber) → MSFT_PartitionToVolume → UniqueId. */
  async listVolumesOnDisk(diskNumber: number, partitionNumber: number): Promise<string[]> {
    return parseStringList("volume.listOnDisk", await this.#pool.call("volume.listOnDisk", { diskNumber, partitionNumber }));
  }

  /** The volume, its MSFT_Partition, whether that partition's MSFT_Disk is offline, and the facts a write compares (expected-facts.ts), in one worker call (NotFound when any is missing). */
  async getVolumeFacts(volumeId: string): Promise<{ volume: CimVolume; partition: CimPartition; diskOffline: boolean; facts: ExpectedVolumeFacts }> {
    return parseVolumeFacts("volume.facts", await this.#pool.call("volume.facts", { volumeId }));
  }

  /** The MSFT_Volume with this UniqueId, exact (case-insensitive) match (NotFound). */
  async getVolume(volumeId: string): Promise<CimVolume> {
    return parseVolume("volume.get", await this.#pool.call("volume.get", { volumeId }));
  }

  /**
   * MSFT_Volume.Format(FileSystem="NTFS", FileSystemLabel="", Full=false, Force=false): a quick format
   * that the provider refuses, rather than dismounting it, for a volume with open handles (its
   * failure is answered with the provider's code, mapped by worker-error-codes.ts).
   * Refused first, in the same worker call (FailedPrecondition, nothing written), when the volume's
   * facts differ from `expect` (expected-facts.ts).
   */
  async formatVolume(volumeId: string, expect: ExpectedVolumeFacts): Promise<void> {
    await this.#storageOp("volume.format", { volumeId, expect }, volumeId);
  }

  /** MSFT_Volume.Flush(). */
  async flushVolume(volumeId: string): Promise<void> {
    await this.#pool.call("volume.flush", { volumeId });
  }


  /** MSFT_Partition.GetSupportedSize() of the volume's partition. */
  async getPartitionSupportedSize(volumeId: string): Promise<{ sizeMin: bigint; sizeMax: bigint }> {
    return parseSupportedSize("volume.supportedSize", await this.#pool.call("volume.supportedSize", { volumeId }));
  }

  /** MSFT_Partition.Resize(Size) of the volume's partition, then MSFT_Disk.Refresh(); refused first when the volume's facts differ from `expect`. */
  async resizePartition(volumeId: string, sizeBytes: bigint, expect: ExpectedVolumeFacts): Promise<void> {
    await this.#storageOp("volume.resize", { volumeId, size: sizeBytes.toString(), expect }, volumeId);
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
