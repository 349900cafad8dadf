/**
 * The volume group's host on Windows ({@link VolumeHostApi}): MSFT_Volume / MSFT_Partition through
 * the PowerShell worker pool, volume mount points through Win32 ({@link WindowsVolumeCim}), reported
 * in the group's terms. Decisions are volume-service.ts's (upstream master's, docs/upstream-behaviour.md,
 * Volume). The uses of a volume are those of its partition (host/windows/disk.ts says which Windows
 * reports), plus its drive letter and access paths, and whether its disk is offline.
 *
 * One read per call: within one call of the service (util/call-scope.ts callKey) the volume's
 * look-ups — where it is, what it holds, the facts a Format or Resize is decided on — are answered
 * from one worker call (`volume.facts`: the volume, its partition and its disk's offline state),
 * taken at the call's first look-up (before the disk's lock), so a FormatVolume is 2 worker round
 * trips: that read and the Format. The write's own worker call gets those facts as `expect` and
 * compares them with what it reads in the same PowerShell call, right before the CIM method
 * (expected-facts.ts): a change since the read — by another call while this one waited for the
 * lock, or outside csi-proxy — is refused there (FailedPrecondition, nothing written). A mount has
 * no such same-call check (SetVolumeMountPointW is Win32), so it decides on a read of its own taken
 * right before it. Every write ends the call's read: later look-ups read again.
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
import type { ExpectedVolumeFacts } from "./powershell/expected-facts.ts";
import { partitionName, partitionUse, systemDriveLetter } from "./disk.ts";
import { callKey, callSignal } from "../../util/call-scope.ts";
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

/** One `volume.facts` read: the volume, its partition, whether the partition's disk is offline. */
type VolumeRead = { volume: CimVolume; partition: CimPartition; diskOffline: boolean; facts: ExpectedVolumeFacts };

export class WindowsVolumeHost implements VolumeHostApi {
  readonly cim: WindowsVolumeCim;
  /** Per call (callKey), per volume id as asked: the call's one read; gone with the call. */
  readonly #reads = new WeakMap<object, Map<string, Promise<VolumeRead>>>();
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

  /**
   * The call's read of the volume (one `volume.facts` worker call per call and volume; a failed read
   * is not kept); outside a call, a new read each time.
   */
  #read(volumeId: string): Promise<VolumeRead> {
    const call = callKey();
    if (!call) return this.cim.getVolumeFacts(volumeId);
    let reads = this.#reads.get(call);
    if (!reads) this.#reads.set(call, (reads = new Map()));
    const kept = reads.get(volumeId);
    if (kept) return kept;
    const read = this.cim.getVolumeFacts(volumeId);
    reads.set(volumeId, read);
    read.catch(() => {
      if (reads.get(volumeId) === read) reads.delete(volumeId);
    });
    return read;
  }

  /** A write runs (or ran): the call's later look-ups read again. */
  #changed(): void {
    const call = callKey();
    if (call) this.#reads.delete(call);
  }

  async #write<T>(fn: () => Promise<T>): Promise<T> {
    this.#changed();
    try {
      return await fn();
    } finally {
      this.#changed();
    }
  }

  /** The volume's MSFT_Partition and its disk's state, from the call's read. The id is the one asked for (the worker matched it exactly, ignoring case). */
  async locateVolume(volumeId: string): Promise<VolumeLocation> {
    const r = await this.#read(volumeId);
    return this.#location(volumeId, r.partition, r.diskOffline);
  }

  #location(volumeId: string, p: CimPartition, diskOffline: boolean): VolumeLocation {
    const name = partitionName(p);
    return {
      id: volumeId,
      diskNumber: p.diskNumber,
      partitionNumber: p.partitionNumber,
      sizeBytes: p.size,
      name,
      diskOnline: !diskOffline,
      devices: [{ name, use: partitionUse(p, this.#systemDrive) }],
      // The partition's place on its disk (MSFT_Partition DiskNumber, PartitionNumber, Offset, Size).
      identity: `disk ${p.diskNumber} partition ${p.partitionNumber} offset ${p.offset} size ${p.size}`,
      accessPaths: p.accessPaths,
    };
  }

  /** FileSystemType Unknown (0) is both "empty" and "a file system Windows cannot read": Windows cannot tell them apart. */
  async getVolumeContent(volumeId: string): Promise<VolumeContent> {
    return contentOf((await this.#read(volumeId)).volume);
  }

  /**
   * The facts of a write (the call's read: the volume, its partition, its disk's state), handed to the
   * service's `check`; returns them as the worker expects them, for the write's own call to compare
   * with what it reads right before the CIM method. Every fact the check is given from the read is
   * among them (expected-facts.ts).
   */
  async #verifyWrite(volumeId: string, check: WriteCheck): Promise<ExpectedVolumeFacts> {
    const { partition: p, volume: v, diskOffline, facts: expected } = await this.#read(volumeId);
    const facts: VolumeFacts = { location: this.#location(volumeId, p, diskOffline), content: contentOf(v) };
    await check(facts);
    return expected;
  }

  async getVolumeUsage(volumeId: string): Promise<VolumeUsage> {
    const v = await this.cim.getVolume(volumeId);
    return { totalBytes: v.size, freeBytes: v.sizeRemaining };
  }

  /** The service's check on fresh facts, then MSFT_Volume.Format in a worker call that refuses if those facts changed. */
  async formatVolume(volumeId: string, check: WriteCheck): Promise<void> {
    const expected = await this.#verifyWrite(volumeId, check);
    beforeWrite(`formatting volume ${volumeId}`);
    await this.#write(() => this.cim.formatVolume(volumeId, expected));
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
    await this.#write(() => this.cim.resizePartition(volumeId, sizeBytes, expected));
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

  /** The service's check on the volume read right before (a read of its own: SetVolumeMountPointW checks nothing itself), then SetVolumeMountPointW(path\, volume\). */
  async mountVolume(volumeId: string, p: string, _fileSystem: string | null, check: WriteCheck): Promise<void> {
    const r = await this.cim.getVolumeFacts(volumeId);
    await check({ location: this.#location(volumeId, r.partition, r.diskOffline) });
    beforeWrite(`mounting volume ${volumeId} at ${p}`);
    await this.#write(() => this.cim.setVolumeMountPoint(withSlash(p), withSlash(volumeId)));
  }

  /** DeleteVolumeMountPointW(path\). */
  unmountVolume(p: string): Promise<void> {
    return this.#write(() => this.cim.deleteVolumeMountPoint(withSlash(p)));
  }
}

function contentOf(v: CimVolume): VolumeContent {
  if (v.fileSystemType === FileSystemType.Unknown) return { fileSystem: null, empty: true, description: "no file system Windows knows" };
  const fileSystem = v.fileSystemType === FileSystemType.NTFS ? "NTFS" : v.fileSystem || `file system type ${v.fileSystemType}`;
  return { fileSystem, empty: false, description: fileSystem };
}

const mounted = (mountPoint: string, volumeId: string): MountedVolume => ({ mountPoint, volumeId, description: `volume ${volumeId}` });
