/**
 * The volume group's host on Windows ({@link VolumeHostApi}): MSFT_Volume / MSFT_Partition through
 * the PowerShell worker pool, volume mount points through Win32 ({@link WindowsVolumeCim}), reported
 * in the group's terms. Decisions are volume-service.ts's (upstream master's, docs/upstream-behaviour.md,
 * Volume). The uses of a volume are those of its partition (host/windows/disk.ts says which Windows
 * reports), plus its drive letter and access paths; whether its disk is online is not reported
 * with it. Before each write the host hands the facts it reads to the service's check, and the
 * worker call that writes gets them as `expect` and refuses only a change (expected-facts.ts).
 */
import * as path from "node:path";
import type { FilesystemGrowth, MountedVolume, VolumeContent, VolumeFacts, VolumeHostApi, VolumeLocation, VolumeUsage, WriteCheck } from "../../groups/volume/host-api.ts";
import { failedPrecondition } from "../../errors.ts";
import { IO_REPARSE_TAG_MOUNT_POINT, IO_REPARSE_TAG_SYMLINK } from "../../win32/win32-constants.ts";
import { Win32Error } from "../../win32/win32-errors.ts";
import type { PowerShellPool } from "./powershell/powershell-pool.ts";
import { inspectDirectory } from "../inspect-directory.ts";
import { WindowsVolumeCim, type VolumeWin32 } from "./powershell/volume-cim.ts";
import { FileSystemType, type CimPartition, type CimVolume } from "./powershell/cim-types.ts";
import { expectedVolumeFacts, type ExpectedVolumeFacts } from "./powershell/expected-facts.ts";
import { partitionName, partitionUse, systemDriveLetter } from "./disk.ts";
import { callSignal } from "../../util/call-scope.ts";
import { NOTHING_CHANGED, stopIfAborted } from "../../util/stop-if-aborted.ts";

/** Between a write's checks (worker calls that read) and the write: an aborted call stops there, nothing changed (the pool would refuse the write's call anyway, without saying so). */
const beforeWrite = (before: string) => stopIfAborted(callSignal(), { before, done: NOTHING_CHANGED });

/** Links followed at most while resolving a path (upstream fails closed after 256, 32abcf4). */
const MAX_HOPS = 256;
const VOLUME_NAME = /Volume\{[\w-]*\}/i;

const withSlash = (p: string) => (p.endsWith("\\") ? p : p + "\\");
const noSlash = (p: string) => p.replace(/\\+$/, "");

export interface WindowsVolumeHostOptions {
  /** Drive letter of the system volume (default: from %SystemDrive%). */
  systemDrive?: string;
}

export class WindowsVolumeHost implements VolumeHostApi {
  readonly cim: WindowsVolumeCim;
  readonly #systemDrive: string;
  /** MSFT_Volume.Format creates NTFS (upstream). */
  readonly defaultFileSystem = "NTFS";
  /** SetVolumeMountPoint mounts RAW volumes too. */
  readonly mountRequiresFilesystem = false;

  constructor(pool: PowerShellPool, win32: VolumeWin32, options: WindowsVolumeHostOptions = {}) {
    this.cim = new WindowsVolumeCim(pool, win32);
    this.#systemDrive = (options.systemDrive ?? systemDriveLetter()).toUpperCase();
  }

  missingPrivilege(): string | null {
    return null; // Storage WMI answers AccessDenied itself (mapped to PermissionDenied)
  }

  listVolumes(diskNumber: number, partitionNumber: number): Promise<string[]> {
    return this.cim.listVolumesOnDisk(diskNumber, partitionNumber);
  }

  /** The volume's MSFT_Partition. The id is the one asked for (the worker matched it exactly, ignoring case). */
  async locateVolume(volumeId: string): Promise<VolumeLocation> {
    return this.#location(volumeId, await this.cim.getVolumePartition(volumeId));
  }

  #location(volumeId: string, p: CimPartition): VolumeLocation {
    const name = partitionName(p);
    return {
      id: volumeId,
      diskNumber: p.diskNumber,
      partitionNumber: p.partitionNumber,
      sizeBytes: p.size,
      name,
      diskOnline: null,
      devices: [{ name, use: partitionUse(p, this.#systemDrive) }],
      // The partition's place on its disk (MSFT_Partition DiskNumber, PartitionNumber, Offset, Size).
      identity: `disk ${p.diskNumber} partition ${p.partitionNumber} offset ${p.offset} size ${p.size}`,
      accessPaths: p.accessPaths,
    };
  }

  /** FileSystemType Unknown (0) is both "empty" and "a file system Windows cannot read": Windows cannot tell them apart. */
  async getVolumeContent(volumeId: string): Promise<VolumeContent> {
    return contentOf(await this.cim.getVolume(volumeId));
  }

  /**
   * The facts of a write, read right before it (the volume's partition and the volume), handed to the
   * service's `check`; returns them as the worker expects them, for the write's own call to compare.
   */
  async #verifyWrite(volumeId: string, check: WriteCheck): Promise<ExpectedVolumeFacts> {
    const p = await this.cim.getVolumePartition(volumeId);
    const v = await this.cim.getVolume(volumeId);
    const facts: VolumeFacts = { location: this.#location(volumeId, p), content: contentOf(v) };
    await check(facts);
    return expectedVolumeFacts(p, v);
  }

  async getVolumeUsage(volumeId: string): Promise<VolumeUsage> {
    const v = await this.cim.getVolume(volumeId);
    return { totalBytes: v.size, freeBytes: v.sizeRemaining };
  }

  /** The service's check on fresh facts, then MSFT_Volume.Format in a worker call that refuses if those facts changed. */
  async formatVolume(volumeId: string, check: WriteCheck): Promise<void> {
    const expected = await this.#verifyWrite(volumeId, check);
    beforeWrite(`formatting volume ${volumeId}`);
    await this.cim.formatVolume(volumeId, expected);
  }

  flushVolume(volumeId: string): Promise<void> {
    return this.cim.flushVolume(volumeId);
  }

  async getPartitionSupportedSize(volumeId: string): Promise<{ maxBytes: bigint; alignBytes: bigint }> {
    return { maxBytes: (await this.cim.getPartitionSupportedSize(volumeId)).sizeMax, alignBytes: 1n };
  }

  /** MSFT_Partition.Resize grows the file system with the partition. */
  async getFilesystemGrowth(): Promise<FilesystemGrowth> {
    return { kind: "none" };
  }

  /** The service's check on fresh facts, then MSFT_Partition.Resize and MSFT_Disk.Refresh in a worker call that refuses if those facts changed. */
  async resizePartition(volumeId: string, sizeBytes: bigint, check: WriteCheck): Promise<void> {
    const expected = await this.#verifyWrite(volumeId, check);
    beforeWrite(`resizing the partition of volume ${volumeId}`);
    await this.cim.resizePartition(volumeId, sizeBytes, expected);
  }

  async growFilesystem(): Promise<void> {
    // Never needed: getFilesystemGrowth is always "none" (Resize grew the file system already).
  }

  /**
   * The volume mounted at a directory: a volume mount point, or a symlink/junction leading to one
   * (at most 256 links; more is FailedPrecondition); null when `path` is neither.
   */
  async mountedAt(p: string): Promise<MountedVolume | null> {
    let current = noSlash(p);
    for (let hop = 0; hop < MAX_HOPS; hop++) {
      const tag = await this.cim.reparseTag(current);
      if (tag === IO_REPARSE_TAG_MOUNT_POINT) {
        const id = await this.#volumeNameOf(current);
        if (id) return mounted(p, id);
        // a junction to a directory, not a volume mount point: follow it
      } else if (tag !== IO_REPARSE_TAG_SYMLINK) {
        return null;
      }
      const next = await this.#follow(current);
      if (next.volumeId) return mounted(p, next.volumeId);
      current = next.path;
    }
    throw failedPrecondition(`${p}: more than ${MAX_HOPS} links`);
  }

  /** Walks up from `path`: the nearest mount point (links followed, at most 256), or the drive's own volume. */
  async volumeHolding(p: string): Promise<MountedVolume | null> {
    let current = noSlash(path.win32.normalize(p));
    for (let hop = 0; hop < MAX_HOPS; hop++) {
      if (/^[A-Za-z]:$/.test(current)) return mounted(current + "\\", await this.cim.getVolumeNameForVolumeMountPoint(current + "\\"));
      const tag = await this.cim.reparseTag(current);
      if (tag === IO_REPARSE_TAG_MOUNT_POINT || tag === IO_REPARSE_TAG_SYMLINK) {
        const id = tag === IO_REPARSE_TAG_MOUNT_POINT ? await this.#volumeNameOf(current) : null;
        if (id) return mounted(current, id);
        const next = await this.#follow(current);
        if (next.volumeId) return mounted(current, next.volumeId);
        current = next.path;
        continue;
      }
      const parent = path.win32.dirname(current);
      if (parent === current) break;
      current = noSlash(parent);
    }
    return null;
  }

  /** The volume of a volume mount point; null when the reparse point is not one (a directory junction). */
  async #volumeNameOf(mountPoint: string): Promise<string | null> {
    try {
      return await this.cim.getVolumeNameForVolumeMountPoint(withSlash(mountPoint));
    } catch (err) {
      if (err instanceof Win32Error) return null;
      throw err;
    }
  }

  /** Where a link leads: a volume (`…Volume{GUID}…` in its target), or the next path to look at. */
  async #follow(link: string): Promise<{ volumeId: string | null; path: string }> {
    const target = await this.cim.readLink(link);
    const m = VOLUME_NAME.exec(target);
    if (m) return { volumeId: `\\\\?\\${m[0]}\\`, path: link };
    return { volumeId: null, path: noSlash(path.win32.resolve(path.win32.dirname(link), target)) };
  }

  inspectDirectory(p: string): Promise<{ isDirectory: boolean; empty: boolean } | null> {
    return inspectDirectory(p);
  }

  /** The service's check on the volume's partition read right before, then SetVolumeMountPointW(path\, volume\). */
  async mountVolume(volumeId: string, p: string, _fileSystem: string | null, check: WriteCheck): Promise<void> {
    await check({ location: await this.locateVolume(volumeId) });
    beforeWrite(`mounting volume ${volumeId} at ${p}`);
    await this.cim.setVolumeMountPoint(withSlash(p), withSlash(volumeId));
  }

  /** DeleteVolumeMountPointW(path\). */
  unmountVolume(p: string): Promise<void> {
    return this.cim.deleteVolumeMountPoint(withSlash(p));
  }
}

function contentOf(v: CimVolume): VolumeContent {
  if (v.fileSystemType === FileSystemType.Unknown) return { fileSystem: null, empty: true, description: "no file system Windows knows" };
  const fileSystem = v.fileSystemType === FileSystemType.NTFS ? "NTFS" : v.fileSystem || `file system type ${v.fileSystemType}`;
  return { fileSystem, empty: false, description: fileSystem };
}

const mounted = (mountPoint: string, volumeId: string): MountedVolume => ({ mountPoint, volumeId, description: `volume ${volumeId}` });
