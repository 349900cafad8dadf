import type { VolumeService } from "./types.ts";
import type { FilesystemUsage, ManagedFsType, VolumeHostApi } from "./host-api.ts";
import type { KeyedMutex } from "../../util/keyed-mutex.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import { Code, CsiProxyError, failedPrecondition, invalidArgument, notFound } from "../../errors.ts";
import {
  allowedMountPoint,
  checkDiskNumber,
  diskNumberOf,
  findVolume,
  hostFailure,
  isVolumePartition,
  mountAt,
  mountsOf,
  refuseInUse,
  requireOnline,
  rootGuard,
  sameDev,
  takeSnapshot,
  volumeOfDevice,
  volumeOfPartition,
  volumeOfWholeDisk,
  type BlockSnapshot,
  type VolumeRef,
} from "../disk/block-model.ts";
import { diskLockKey } from "../disk/disk-service.ts";
import type { BlockPartition, ProbeResult } from "../disk/host-api.ts";

export interface VolumeServiceDeps {
  host: VolumeHostApi;
  /** Mount and unmount targets (and the paths of the target-path queries) must pass it; mounts outside it are foreign. */
  policy: { check(path: string, options?: { followFinal?: boolean }): Promise<string> };
  /** What FormatVolume creates (flag -default-fs-type). */
  defaultFsType: ManagedFsType;
  /** Shared with the disk service: operations on one disk serialise across both groups. */
  locks?: KeyedMutex;
}

const MiB = 1024n * 1024n;
/** Upstream (3871187): growth below this is skipped as a no-op. */
export const RESIZE_THRESHOLD_BYTES = 100n * MiB;

/** resize2fs grows the whole ext family; xfs_growfs grows xfs. Other filesystems cannot be grown here. */
function growableFamily(fsType: string | null): ManagedFsType | null {
  if (fsType === "ext2" || fsType === "ext3" || fsType === "ext4") return "ext4";
  if (fsType === "xfs") return "xfs";
  return null;
}

/** "xfs", "ext4 (filesystem)", "conflicting signatures (…)" for messages. */
function describeProbe(p: ProbeResult): string {
  if (p.kind === "empty") return "no signature";
  if (p.kind === "ambivalent") return `conflicting signatures (${p.detail})`;
  if (p.ptType && !p.type) return `a ${p.ptType} partition table`;
  return `${p.type ?? "an unknown signature"}${p.usage && p.usage !== "filesystem" ? ` (${p.usage})` : ""}`;
}

/**
 * The volume group on block devices. Volume ids are `\\?\Volume{<PARTUUID>}\` (block-model.ts).
 * Decisions (all unit-tested against the fake host), beyond upstream where marked:
 * - MountVolume: target inside the allowed dirs (beyond upstream), an existing empty directory
 *   (Windows' SetVolumeMountPoint rule), idempotent for the same volume and path, refuses another
 *   filesystem at the path, unformatted volumes and volumes in use outside csi-proxy;
 * - UnmountVolume: flushes first; the path must hold exactly this volume (beyond upstream);
 * - FormatVolume: never formats over any signature (beyond upstream): the default filesystem
 *   already there is success, anything else FailedPrecondition;
 * - ResizeVolume: upstream's thresholds on the partition size, then the filesystem is grown too;
 *   refusals happen before any change;
 * - every mutating call refuses offline disks and devices in use (root, swap, holders, foreign mounts).
 */
export function createVolumeService(deps: VolumeServiceDeps): VolumeService {
  const { host, policy, defaultFsType } = deps;
  const locks = deps.locks ?? createKeyedMutex();
  const guard = rootGuard(host, "volume");
  const isAllowed = allowedMountPoint(policy);

  const snapshot = () => takeSnapshot(host);

  function requireId(volumeId: string, text = "volume id empty"): void {
    if (!volumeId) throw invalidArgument(text);
  }

  /** Resolves the volume, then runs `fn` holding its disk's lock with a fresh snapshot. */
  async function withVolume<T>(volumeId: string, fn: (vol: VolumeRef, snap: BlockSnapshot) => Promise<T>): Promise<T> {
    const first = findVolume(await snapshot(), volumeId);
    return locks.run(diskLockKey(diskNumberOf(first.disk)), async () => {
      const snap = await snapshot();
      return fn(findVolume(snap, volumeId), snap);
    });
  }

  /** Devices whose use blocks a change of this volume: the volume, and its disk (holders stacked on the whole disk, e.g. multipath). */
  const guardedDevices = (vol: VolumeRef) => (vol.partition ? [vol.partition, vol.disk] : [vol.disk]);

  /** What the volume holds: the mounted filesystem's type when mounted, else a probe. */
  async function contentOf(vol: VolumeRef, snap: BlockSnapshot): Promise<ProbeResult> {
    const mounted = mountsOf(snap, vol.dev)[0];
    if (mounted) return { kind: "found", type: mounted.fsType, usage: "filesystem", ptType: null };
    return host.probe(vol.devPath).catch((e) => {
      throw hostFailure(`probe ${vol.devPath}`, e);
    });
  }

  const isFilesystem = (p: ProbeResult): p is { kind: "found"; type: string; usage: string; ptType: string | null } =>
    p.kind === "found" && p.usage === "filesystem" && p.type !== null;

  async function checkTarget(targetPath: string): Promise<string> {
    return policy.check(targetPath, { followFinal: true });
  }

  async function mountVolume(volumeId: string, targetPath: string): Promise<void> {
    if (!volumeId) throw invalidArgument("MountVolumeRequest.VolumeId is empty");
    if (!targetPath) throw invalidArgument("MountVolumeRequest.TargetPath is empty");
    const target = await checkTarget(targetPath);
    await withVolume(volumeId, async (vol, snap) => {
      const what = `mount volume ${volumeId} at ${targetPath}`;
      const current = mountAt(snap, target);
      if (current) {
        if (sameDev(current, vol.dev)) return; // idempotent (upstream since v1.3.0)
        const other = volumeOfDevice(snap, current);
        throw failedPrecondition(`cannot ${what}: ${other ? `volume ${other.id}` : `a ${current.fsType} filesystem (${current.source})`} is already mounted there`);
      }
      requireOnline(snap, vol.disk, what);
      await refuseInUse(snap, guardedDevices(vol), { what, allowMountsInside: true, isAllowed });
      const dir = await host.inspectDirectory(target);
      if (!dir) throw notFound(`cannot ${what}: ${targetPath} does not exist (create the directory first)`);
      if (!dir.isDirectory) throw failedPrecondition(`cannot ${what}: ${targetPath} is not a directory`);
      if (!dir.empty) throw failedPrecondition(`cannot ${what}: directory ${targetPath} is not empty`);
      const content = await contentOf(vol, snap);
      if (!isFilesystem(content)) throw failedPrecondition(`cannot ${what}: the volume holds ${describeProbe(content)}, not a filesystem; format it first`);
      await host.mount(vol.devPath, target, content.type).catch((e) => {
        throw hostFailure(`error mount volume (${volumeId}) to path ${targetPath}`, e);
      });
    });
  }

  async function unmountVolume(volumeId: string, targetPath: string): Promise<void> {
    if (!volumeId) throw invalidArgument("volume id empty");
    if (!targetPath) throw invalidArgument("target path empty");
    const target = await checkTarget(targetPath);
    await withVolume(volumeId, async (vol, snap) => {
      const current = mountAt(snap, target);
      if (!current) throw notFound(`cannot unmount ${targetPath}: it is not a mount point`);
      if (!sameDev(current, vol.dev)) {
        const other = volumeOfDevice(snap, current);
        throw failedPrecondition(
          `refusing to unmount ${targetPath}: it holds ${other ? `volume ${other.id}` : `a ${current.fsType} filesystem (${current.source})`}, not volume ${volumeId}`,
        );
      }
      await host.flush(vol.devPath).catch((e) => {
        throw hostFailure(`flush volume ${volumeId} before unmounting`, e);
      });
      await host.unmount(target).catch((e) => {
        throw hostFailure(`unmount ${targetPath}`, e);
      });
    });
  }

  async function formatVolume(volumeId: string): Promise<void> {
    requireId(volumeId);
    await withVolume(volumeId, async (vol, snap) => {
      const what = `format volume ${volumeId} (${vol.devPath})`;
      requireOnline(snap, vol.disk, what);
      await refuseInUse(snap, guardedDevices(vol), { what, allowMountsInside: true, isAllowed });
      const content = await contentOf(vol, snap);
      if (content.kind === "empty") {
        await host.makeFilesystem(vol.devPath, defaultFsType).catch((e) => {
          throw hostFailure(`${what} as ${defaultFsType}`, e);
        });
        return;
      }
      if (isFilesystem(content) && content.type === defaultFsType) return; // already formatted as asked: keep the data
      throw failedPrecondition(`refusing to ${what} as ${defaultFsType}: it already holds ${describeProbe(content)}; formatting would destroy that data`);
    });
  }

  async function resizeVolume(volumeId: string, sizeBytes: bigint): Promise<void> {
    requireId(volumeId);
    if (sizeBytes < 0n) throw invalidArgument(`invalid negative size ${sizeBytes} for volume (${volumeId})`);
    await withVolume(volumeId, async (vol, snap) => {
      const what = `resize volume ${volumeId} (${vol.devPath})`;
      const p = vol.partition;
      if (!p) throw failedPrecondition(`cannot ${what}: it is a whole-disk filesystem, there is no partition to grow`);
      const table = vol.disk.partitionTable;
      if (!table) throw failedPrecondition(`cannot ${what}: the partition table of ${vol.disk.devPath} cannot be read`);

      // Upstream: size is the partition size; 0 = the largest supported size.
      const unit = BigInt(Math.max(1, vol.disk.logicalBlockSize / 512));
      const diskSectors = vol.disk.sizeBytes / 512n;
      const next = table.entries.map((e) => e.startSectors).filter((s) => s > p.startSectors).sort((a, b) => (a < b ? -1 : 1))[0];
      const end = next ?? diskSectors - (table.type === "gpt" ? (table.trailerSectors ?? 33n * unit) : 0n);
      const maxSectors = ((end - p.startSectors) / unit) * unit;
      const current = p.sizeSectors * 512n;
      const target = sizeBytes === 0n ? maxSectors * 512n : (sizeBytes / (512n * unit)) * 512n * unit;
      if (target < current + RESIZE_THRESHOLD_BYTES) return; // shrink, same size or tiny growth: success without change
      if (target > maxSectors * 512n) {
        throw new CsiProxyError(Code.OutOfRange, `cannot ${what} to ${sizeBytes} bytes: at most ${maxSectors * 512n} bytes are available to partition ${p.number}`);
      }

      // Every refusal before the first change.
      requireOnline(snap, vol.disk, what);
      await refuseInUse(snap, guardedDevices(vol), { what, allowMountsInside: true, isAllowed });
      const mount = mountsOf(snap, vol.dev)[0];
      const content = await contentOf(vol, snap);
      let family: ManagedFsType | null = null;
      if (content.kind !== "empty") {
        family = isFilesystem(content) ? growableFamily(content.type) : null;
        if (!family || !isFilesystem(content)) throw failedPrecondition(`cannot ${what}: growing ${describeProbe(content)} is not supported`);
        if (family === "ext4" && mount && !(await host.effectiveCapabilities()).has("CAP_SYS_RESOURCE")) {
          throw new CsiProxyError(
            Code.PermissionDenied,
            `cannot ${what}: growing a mounted ${content.type} filesystem needs CAP_SYS_RESOURCE, which csi-proxy lacks; unmount the volume and retry (offline growth needs no capability)`,
          );
        }
      }

      if (table.type === "gpt" && table.backupAtEnd === false) {
        await host.relocateGptBackup(vol.disk.devPath).catch((e) => {
          throw hostFailure(`move the backup GPT of ${vol.disk.devPath} to the end of the disk`, e);
        });
      }
      await host.resizePartition(vol.disk.devPath, p.number, target / 512n).catch((e) => {
        throw hostFailure(`grow partition ${p.number} of ${vol.disk.devPath}`, e);
      });
      if (family) await growFilesystem(vol, family, mount?.mountPoint ?? null, what);
    });
  }

  async function growFilesystem(vol: VolumeRef, family: ManagedFsType, mountPoint: string | null, what: string): Promise<void> {
    const fail = (e: unknown) => {
      throw hostFailure(`${what}: the partition was grown but growing the filesystem failed`, e);
    };
    if (mountPoint) return host.growFilesystem(vol.devPath, family, mountPoint).catch(fail);
    if (family === "ext4") {
      await host.checkFilesystem(vol.devPath, family).catch(fail);
      return host.growFilesystem(vol.devPath, family, null).catch(fail);
    }
    // xfs grows only while mounted: mount it privately for the duration.
    const dir = await host.makeTempDir().catch(fail);
    try {
      await host.mount(vol.devPath, dir, "xfs").catch(fail);
      try {
        await host.growFilesystem(vol.devPath, family, dir).catch(fail);
      } finally {
        await host.unmount(dir);
      }
    } finally {
      await host.removeTempDir(dir).catch(() => {});
    }
  }

  async function getVolumeStats(volumeId: string): Promise<{ totalBytes: bigint; usedBytes: bigint }> {
    requireId(volumeId);
    const snap = await snapshot();
    const vol = findVolume(snap, volumeId);
    const mount = mountsOf(snap, vol.dev)[0];
    let usage: FilesystemUsage;
    if (mount) {
      usage = await host.statfs(mount.mountPoint).catch((e) => {
        throw hostFailure(`statfs ${mount.mountPoint}`, e);
      });
    } else {
      const content = await contentOf(vol, snap);
      const family = isFilesystem(content) ? growableFamily(content.type) : null;
      if (!family) throw failedPrecondition(`cannot read the size of volume ${volumeId}: it holds ${describeProbe(content)}${isFilesystem(content) ? " and is not mounted" : ""}`);
      usage = await host.readFilesystemUsage(vol.devPath, family).catch((e) => {
        throw hostFailure(`read the size of ${vol.devPath}`, e);
      });
    }
    return { totalBytes: usage.totalBytes, usedBytes: usage.totalBytes - usage.freeBytes };
  }

  /** The volume mounted at an (already checked) canonical path, or the reason there is none. */
  function volumeMountedAt(snap: BlockSnapshot, path: string, shown: string): VolumeRef {
    const m = mountAt(snap, path);
    if (!m) throw notFound(`${shown} is not a mount point`);
    const vol = volumeOfDevice(snap, m);
    if (!vol) throw notFound(`${shown} holds a ${m.fsType} mount (${m.source}), not a block-device volume`);
    return vol;
  }

  const isWithinPath = (child: string, parent: string) => parent === "/" || child === parent || child.startsWith(parent + "/");

  return {
    async listVolumesOnDisk({ diskNumber, partitionNumber }) {
      guard("ListVolumesOnDisk");
      checkDiskNumber(diskNumber);
      const snap = await snapshot();
      const disk = snap.disks.find((d) => diskNumberOf(d) === diskNumber);
      if (!disk) return { volumeIds: [] }; // upstream (WMI era): unknown disk → empty list
      const parts = disk.partitions.filter((p: BlockPartition) => isVolumePartition(p) && (partitionNumber === 0 || p.number === partitionNumber));
      if (parts.length > 0 || disk.partitions.length > 0) return { volumeIds: parts.sort((a, b) => a.number - b.number).map((p) => volumeOfPartition(disk, p).id) };
      // No partitions: a whole-disk filesystem is the disk's one volume (partition number 0 only).
      if (partitionNumber !== 0) return { volumeIds: [] };
      const whole = volumeOfWholeDisk(disk);
      const content = await contentOf(whole, snap);
      return { volumeIds: isFilesystem(content) ? [whole.id] : [] };
    },

    async mountVolume({ volumeId, targetPath }) {
      guard("MountVolume");
      await mountVolume(volumeId, targetPath);
    },

    async unmountVolume({ volumeId, targetPath }) {
      guard("UnmountVolume");
      await unmountVolume(volumeId, targetPath);
    },

    async isVolumeFormatted({ volumeId }) {
      guard("IsVolumeFormatted");
      requireId(volumeId);
      const snap = await snapshot();
      return { formatted: isFilesystem(await contentOf(findVolume(snap, volumeId), snap)) };
    },

    async formatVolume({ volumeId }) {
      guard("FormatVolume");
      await formatVolume(volumeId);
    },

    async resizeVolume({ volumeId, sizeBytes }) {
      guard("ResizeVolume");
      await resizeVolume(volumeId, sizeBytes);
    },

    async getVolumeStats({ volumeId }) {
      guard("GetVolumeStats");
      return getVolumeStats(volumeId);
    },

    async getDiskNumberFromVolumeId({ volumeId }) {
      guard("GetDiskNumberFromVolumeID");
      requireId(volumeId);
      return { diskNumber: diskNumberOf(findVolume(await snapshot(), volumeId).disk) };
    },

    async getVolumeIdFromTargetPath({ targetPath }) {
      guard("GetVolumeIDFromTargetPath");
      if (!targetPath) throw invalidArgument("target path is empty");
      const path = await checkTarget(targetPath);
      return { volumeId: volumeMountedAt(await snapshot(), path, targetPath).id };
    },

    async getClosestVolumeIdFromTargetPath({ targetPath }) {
      guard("GetClosestVolumeIDFromTargetPath");
      if (!targetPath) throw invalidArgument("target path is empty");
      const path = await checkTarget(targetPath);
      const snap = await snapshot();
      const holder = snap.mounts
        .filter((m) => isWithinPath(path, m.mountPoint))
        .reduce<string | null>((best, m) => (best === null || m.mountPoint.length > best.length ? m.mountPoint : best), null);
      if (holder === null) throw notFound(`error getting the closest volume for the path=${targetPath}, err=no mount holds it`);
      try {
        return { volumeId: volumeMountedAt(snap, holder, holder).id };
      } catch (e) {
        throw new CsiProxyError(CsiProxyError.from(e).code, `error getting the closest volume for the path=${targetPath}, err=${(e as Error).message}`);
      }
    },

    async writeVolumeCache({ volumeId }) {
      guard("WriteVolumeCache");
      requireId(volumeId);
      const vol = findVolume(await snapshot(), volumeId);
      await host.flush(vol.devPath).catch((e) => {
        throw hostFailure(`flush volume ${volumeId}`, e);
      });
    },
  };
}
