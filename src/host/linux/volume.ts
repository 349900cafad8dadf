/**
 * The volume group's host on Linux block devices ({@link VolumeHostApi}). Volumes are partitions or
 * whole-disk filesystems, named `\\?\Volume{<PARTUUID>}\` (volume-ids.ts); what they hold comes from
 * the mount table or blkid; changes are tool steps through {@link VolumeTools}. Decisions are
 * volume-service.ts's (policy/block-policy.ts): the host reports facts, and before each write hands
 * the facts of a fresh reading to the service's check; it refuses nothing itself (the kernel's
 * exclusive claim and the tools keep their own refusals). Flushes are volume-flush.ts's, partition
 * extents and xfs growth partition-growth.ts's, path → mount look-ups mounted-volume.ts's;
 * docs/linux-concept-map.md says what each concept means here.
 */
import type { FilesystemGrowth, MountedVolume, VolumeContent, VolumeFacts, VolumeHostApi, VolumeLocation, VolumeUsage, WriteCheck } from "../../groups/volume/host-api.ts";
import { Code, CsiProxyError, failedPrecondition, unavailable } from "../../errors.ts";
import type { DevNumber, ManagedFsType, ProbeResult } from "./block/block-types.ts";
import type { BlockReads } from "./block/block-reads.ts";
import type { SignatureProbe } from "./block/signature-probe.ts";
import type { DeviceClaims } from "./block/device-claims.ts";
import type { PartitionResizing } from "./block/partitioning.ts";
import type { OfflineMarks } from "./block/device-state.ts";
import type { FilesystemTools } from "./block/filesystem-tools.ts";
import type { MountTools } from "./mounts/mount-tools.ts";
import type { WriteBack } from "./block/write-back.ts";
import type { Privileges } from "./kernel/privileges.ts";
import { SnapshotSessions } from "./block/snapshot-session.ts";
import type { UndoLog } from "../../util/undo-retry.ts";
import { VolumeFlusher } from "./block/volume-flush.ts";
import { growUnmounted, supportedPartitionSize } from "./block/partition-growth.ts";
import { findMountedVolume } from "./block/mounted-volume.ts";
import { callSignal } from "../../util/call-scope.ts";
import { NOTHING_CHANGED, stopIfAborted } from "../../util/stop-if-aborted.ts";
import { describeProbe, growableFamily, isFilesystem } from "./block/probe-facts.ts";
import { describeSignatures } from "../../policy/block-policy.ts";
import { devOfDiskNumber, diskNumberOf } from "./block/disk-numbers.ts";
import { tableMismatch } from "./block/device-use.ts";
import { volumeLocation } from "./block/volume-location.ts";
import { findVolume, findVolumeFocused, takeSnapshot, type BlockSnapshot } from "./block/block-snapshot.ts";
import { isVolumePartition } from "./block/partition-types.ts";
import { mountAt, mountHoldingPath, mountsOf } from "./block/snapshot-mounts.ts";
import { rootRequirement } from "./kernel/root-requirement.ts";
import { volumeOfPartition, volumeOfWholeDisk, type VolumeRef } from "./block/volume-ids.ts";

export interface LinuxVolumeHostOptions {
  /** What FormatVolume creates (flag -default-fs-type). */
  defaultFileSystem: ManagedFsType;
  /** Where background cleanups (a temporary mount that could not be unmounted) log; default stderr. */
  log?: UndoLog;
}

/**
 * Between two steps of a write: stops (the call's DeadlineExceeded/Cancelled, saying where and
 * what was changed) when the call was aborted (util/call-scope.ts), so no later step starts.
 */
const beforeStep = (before: string, done = NOTHING_CHANGED) => stopIfAborted(callSignal(), { before, done });

/** Bound of the volume-id hints: cleared whole when reached (then rebuilt by the next lookups). */
const WHERE_FOUND_MAX = 4096;

/** The block tools the volume host uses (linux-block-tools.ts has them all). */
export type VolumeTools = BlockReads & SignatureProbe & DeviceClaims & Pick<OfflineMarks, "readOfflineMarks"> & PartitionResizing & FilesystemTools & MountTools & WriteBack & Privileges;

export class LinuxVolumeHost implements VolumeHostApi {
  readonly #tools: VolumeTools;
  readonly defaultFileSystem: ManagedFsType;
  /** mount(8) needs a filesystem type. */
  readonly mountRequiresFilesystem = true;

  readonly #sessions: SnapshotSessions;
  readonly #log: UndoLog | undefined;
  /** Volume id → the disk it was found on and the disk set then ({@link #volumeByHint}); at most {@link WHERE_FOUND_MAX} entries. */
  readonly #whereFound = new Map<string, { disk: DevNumber; disks: string }>();
  /** Flushes, and the mounts whose write-back failure was answered DataLoss. */
  readonly #flusher: VolumeFlusher;

  constructor(tools: VolumeTools, options: LinuxVolumeHostOptions) {
    this.#tools = tools;
    this.#sessions = new SnapshotSessions((dev, options) => takeSnapshot(tools, dev, options));
    this.defaultFileSystem = options.defaultFileSystem;
    this.#log = options.log;
    this.#flusher = new VolumeFlusher(tools, options.log);
  }

  /** Runs one operation of the service (under its disk's lock): its reads share one snapshot, its writes verify on their own (snapshot-session.ts). */
  session<T>(fn: () => Promise<T>): Promise<T> {
    return this.#sessions.run(fn);
  }

  missingPrivilege(): string | null {
    return rootRequirement(this.#tools.effectiveUid());
  }

  /** The volume in the session's snapshot (snapshot-session.ts): for answers and decisions, never for a write's refusals. */
  async #volume(volumeId: string): Promise<{ snap: BlockSnapshot; vol: VolumeRef }> {
    return findVolumeFocused(volumeId, (pickDisk) => (pickDisk ? this.#sessions.read(undefined, { key: `volume ${volumeId}`, pickDisk }) : this.#sessions.read()));
  }

  /** What the volume holds: the mounted filesystem's type when mounted, else a probe. */
  async #probe(snap: BlockSnapshot, vol: VolumeRef): Promise<ProbeResult> {
    const mounted = mountsOf(snap, vol.dev)[0];
    if (mounted) return { kind: "found", type: mounted.fsType, usage: "filesystem", ptType: null };
    return this.#tools.probe(vol.devPath);
  }

  async listVolumes(diskNumber: number, partitionNumber: number): Promise<string[]> {
    const snap = await this.#sessions.read(devOfDiskNumber(diskNumber));
    const disk = snap.disks.find((d) => diskNumberOf(d) === diskNumber);
    if (!disk) return []; // upstream (WMI era): unknown disk → empty list
    if (disk.tableError !== undefined) throw unavailable(`cannot list the volumes of disk ${diskNumber}: ${disk.tableError}`); // never other ids
    const parts = disk.partitions.filter((p) => isVolumePartition(p) && (partitionNumber === 0 || p.number === partitionNumber));
    if (parts.length > 0 || disk.partitions.length > 0) return parts.sort((a, b) => a.number - b.number).map((p) => volumeOfPartition(disk, p).id);
    // No partitions: a whole-disk filesystem is the disk's one volume (partition number 0 only).
    if (partitionNumber !== 0) return [];
    const whole = volumeOfWholeDisk(disk);
    return isFilesystem(await this.#probe(snap, whole)) ? [whole.id] : [];
  }

  async locateVolume(volumeId: string): Promise<VolumeLocation> {
    const { snap, vol } = await this.#volume(volumeId);
    return volumeLocation(snap, vol);
  }

  /**
   * Re-reads the volume at the moment of a write and hands the facts of that reading to the service's
   * `check` (its decision: same volume, same refusals), which rejects to stop the write. `format`
   * adds what only a format is decided on: every signature (wipefs) and the mounts in any mount
   * namespace the host shows (/proc/<pid>/mountinfo, not only this daemon's). With `openers`, the
   * reading also lists the processes holding the devices' nodes. The host decides nothing here.
   */
  async #verifyWrite(volumeId: string, check: WriteCheck, options: { openers?: boolean; format?: boolean } = {}): Promise<{ snap: BlockSnapshot; vol: VolumeRef; facts: VolumeFacts }> {
    // The opener scan (CPU on this thread) runs while wipefs' probe and the namespace reads wait on the
    // thread pool: the same scan of the same devices, on the same fresh reading, only not one after the other.
    const { snap, vol } = await this.#freshVolume(volumeId);
    const [openers, extra] = await Promise.all([
      options.openers ? this.#tools.deviceOpeners(snap.disks.flatMap((d) => [d, ...d.partitions])) : undefined,
      options.format ? Promise.all([this.#tools.mountsInAnyNamespace(vol.dev), this.#tools.listSignatures(vol.devPath)]) : undefined,
    ]);
    if (openers) snap.openers = openers;
    const facts: VolumeFacts = { location: volumeLocation(snap, vol) };
    if (extra) {
      const [elsewhere, signatures] = extra;
      facts.namespaceMounts = elsewhere.map(({ mountPoint, pid }) => ({ mountPoint, pid }));
      facts.signatures = signatures;
    }
    await check(facts);
    return { snap, vol, facts };
  }

  /**
   * The volume in a write's fresh reading, at a cost that does not grow with the number of disks: the
   * disk the volume is on is read again in full (sysfs, its partition table off the device), the
   * other disks' facts may be kept ones (block-reads.ts `tables: "kept"`; they only serve the
   * ambiguous-id check); every other fact is read fresh. Anything but the volume found on that one
   * fully read disk is decided again on a fresh reading of every disk (block-snapshot.ts).
   */
  #freshVolume(volumeId: string): Promise<{ snap: BlockSnapshot; vol: VolumeRef }> {
    return findVolumeFocused(volumeId, (pickDisk) => this.#sessions.fresh(undefined, pickDisk ? { pickDisk } : {}));
  }

  /** Takes and releases the kernel's exclusive claim: nothing (a mount, dm, md, another program) holds the device right now. Changes nothing; not started once the call is aborted. */
  async #checkUnclaimed(vol: VolumeRef): Promise<void> {
    beforeStep(`the exclusive-claim check of ${vol.devPath}`);
    await (await this.#tools.claimExclusive(vol.devPath, vol.dev)).release();
  }

  /** blkid's verdict, and — unmounted — every signature wipefs sees: empty only when there is none at all. */
  async getVolumeContent(volumeId: string): Promise<VolumeContent> {
    const { snap, vol } = await this.#volume(volumeId);
    const mounted = mountsOf(snap, vol.dev).length > 0;
    const [probe, sigs] = await Promise.all([this.#probe(snap, vol), mounted ? [] : this.#tools.listSignatures(vol.devPath)]);
    const fileSystem = isFilesystem(probe) ? probe.type : null;
    if (mounted) return { fileSystem, empty: false, description: describeProbe(probe) };
    if (probe.kind === "empty" && sigs.length > 0) return { fileSystem: null, empty: false, description: `signatures ${describeSignatures(sigs)}` };
    return { fileSystem, empty: probe.kind === "empty", description: describeProbe(probe) };
  }

  /** blkid's verdict alone (no wipefs): the filesystem, as {@link getVolumeContent} reports it, none when its mkfs never finished. */
  async getVolumeFilesystem(volumeId: string): Promise<string | null> {
    const { snap, vol } = await this.#volume(volumeId);
    const probe = await this.#probe(snap, vol);
    return isFilesystem(probe) && !probe.unfinished ? probe.type : null;
  }

  /**
   * For answers only (never a write's checks): the volume read from the one disk it was last found on,
   * while the host's set of disks and media is the one it was found in (every disk was read then and
   * the id was on that one disk only; a new disk — a clone among them — makes the lookup read every
   * disk again); else, or when the id is not on that disk any more, {@link #volume}. The one-disk
   * read still reads that disk's partition table: the id is verified there.
   */
  async #volumeByHint(volumeId: string): Promise<{ snap: BlockSnapshot; vol: VolumeRef }> {
    const disks = this.#tools.diskSetKey?.();
    const hint = disks === undefined ? undefined : this.#whereFound.get(volumeId);
    if (hint && hint.disks === disks) {
      const snap = await this.#sessions.read(hint.disk);
      try {
        return { snap, vol: findVolume(snap, volumeId) };
      } catch {
        // gone from that disk: look everywhere
      }
    }
    const found = await this.#volume(volumeId);
    if (disks !== undefined) {
      if (this.#whereFound.size >= WHERE_FOUND_MAX) this.#whereFound.clear();
      this.#whereFound.set(volumeId, { disk: { major: found.vol.disk.major, minor: found.vol.disk.minor }, disks });
    }
    return found;
  }

  /** Mounted: statfs. Unmounted ext* or xfs: the superblock. Anything else cannot be measured: FailedPrecondition. */
  async getVolumeUsage(volumeId: string): Promise<VolumeUsage> {
    const { snap, vol } = await this.#volumeByHint(volumeId);
    const mount = mountsOf(snap, vol.dev)[0];
    if (mount) return this.#tools.statfs(mount.mountPoint);
    const probe = await this.#probe(snap, vol);
    const family = isFilesystem(probe) ? growableFamily(probe.type) : null;
    if (!family) throw failedPrecondition(`cannot read the size of volume ${volumeId}: it holds ${describeProbe(probe)}${isFilesystem(probe) ? " and is not mounted" : ""}`);
    return this.#tools.readFilesystemUsage(vol.devPath, family);
  }

  /**
   * Right before mkfs (which then takes the kernel's exclusive claim itself): the service's check on
   * a fresh reading (uses, openers, every signature, mounts in every mount namespace), then the
   * kernel's exclusive claim taken and released. mkfs replaces a filesystem the check let through
   * (one signature, of the type being created) with `-f` where it needs it.
   */
  async #formatVolume(volumeId: string, check: WriteCheck): Promise<void> {
    const { vol, facts } = await this.#verifyWrite(volumeId, check, { openers: true, format: true });
    await this.#checkUnclaimed(vol);
    beforeStep(`creating the ${this.defaultFileSystem} filesystem on ${vol.devPath}`);
    await this.#tools.makeFilesystem(vol.devPath, this.defaultFileSystem, (facts.signatures?.length ?? 0) > 0);
  }

  /** WriteVolumeCache, and the flush before UnmountVolume (volume-flush.ts says what is flushed and how a write-back failure is answered). */
  async flushVolume(volumeId: string): Promise<void> {
    const { snap, vol } = await this.#volume(volumeId);
    await this.#flusher.flush(snap, vol);
  }

  /** Up to the next partition, or to the end of the disk (before the GPT backup area); whole logical blocks (partition-extent.ts). */
  async getPartitionSupportedSize(volumeId: string): Promise<{ maxBytes: bigint; alignBytes: bigint }> {
    return supportedPartitionSize((await this.#volume(volumeId)).vol);
  }

  /** ext* and xfs grow after their partition; a mounted ext* needs CAP_SYS_RESOURCE (the kernel's rule for the online-resize ioctl). */
  async getFilesystemGrowth(volumeId: string): Promise<FilesystemGrowth> {
    const { snap, vol } = await this.#volume(volumeId);
    const probe = await this.#probe(snap, vol);
    if (probe.kind === "empty") return { kind: "none" };
    const family = isFilesystem(probe) ? growableFamily(probe.type) : null;
    if (!family || !isFilesystem(probe)) return { kind: "unsupported", reason: `growing ${describeProbe(probe)} is not supported` };
    if (family === "ext4" && mountsOf(snap, vol.dev).length > 0 && !(await this.#tools.effectiveCapabilities()).has("CAP_SYS_RESOURCE")) {
      return {
        kind: "needs-privilege",
        reason: `growing a mounted ${probe.type} filesystem needs CAP_SYS_RESOURCE, which csi-proxy lacks; unmount the volume and retry (offline growth needs no capability)`,
      };
    }
    return { kind: "separate" };
  }

  /**
   * Moves the GPT backup header to the end first when the disk grew, then sets the size and tells the
   * kernel; verified unused right before. Returns the volume's id afterwards: the kernel re-creates
   * the partition (a new minor), so a `dev-` id changes while a PARTUUID id stays.
   */
  async #resizePartition(volumeId: string, sizeBytes: bigint, check: WriteCheck): Promise<string> {
    const { snap, vol } = await this.#verifyWrite(volumeId, check, { openers: true });
    const p = vol.partition;
    if (!p) throw failedPrecondition(`${vol.devPath} is a whole-disk filesystem, not a partition`);
    if (mountsOf(snap, vol.dev).length === 0) await this.#checkUnclaimed(vol);
    const table = vol.disk.partitionTable;
    let done = NOTHING_CHANGED;
    if (table?.type === "gpt" && table.backupAtEnd === false) {
      beforeStep(`moving the GPT backup header of ${vol.disk.devPath} to the end of the disk`);
      await this.#tools.relocateGptBackup(vol.disk.devPath);
      done = `the GPT backup header of ${vol.disk.devPath} was moved to the end of the disk; partition ${p.number} was not resized`;
    }
    beforeStep(`resizing partition ${p.number} of ${vol.disk.devPath}`, done);
    await this.#tools.resizePartition(vol.disk.devPath, p.number, sizeBytes / 512n);
    if (p.uuid) return volumeOfPartition(vol.disk, p).id;
    const disk = (await this.#sessions.fresh(vol.disk)).disks[0];
    const now = disk?.partitions.find((q) => q.number === p.number);
    return now ? volumeOfPartition(disk, now).id : volumeId;
  }

  async #syncInterruptedResize(volumeId: string): Promise<boolean> {
    const { vol } = await this.#volume(volumeId);
    const p = vol.partition;
    const e = p && vol.disk.partitionTable?.entries.find((x) => x.number === p.number);
    if (!p || !e || e.startSectors !== p.startSectors || e.sizeSectors <= p.sizeSectors) return false;
    // Only this partition may be out of step, and only by having grown in the table.
    if (vol.disk.partitions.some((q) => q.number !== p.number && tableMismatch(q, vol.disk) !== null)) return false;
    beforeStep(`finishing the interrupted resize of partition ${p.number} of ${vol.disk.devPath}`);
    await this.#tools.resizePartition(vol.disk.devPath, p.number, e.sizeSectors);
    return true;
  }

  async filesystemShortfall(volumeId: string): Promise<bigint> {
    const { snap, vol } = await this.#volume(volumeId);
    if (!vol.partition) return 0n;
    const probe = await this.#probe(snap, vol);
    const family = isFilesystem(probe) ? growableFamily(probe.type) : null;
    if (!family) return 0n;
    const { totalBytes } = await this.#tools.readFilesystemUsage(vol.devPath, family);
    const partition = vol.partition.sizeSectors * 512n;
    return partition > totalBytes ? partition - totalBytes : 0n;
  }

  /** Online growth on its mount, else partition-growth.ts's growUnmounted. Verified unused right before. */
  async #growFilesystem(volumeId: string, check: WriteCheck): Promise<void> {
    const { snap, vol } = await this.#verifyWrite(volumeId, check);
    const probe = await this.#probe(snap, vol);
    const family = isFilesystem(probe) ? growableFamily(probe.type) : null;
    if (!family) throw failedPrecondition(`growing ${describeProbe(probe)} is not supported`);
    const mountPoint = mountsOf(snap, vol.dev)[0]?.mountPoint ?? null;
    if (mountPoint) {
      beforeStep(`growing the filesystem on ${vol.devPath} (mounted at ${mountPoint})`);
      return this.#tools.growFilesystem(vol.devPath, family, mountPoint);
    }
    await this.#checkUnclaimed(vol);
    await growUnmounted(this.#tools, vol.devPath, family, this.#log);
  }

  /** What is mounted exactly at `path` (mounted-volume.ts). */
  async mountedAt(path: string): Promise<MountedVolume | null> {
    return findMountedVolume(this.#tools, (dev) => this.#sessions.read(dev), (s) => mountAt(s, path));
  }

  /** The longest mount point containing `path` (the service passes a path with its links resolved). */
  async volumeHolding(path: string): Promise<MountedVolume | null> {
    return findMountedVolume(this.#tools, (dev) => this.#sessions.read(dev), (s) => mountHoldingPath(s, path));
  }

  inspectDirectory(path: string): Promise<{ isDirectory: boolean; empty: boolean } | null> {
    return this.#tools.inspectDirectory(path);
  }

  /**
   * Verified unused right before; an unmounted volume also unclaimed. A failure because the kernel
   * lacks the filesystem is FailedPrecondition naming the module to load.
   */
  async #mountVolume(volumeId: string, path: string, fileSystem: string | null, check: WriteCheck): Promise<void> {
    const { snap, vol } = await this.#verifyWrite(volumeId, check);
    let type = fileSystem;
    if (!type) {
      const probe = await this.#probe(snap, vol);
      if (!isFilesystem(probe)) throw failedPrecondition(`${vol.devPath} holds ${describeProbe(probe)}, not a filesystem`);
      type = probe.type;
    }
    if (mountsOf(snap, vol.dev).length === 0) await this.#checkUnclaimed(vol);
    beforeStep(`mounting ${vol.devPath} at ${path}`);
    try {
      await this.#tools.mount(vol.devPath, path, type);
      this.#flusher.mounted(vol.dev);
    } catch (e) {
      if ((await this.#tools.kernelFilesystems()).has(type)) throw e;
      throw new CsiProxyError(
        Code.FailedPrecondition,
        `cannot mount ${vol.devPath} (${type}): the running kernel does not support ${type}; load its module (modprobe ${type}) or install the kernel modules that provide it`,
        { cause: e },
      );
    }
  }

  /* ---------------------------------------------------------------- writes: each ends the session's sharing (snapshot-session.ts) */

  formatVolume(volumeId: string, check: WriteCheck): Promise<void> {
    return this.#sessions.write(() => this.#formatVolume(volumeId, check));
  }

  resizePartition(volumeId: string, sizeBytes: bigint, check: WriteCheck): Promise<string> {
    return this.#sessions.write(() => this.#resizePartition(volumeId, sizeBytes, check));
  }

  syncInterruptedResize(volumeId: string): Promise<boolean> {
    return this.#sessions.write(() => this.#syncInterruptedResize(volumeId));
  }

  growFilesystem(volumeId: string, check: WriteCheck): Promise<void> {
    return this.#sessions.write(() => this.#growFilesystem(volumeId, check));
  }

  mountVolume(volumeId: string, path: string, fileSystem: string | null, check: WriteCheck): Promise<void> {
    return this.#sessions.write(() => this.#mountVolume(volumeId, path, fileSystem, check));
  }

  /** Unmounts; a write-back failure reported for that mount is forgotten (mount ids are reused). */
  unmountVolume(path: string): Promise<void> {
    return this.#sessions.write(async () => {
      const m = (await this.#tools.readMounts()).findLast((x) => x.mountPoint === path);
      beforeStep(`unmounting ${path}`);
      await this.#tools.unmount(path);
      if (m) this.#flusher.unmounted(m);
    });
  }
}
