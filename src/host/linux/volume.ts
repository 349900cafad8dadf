/**
 * The volume group's host on Linux block devices ({@link VolumeHostApi}). Volumes are partitions or
 * whole-disk filesystems, named `\\?\Volume{<PARTUUID>}\` (block-model.ts); what they hold comes from
 * the mount table or blkid; changes are tool steps through {@link VolumeTools}. Decisions are
 * volume-service.ts's; docs/linux-concept-map.md says what each concept means here.
 */
import type { FilesystemGrowth, MountedVolume, VolumeContent, VolumeHostApi, VolumeLocation, VolumeUsage, WriteCheck } from "../../groups/volume/host-api.ts";
import { Code, CsiProxyError, failedPrecondition } from "../../errors.ts";
import type { BlockMount, DevNumber, ManagedFsType, ProbeResult } from "./block-types.ts";
import type { BlockReads } from "./block-reads.ts";
import type { SignatureProbe } from "./signature-probe.ts";
import type { DeviceClaims } from "./device-claims.ts";
import type { PartitionResizing } from "./partitioning.ts";
import type { OfflineMarks } from "./device-state.ts";
import type { FilesystemTools } from "./filesystem-tools.ts";
import type { MountTools } from "./mount-tools.ts";
import type { WriteBack } from "./write-back.ts";
import type { Privileges } from "./privileges.ts";
import { SnapshotSessions } from "./snapshot-session.ts";
import { describeSchedule, retryUndo, type UndoLog } from "../../util/undo-retry.ts";
import {
  describeSignatures,
  devOfDiskNumber,
  describeProbe,
  deviceUse,
  diskNumberOf,
  findVolume,
  growableFamily,
  isDiskOnline,
  isFilesystem,
  isVolumePartition,
  mountAt,
  mountHoldingPath,
  mountsOf,
  rootRequirement,
  takeSnapshot,
  volumeOfDevice,
  volumeOfPartition,
  volumeOfWholeDisk,
  type BlockSnapshot,
  type VolumeRef,
  tableMismatch,
} from "./block-model.ts";

export interface LinuxVolumeHostOptions {
  /** What FormatVolume creates (flag -default-fs-type). */
  defaultFileSystem: ManagedFsType;
  /** Where background cleanups (a temporary mount that could not be unmounted) log; default stderr. */
  log?: UndoLog;
}

/** What must not change between looking a volume up and writing to it: device, medium, extent. */
const identityOf = (vol: VolumeRef) =>
  `${vol.dev.major}:${vol.dev.minor} diskseq ${vol.disk.diskSeq ?? "-"} ${vol.partition ? `sectors ${vol.partition.startSectors}+${vol.partition.sizeSectors}` : `size ${vol.disk.sizeBytes}`}`;

/** Bound of the volume-id hints: cleared whole when reached (then rebuilt by the next lookups). */
const WHERE_FOUND_MAX = 4096;
/** Mount instances (device, mount id) whose write-back failure was reported at most this many at a time. */
export const MAX_REPORTED_MOUNTS = 1024;
const reportPrefix = (dev: DevNumber) => `${dev.major}:${dev.minor}@`;
const reportKey = (dev: DevNumber, mountId: number | undefined) => `${reportPrefix(dev)}${mountId ?? "-"}`;


/** The block tools the volume host uses (linux-block-tools.ts has them all). */
export type VolumeTools = BlockReads & SignatureProbe & DeviceClaims & Pick<OfflineMarks, "readOfflineMarks"> & PartitionResizing & FilesystemTools & MountTools & WriteBack & Privileges;

export class LinuxVolumeHost implements VolumeHostApi {
  readonly #tools: VolumeTools;
  readonly defaultFileSystem: ManagedFsType;
  /** mount(8) needs a filesystem type. */
  readonly mountRequiresFilesystem = true;
  /** Writes run the service's refusals on the snapshot they verify against (#verifyWrite). */
  readonly checksAtWrite = true;

  readonly #sessions: SnapshotSessions;
  readonly #log: UndoLog | undefined;
  /** Volume id → the disk it was found on and the disk set then ({@link #volumeByHint}); at most {@link WHERE_FOUND_MAX} entries. */
  readonly #whereFound = new Map<string, { disk: DevNumber; disks: string }>();
  /** Mounts whose write-back failure was answered DataLoss (flushVolume), oldest first. */
  readonly #reported = new Map<string, { at: number; here: boolean }>();

  constructor(tools: VolumeTools, options: LinuxVolumeHostOptions) {
    this.#tools = tools;
    this.#sessions = new SnapshotSessions((dev, options) => takeSnapshot(tools, dev, options));
    this.defaultFileSystem = options.defaultFileSystem;
    this.#log = options.log;
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
    const snap = await this.#sessions.read();
    return { snap, vol: findVolume(snap, volumeId) };
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
    const parts = disk.partitions.filter((p) => isVolumePartition(p) && (partitionNumber === 0 || p.number === partitionNumber));
    if (parts.length > 0 || disk.partitions.length > 0) return parts.sort((a, b) => a.number - b.number).map((p) => volumeOfPartition(disk, p).id);
    // No partitions: a whole-disk filesystem is the disk's one volume (partition number 0 only).
    if (partitionNumber !== 0) return [];
    const whole = volumeOfWholeDisk(disk);
    return isFilesystem(await this.#probe(snap, whole)) ? [whole.id] : [];
  }

  async locateVolume(volumeId: string): Promise<VolumeLocation> {
    const { snap, vol } = await this.#volume(volumeId);
    return this.#location(snap, vol);
  }

  #location(snap: BlockSnapshot, vol: VolumeRef): VolumeLocation {
    const p = vol.partition;
    return {
      id: vol.id,
      diskNumber: diskNumberOf(vol.disk),
      partitionNumber: p ? p.number : null,
      sizeBytes: p ? p.sizeSectors * 512n : vol.disk.sizeBytes,
      name: vol.devPath,
      diskOnline: isDiskOnline(snap, vol.disk),
      // The volume and its disk (holders stacked on the whole disk, e.g. multipath, block it too).
      devices: (p ? [p, vol.disk] : [vol.disk]).map((d) => ({ name: d.devPath, use: deviceUse(snap, d, vol.disk, p ?? undefined) })),
      identity: identityOf(vol),
    };
  }

  /**
   * Re-reads the volume at the moment of a write and refuses (FailedPrecondition, saying what) when it
   * is not the volume looked up (`expect`: {@link VolumeLocation.identity}), when it or its disk is used
   * (holders, swap, stacked loop devices, kernel partitions out of step with the table, the root
   * filesystem), or — with `unmounted` — when it is mounted. The service's `check` runs first, on
   * the location read from the same snapshot — with `openers`, a snapshot that also lists the
   * processes holding the devices' nodes (the service's refusals decide about them).
   */
  async #verifyWrite(volumeId: string, what: string, expect: string | undefined, unmounted: boolean, check?: WriteCheck, openers = false): Promise<{ snap: BlockSnapshot; vol: VolumeRef }> {
    const snap = await this.#sessions.fresh(undefined, { openers });
    const vol = findVolume(snap, volumeId);
    if (check) await check(this.#location(snap, vol));
    const refuse = (why: string) => failedPrecondition(`refusing to ${what} ${vol.devPath}: ${why}`);
    if (expect !== undefined && expect !== identityOf(vol)) throw refuse(`the volume changed since it was looked up (${expect} → ${identityOf(vol)})`);
    const reasons: string[] = [];
    for (const d of vol.partition ? [vol.partition, vol.disk] : [vol.disk]) {
      const use = deviceUse(snap, d, vol.disk, vol.partition ?? undefined);
      if (use.system) reasons.push(`${d.devPath} holds ${use.system}`);
      for (const b of use.busy) reasons.push(`${d.devPath} is ${b}`);
    }
    if (unmounted) for (const m of mountsOf(snap, vol.dev)) reasons.push(`${vol.devPath} is mounted at ${m.mountPoint}`);
    if (reasons.length) throw refuse([...new Set(reasons)].join("; "));
    return { snap, vol };
  }

  /** Takes and releases the kernel's exclusive claim: nothing (a mount, dm, md, another program) holds the device right now. */
  async #checkUnclaimed(vol: VolumeRef): Promise<void> {
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

  /** blkid's verdict alone (no wipefs): the filesystem, as {@link getVolumeContent} reports it. */
  async getVolumeFilesystem(volumeId: string): Promise<string | null> {
    const { snap, vol } = await this.#volume(volumeId);
    const probe = await this.#probe(snap, vol);
    return isFilesystem(probe) ? probe.type : null;
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
   * Right before mkfs (which then takes the kernel's exclusive claim itself), verified: unused (holders,
   * swap, stacked devices, root), mounted in no mount namespace the host shows (/proc/<pid>/mountinfo,
   * not only this daemon's), holding no signature or only those of one filesystem of the type being
   * created (replaced: a quick format), and unclaimed. Anything else is FailedPrecondition saying what.
   */
  async #formatVolume(volumeId: string, expect?: string, check?: WriteCheck): Promise<void> {
    const { vol } = await this.#verifyWrite(volumeId, "format", expect, true, check, true);
    const elsewhere = await this.#tools.mountsInAnyNamespace(vol.dev);
    if (elsewhere.length) {
      const where = elsewhere.map((m) => `${m.mountPoint} (mount namespace of pid ${m.pid})`).join(", ");
      throw failedPrecondition(`refusing to format ${vol.devPath}: it is mounted at ${where}`);
    }
    const sigs = await this.#tools.listSignatures(vol.devPath);
    const foreign = sigs.filter((x) => x.type.toLowerCase() !== this.defaultFileSystem);
    if (foreign.length || sigs.length > 1) throw failedPrecondition(`refusing to format ${vol.devPath} as ${this.defaultFileSystem}: it holds ${describeSignatures(sigs)}`);
    await this.#checkUnclaimed(vol);
    await this.#tools.makeFilesystem(vol.devPath, this.defaultFileSystem, sigs.length === 1);
  }

  /**
   * WriteVolumeCache, and the flush before UnmountVolume. Mounted (in this daemon's mount namespace,
   * else in another one): syncfs(2) of that filesystem through a descriptor opened for this call (a
   * descriptor held from the mount would pin the mount: docs/reliability.md "Flush" says what each
   * misses); mounted nowhere: fsync(2) of the device node.
   *
   * A write-back failure is answered DataLoss once per mount, as the kernel's errseq reports each
   * error once per descriptor: a later flush of the same mount that fails again resolves, the failure
   * having been reported (ext4 after a journal abort and xfs after a shutdown fail every flush until
   * unmounted), so that the caller's retry can go on and unmount. A flush that succeeds, and the
   * mount's end (unmounted here, or gone from the table), forget the report. At most
   * {@link MAX_REPORTED_MOUNTS} reports are kept (the oldest forgotten first); a restart forgets them all.
   */
  async flushVolume(volumeId: string): Promise<void> {
    const { snap, vol } = await this.#volume(volumeId);
    for (const [key, r] of this.#reported) if (r.here && !snap.mounts.some((m) => reportKey(m, m.mountId) === key)) this.#reported.delete(key);
    const here = mountsOf(snap, vol.dev)[0];
    const there = here ? undefined : (await this.#tools.mountsInAnyNamespace(vol.dev))[0];
    if (!here && !there) return this.#tools.flushDevice(vol.devPath, vol.dev);
    const mountPoint = here ? here.mountPoint : `/proc/${there!.pid}/root${there!.mountPoint}`;
    const shown = here ? here.mountPoint : `${there!.mountPoint} (mount namespace of pid ${there!.pid})`;
    const key = reportKey(vol.dev, here ? here.mountId : there!.mountId);
    try {
      await this.#tools.flushFilesystem(mountPoint, here ? here.mountId : there!.mountId);
    } catch (e) {
      if (!(e instanceof CsiProxyError && e.code === Code.DataLoss)) throw e;
      const earlier = this.#reported.get(key);
      if (earlier) {
        this.#log?.warning(`flush of ${vol.devPath} (mounted at ${shown}) failed again (${e.message}); answered DataLoss once already, at ${new Date(earlier.at).toISOString()}`);
        return;
      }
      if (this.#reported.size >= MAX_REPORTED_MOUNTS) this.#reported.delete(this.#reported.keys().next().value!);
      this.#reported.set(key, { at: Date.now(), here: here !== undefined });
      throw new CsiProxyError(
        Code.DataLoss,
        `${vol.devPath} mounted at ${shown}: ${e.message}; data written to the volume that was not yet on disk may be lost (answered once for this mount: a later flush that fails again answers OK)`,
        { cause: e },
      );
    }
    this.#reported.delete(key);
  }

  /** Up to the next partition, or to the end of the disk (before the GPT backup area); whole logical blocks. */
  async getPartitionSupportedSize(volumeId: string): Promise<{ maxBytes: bigint; alignBytes: bigint }> {
    const { vol } = await this.#volume(volumeId);
    const p = vol.partition;
    const table = vol.disk.partitionTable;
    if (!p) throw failedPrecondition(`${vol.devPath} is a whole-disk filesystem, not a partition`);
    if (!table) throw failedPrecondition(`the partition table of ${vol.disk.devPath} cannot be read`);
    const unit = BigInt(Math.max(1, vol.disk.logicalBlockSize / 512));
    const diskSectors = vol.disk.sizeBytes / 512n;
    const first = (xs: bigint[]) => xs.filter((x) => x > p.startSectors).sort((a, b) => (a < b ? -1 : 1))[0];
    const entry = table.entries.find((e) => e.number === p.number);
    let end: bigint;
    if (entry?.ebrSectors !== undefined) {
      // MBR logical partition: up to the next extended boot record, else to the end of its extended container.
      const container = table.entries.find((e) => e.number <= 4 && e.startSectors <= p.startSectors && p.startSectors < e.startSectors + e.sizeSectors);
      const containerEnd = container ? container.startSectors + container.sizeSectors : diskSectors;
      end = first(table.entries.filter((e) => e.ebrSectors !== undefined).map((e) => e.ebrSectors!)) ?? containerEnd;
      if (end > containerEnd) end = containerEnd;
    } else {
      const next = first(table.entries.filter((e) => e.number <= 4 || table.type === "gpt").map((e) => e.startSectors));
      end = next ?? diskSectors - (table.type === "gpt" ? (table.trailerSectors ?? 33n * unit) : 0n);
    }
    return { maxBytes: ((end - p.startSectors) / unit) * unit * 512n, alignBytes: 512n * unit };
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
  async #resizePartition(volumeId: string, sizeBytes: bigint, expect?: string, check?: WriteCheck): Promise<string> {
    const { snap, vol } = await this.#verifyWrite(volumeId, "resize", expect, false, check, true);
    const p = vol.partition;
    if (!p) throw failedPrecondition(`${vol.devPath} is a whole-disk filesystem, not a partition`);
    if (mountsOf(snap, vol.dev).length === 0) await this.#checkUnclaimed(vol);
    const table = vol.disk.partitionTable;
    if (table?.type === "gpt" && table.backupAtEnd === false) await this.#tools.relocateGptBackup(vol.disk.devPath);
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

  /** resize2fs online when mounted, offline after e2fsck -f -p; xfs_growfs on its mount, or on a private temporary one. Verified unused right before. */
  async #growFilesystem(volumeId: string, expect?: string): Promise<void> {
    const { snap, vol } = await this.#verifyWrite(volumeId, "grow the filesystem on", expect, false);
    const probe = await this.#probe(snap, vol);
    const family = isFilesystem(probe) ? growableFamily(probe.type) : null;
    if (!family) throw failedPrecondition(`growing ${describeProbe(probe)} is not supported`);
    const mountPoint = mountsOf(snap, vol.dev)[0]?.mountPoint ?? null;
    if (mountPoint) return this.#tools.growFilesystem(vol.devPath, family, mountPoint);
    await this.#checkUnclaimed(vol);
    if (family === "ext4") {
      await this.#tools.checkFilesystem(vol.devPath, family);
      return this.#tools.growFilesystem(vol.devPath, family, null);
    }
    const dir = await this.#tools.makeTempDir();
    let left = false;
    try {
      await this.#tools.mount(vol.devPath, dir, "xfs");
      try {
        await this.#tools.growFilesystem(vol.devPath, family, dir);
      } finally {
        await this.#tools.unmount(dir).catch((err: unknown) => {
          // The call's own temporary mount stays: the answer says where, a bounded retry removes it.
          left = true;
          const why = err instanceof Error ? err.message : String(err);
          const undo = async () => {
            await this.#tools.unmount(dir);
            await this.#tools.removeTempDir(dir).catch(() => {});
            return { done: true as const };
          };
          void retryUndo(`temporary mount of ${vol.devPath} at ${dir}`, undo, this.#log);
          throw new CsiProxyError(
            err instanceof CsiProxyError ? err.code : Code.FailedPrecondition,
            `${why}; ${vol.devPath} stays mounted at ${dir} (the temporary mount for growing it); csi-proxy retries unmounting it (${describeSchedule()})`,
            { cause: err },
          );
        });
      }
    } finally {
      if (!left) await this.#tools.removeTempDir(dir).catch(() => {}); // an empty private directory; a leftover is harmless
    }
  }

  #mounted(snap: BlockSnapshot, m: BlockMount): MountedVolume {
    const vol = volumeOfDevice(snap, m);
    return { mountPoint: m.mountPoint, volumeId: vol?.id ?? null, description: vol ? `volume ${vol.id}` : `a ${m.fsType} filesystem (${m.source})` };
  }

  async mountedAt(path: string): Promise<MountedVolume | null> {
    return this.#mountedVolume((s) => mountAt(s, path));
  }

  /** The longest mount point containing `path` (the service passes a path with its links resolved). */
  async volumeHolding(path: string): Promise<MountedVolume | null> {
    return this.#mountedVolume((s) => mountHoldingPath(s, path));
  }

  /**
   * The mount `find` picks, described from a snapshot of only the disk it is on when the tools can
   * tell which (the mount table is cached per change, so this costs no scan of every disk); else, or
   * when the mount changed between the two readings, from a snapshot of every disk.
   */
  async #mountedVolume(find: (s: Pick<BlockSnapshot, "mounts">) => BlockMount | undefined): Promise<MountedVolume | null> {
    if (this.#tools.diskOfDevice) {
      const first = find({ mounts: await this.#tools.readMounts() });
      if (!first) return null;
      const disk = this.#tools.diskOfDevice(first);
      // Not on a block device sysfs knows (tmpfs, NFS, ...): no disk can hold it.
      if (!disk) return this.#mounted({ disks: [], mounts: [], swaps: [], marks: [], loops: [] }, first);
      const snap = await this.#sessions.read(disk);
      const m = find(snap);
      if (m && m.major === first.major && m.minor === first.minor) return this.#mounted(snap, m);
    }
    const snap = await this.#sessions.read();
    const m = find(snap);
    return m ? this.#mounted(snap, m) : null;
  }

  inspectDirectory(path: string): Promise<{ isDirectory: boolean; empty: boolean } | null> {
    return this.#tools.inspectDirectory(path);
  }

  /**
   * Verified unused right before; an unmounted volume also unclaimed. A failure because the kernel
   * lacks the filesystem is FailedPrecondition naming the module to load.
   */
  async #mountVolume(volumeId: string, path: string, fileSystem: string | null, expect?: string, check?: WriteCheck): Promise<void> {
    const { snap, vol } = await this.#verifyWrite(volumeId, "mount", expect, false, check);
    let type = fileSystem;
    if (!type) {
      const probe = await this.#probe(snap, vol);
      if (!isFilesystem(probe)) throw failedPrecondition(`${vol.devPath} holds ${describeProbe(probe)}, not a filesystem`);
      type = probe.type;
    }
    if (mountsOf(snap, vol.dev).length === 0) await this.#checkUnclaimed(vol);
    try {
      await this.#tools.mount(vol.devPath, path, type);
      // A new mount may get the id of an earlier one of the device that ended elsewhere: its report does not carry over.
      for (const key of this.#reported.keys()) if (key.startsWith(reportPrefix(vol.dev))) this.#reported.delete(key);
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

  formatVolume(volumeId: string, expect?: string, check?: WriteCheck): Promise<void> {
    return this.#sessions.write(() => this.#formatVolume(volumeId, expect, check));
  }

  resizePartition(volumeId: string, sizeBytes: bigint, expect?: string, check?: WriteCheck): Promise<string> {
    return this.#sessions.write(() => this.#resizePartition(volumeId, sizeBytes, expect, check));
  }

  syncInterruptedResize(volumeId: string): Promise<boolean> {
    return this.#sessions.write(() => this.#syncInterruptedResize(volumeId));
  }

  growFilesystem(volumeId: string, expect?: string): Promise<void> {
    return this.#sessions.write(() => this.#growFilesystem(volumeId, expect));
  }

  mountVolume(volumeId: string, path: string, fileSystem: string | null, expect?: string, check?: WriteCheck): Promise<void> {
    return this.#sessions.write(() => this.#mountVolume(volumeId, path, fileSystem, expect, check));
  }

  /** Unmounts; a write-back failure reported for that mount is forgotten (mount ids are reused). */
  unmountVolume(path: string): Promise<void> {
    return this.#sessions.write(async () => {
      const m = (await this.#tools.readMounts()).findLast((x) => x.mountPoint === path);
      await this.#tools.unmount(path);
      if (m) this.#reported.delete(reportKey(m, m.mountId));
    });
  }
}
