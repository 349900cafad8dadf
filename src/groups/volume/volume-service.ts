import type { VolumeService } from "./types.ts";
import { callSignal, inCallScope } from "../../util/call-scope.ts";
import { stopIfAborted, withEarlierSteps } from "../../util/stop-if-aborted.ts";
import type { MountedVolume, VolumeHostApi, VolumeLocation, WriteCheck } from "./host-api.ts";
import type { KeyedMutex } from "../../util/keyed-mutex.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import { Code, CsiProxyError, failedPrecondition, invalidArgument, notFound } from "../../errors.ts";
import {
  allowedMountPoint,
  checkDiskNumber,
  diskLockKey,
  privilegeGuard,
  refuseVolumeWrite,
  volumeWriteCheck,
  withContext,
  type VolumeWriteRule,
} from "../../policy/block-policy.ts";
import { fragmentError } from "../../compat/driver-fragments.ts";

export interface VolumeServiceDeps {
  host: VolumeHostApi;
  /**
   * Mount and unmount targets and the paths of the target-path queries must pass it (beyond
   * upstream), and mounts outside it are foreign. Without one (Windows, as upstream) target paths are
   * used as given and every mount point the host reports counts as foreign.
   */
  policy?: { check(path: string, options?: { followFinal?: boolean }): Promise<string> };
  /** Shared with the disk service: operations on one disk serialise across both groups. */
  locks?: KeyedMutex;
}

const MiB = 1024n * 1024n;
/** Upstream (3871187): growth below this is skipped as a no-op (tiny growth fails on Windows). */
export const RESIZE_THRESHOLD_BYTES = 100n * MiB;
/** A filesystem this much smaller than its partition was left so by an interrupted resize (a complete one is short by less than a block). */
const FILESYSTEM_SLACK_BYTES = MiB;

/** Volume ids compare case-insensitively, with or without the trailing backslash (Windows APIs accept both). */
export function sameVolumeId(a: string, b: string): boolean {
  const norm = (id: string) => (id.endsWith("\\") ? id : `${id}\\`).toLowerCase();
  return norm(a) === norm(b);
}

/**
 * The volume group, on any host (host-api.ts). Upstream master's decisions (docs/upstream-behaviour.md,
 * Volume) and, beyond upstream where marked, csi-proxy's refusals — all unit-tested against the fakes:
 * - MountVolume: the target is checked by the path policy when there is one (beyond upstream);
 *   idempotent for the same volume and path; another mount there is FailedPrecondition; the target
 *   must be an existing empty directory (SetVolumeMountPoint's rule); a volume without filesystem is
 *   refused where the host cannot mount one (Linux);
 * - UnmountVolume: the path must hold exactly this volume (beyond upstream), flushed first; not a
 *   mount point is NotFound (upstream: not idempotent); both refusals carry `The access path is not
 *   valid` (compat/driver-fragments.ts);
 * - FormatVolume: OK only when it formatted: an unused volume holding nothing or the default
 *   filesystem is formatted (quick, as upstream); in use — mounted anywhere, inside the kubelet dir
 *   too — or holding anything else is FailedPrecondition (beyond upstream, which formats over both);
 * - ResizeVolume: size is the partition size, 0 = the largest supported, growth below 100 MiB and
 *   shrinking succeed without change, negative is InvalidArgument, beyond the supported size
 *   OutOfRange; then the filesystem follows where the host needs a separate step; every refusal
 *   before the first change;
 * - every change refuses offline disks and devices in use (the OS's own, busy, mounted outside).
 */
export function createVolumeService(deps: VolumeServiceDeps): VolumeService {
  const { host, policy } = deps;
  const locks = deps.locks ?? createKeyedMutex();
  const guard = privilegeGuard(host, "volume");
  const isAllowed = allowedMountPoint(policy);

  function requireId(volumeId: string, text = "volume id empty"): void {
    if (!volumeId) throw invalidArgument(text);
  }

  /** The target path to operate on: the policy's checked path, or the request's when there is no policy. */
  const checkTarget = (targetPath: string) => (policy ? policy.check(targetPath, { followFinal: true }) : Promise.resolve(targetPath));

  /** The volume's filesystem, null when it holds none. */
  const fileSystemOf = async (volumeId: string) => (host.getVolumeFilesystem ? host.getVolumeFilesystem(volumeId) : (await host.getVolumeContent(volumeId)).fileSystem);

  /** One operation of the host (its session, when it has them), started holding the disk's lock. */
  const session = <T>(fn: () => Promise<T>): Promise<T> => (host.session ? host.session(fn) : fn());

  /** Locates the volume, then runs `fn` holding its disk's lock with a fresh location, as one host session. */
  async function withVolume<T>(method: string, volumeId: string, fn: (vol: VolumeLocation) => Promise<T>): Promise<T> {
    const first = await host.locateVolume(volumeId);
    return locks.run(diskLockKey(first.diskNumber), () => session(async () => fn(await host.locateVolume(volumeId))), { what: `${method} of volume ${volumeId} (${first.name})` });
  }

  /** The rule of a write: every refusal of policy/block-policy.ts `refuseVolumeWrite`; mounts inside the allowed dirs are csi-proxy's own and allowed unless `allowMountsInside` is false. */
  const ruleOf = (what: string, allowMountsInside = true, format?: string): VolumeWriteRule => ({ what, allowMountsInside, isAllowed, format });

  /** Every refusal that guards a change of the volume, on the facts looked up: its disk offline, or it (or its disk) in use. */
  async function refuseChange(vol: VolumeLocation, what: string, allowMountsInside = true): Promise<void> {
    await refuseVolumeWrite({ location: vol }, ruleOf(what, allowMountsInside));
  }

  /**
   * The decision a write carries to its host, which runs it on the facts it reads right before writing:
   * the volume must be the one looked up (same host identity: on Linux device, medium and extent; on
   * Windows disk, partition, offset and size) and must pass the same rule.
   */
  const reverify = (vol: VolumeLocation, rule: VolumeWriteRule): WriteCheck => volumeWriteCheck(vol, rule);

  async function mountVolume(volumeId: string, targetPath: string): Promise<void> {
    if (!volumeId) throw invalidArgument("MountVolumeRequest.VolumeId is empty");
    if (!targetPath) throw invalidArgument("MountVolumeRequest.TargetPath is empty");
    const target = await checkTarget(targetPath);
    await withVolume("MountVolume", volumeId, async (vol) => {
      const what = `mount volume ${volumeId} at ${targetPath}`;
      const current = await host.mountedAt(target);
      if (current) {
        if (current.volumeId !== null && sameVolumeId(current.volumeId, vol.id)) return; // idempotent (upstream since v1.3.0)
        throw failedPrecondition(`cannot ${what}: ${current.description} is already mounted there`);
      }
      await refuseChange(vol, what);
      const dir = await host.inspectDirectory(target);
      if (!dir) throw notFound(`cannot ${what}: ${targetPath} does not exist (create the directory first)`);
      if (!dir.isDirectory) throw failedPrecondition(`cannot ${what}: ${targetPath} is not a directory`);
      if (!dir.empty) throw failedPrecondition(`cannot ${what}: directory ${targetPath} is not empty`);
      let fileSystem: string | null = null;
      if (host.mountRequiresFilesystem) {
        fileSystem = await fileSystemOf(volumeId);
        if (!fileSystem) throw failedPrecondition(`cannot ${what}: the volume holds ${(await host.getVolumeContent(volumeId)).description}, not a filesystem; format it first`);
      }
      const check = reverify(vol, ruleOf(what));
      await withContext(`error mount volume (${volumeId}) to path ${targetPath}`, host.mountVolume(volumeId, target, fileSystem, check));
    });
  }

  async function unmountVolume(volumeId: string, targetPath: string): Promise<void> {
    requireId(volumeId);
    if (!targetPath) throw invalidArgument("target path empty");
    const target = await checkTarget(targetPath);
    await withVolume("UnmountVolume", volumeId, async (vol) => {
      const current = await host.mountedAt(target);
      if (!current) throw fragmentError("volume-unmount-not-access-path", `cannot unmount ${targetPath}: it is not a mount point`);
      if (current.volumeId === null || !sameVolumeId(current.volumeId, vol.id)) {
        // Safety refusal (beyond upstream): nothing is unmounted; for the client the path is not an access path of its volume.
        throw fragmentError("volume-unmount-not-access-path", `refusing to unmount ${targetPath}: it holds ${current.description}, not volume ${volumeId}`, Code.FailedPrecondition);
      }
      await withContext(`flush volume ${volumeId} before unmounting`, host.flushVolume(volumeId));
      const flushed = `volume ${volumeId} was flushed`;
      await withContext(`unmount ${targetPath}`, host.unmountVolume(target).catch((e: unknown) => Promise.reject(withEarlierSteps(e, flushed))));
    });
  }

  /**
   * OK only when the volume was formatted: an unused volume holding nothing or a filesystem of the type
   * being created gets a new one (its data gone: callers such as local-static-provisioner's cleaner
   * erase released volumes so). Mounted anywhere (inside the kubelet dir too) or otherwise in use:
   * FailedPrecondition saying by what; any other content: FailedPrecondition, nothing written.
   */
  async function formatVolume(volumeId: string): Promise<void> {
    requireId(volumeId);
    await withVolume("FormatVolume", volumeId, async (vol) => {
      const fs = host.defaultFileSystem;
      const what = `format volume ${volumeId} (${vol.name})`;
      const rule = ruleOf(what, false, fs);
      await refuseVolumeWrite({ location: vol }, rule);
      await refuseVolumeWrite({ location: vol, content: await host.getVolumeContent(volumeId) }, rule);
      const check = reverify(vol, rule);
      await withContext(`${what} as ${fs}`, host.formatVolume(volumeId, check));
    });
  }

  async function resizeVolume(volumeId: string, sizeBytes: bigint): Promise<void> {
    requireId(volumeId);
    if (sizeBytes < 0n) throw invalidArgument(`invalid negative size ${sizeBytes} for volume (${volumeId})`);
    if (host.syncInterruptedResize) {
      const first = await host.locateVolume(volumeId);
      const synced = await locks.run(diskLockKey(first.diskNumber), () => withContext(`resize volume ${volumeId} (${first.name}): finishing an interrupted resize`, host.syncInterruptedResize!(volumeId)), {
        what: `ResizeVolume of volume ${volumeId} (${first.name})`,
      });
      if (synced) {
        stopIfAborted(callSignal(), {
          before: `resizing volume ${volumeId}`,
          done: `finishing an earlier interrupted resize, the kernel was given the size partition ${first.partitionNumber} of disk ${first.diskNumber} already had in the partition table; nothing more was changed`,
        });
      }
    }
    await withVolume("ResizeVolume", volumeId, async (vol) => {
      const what = `resize volume ${volumeId} (${vol.name})`;
      if (vol.partitionNumber === null) throw failedPrecondition(`cannot ${what}: it is a whole-disk filesystem, there is no partition to grow`);
      const current = vol.sizeBytes;
      // Upstream: the size is the partition's; shrinking, the same size and growth below the threshold succeed without change
      // (beyond upstream: except that a filesystem left smaller than its partition by an interrupted resize is grown).
      const unchanged = () => (sizeBytes === 0n || sizeBytes >= current ? finishGrowth(vol, what) : Promise.resolve());
      if (sizeBytes !== 0n && sizeBytes < current + RESIZE_THRESHOLD_BYTES) return unchanged();
      const { maxBytes, alignBytes } = await withContext(`cannot ${what}`, host.getPartitionSupportedSize(volumeId));
      const target = sizeBytes === 0n ? maxBytes : (sizeBytes / alignBytes) * alignBytes;
      if (target < current + RESIZE_THRESHOLD_BYTES) return unchanged();
      if (target > maxBytes) {
        throw new CsiProxyError(Code.OutOfRange, `cannot ${what} to ${sizeBytes} bytes: at most ${maxBytes} bytes are available to partition ${vol.partitionNumber}`);
      }

      // Every refusal before the first change.
      await refuseChange(vol, what);
      const growth = await host.getFilesystemGrowth(volumeId);
      if (growth.kind === "unsupported") throw failedPrecondition(`cannot ${what}: ${growth.reason}`);
      if (growth.kind === "needs-privilege") throw new CsiProxyError(Code.PermissionDenied, `cannot ${what}: ${growth.reason}`);

      const check = reverify(vol, ruleOf(what));
      // The id may name the volume differently afterwards (a Linux dev- id: the partition got a new minor).
      const grown = await withContext(`grow partition ${vol.partitionNumber} of disk ${vol.diskNumber}`, host.resizePartition(volumeId, target, check));
      if (growth.kind === "separate") {
        const changed = `partition ${vol.partitionNumber} of disk ${vol.diskNumber} was grown to ${target} bytes`;
        stopIfAborted(callSignal(), { before: `growing the filesystem of volume ${volumeId}`, done: `${changed}; the filesystem was not grown (a retry of ResizeVolume grows it)` });
        // Its identity changed with its extent: the filesystem's growth re-checks the refusals alone.
        const growing = host.growFilesystem(grown || volumeId, volumeWriteCheck({}, ruleOf(what))).catch((e: unknown) => Promise.reject(withEarlierSteps(e, changed)));
        await withContext(`${what}: the partition was grown but growing the filesystem failed`, growing);
      }
    });
  }

  /**
   * A resize interrupted after the partition grew (daemon killed, growth tool failed or timed out)
   * leaves the filesystem smaller than its partition; the retry asks for a size the partition
   * already has. Then the filesystem is grown, with every refusal of a resize first.
   */
  async function finishGrowth(vol: VolumeLocation, what: string): Promise<void> {
    if (!host.filesystemShortfall) return;
    const shortfall = await withContext(`cannot ${what}`, host.filesystemShortfall(vol.id));
    if (shortfall < FILESYSTEM_SLACK_BYTES) return;
    await refuseChange(vol, what);
    const growth = await host.getFilesystemGrowth(vol.id);
    if (growth.kind === "unsupported") throw failedPrecondition(`cannot ${what}: ${growth.reason}`);
    if (growth.kind === "needs-privilege") throw new CsiProxyError(Code.PermissionDenied, `cannot ${what}: ${growth.reason}`);
    if (growth.kind !== "separate") return;
    await withContext(`${what}: growing the filesystem to its partition (${shortfall} bytes short) failed`, host.growFilesystem(vol.id, volumeWriteCheck(vol, ruleOf(what))));
  }

  /** The volume of a mount, or NotFound saying what is there instead. */
  function volumeOf(m: MountedVolume | null, shown: string): string {
    if (!m) throw notFound(`${shown} is not a mount point`);
    if (m.volumeId === null) throw notFound(`${shown} holds ${m.description}, not a volume`);
    return m.volumeId;
  }

  /**
   * GetVolumeIDFromTargetPath's answer. A missing path and a path that is not a mount point carry
   * `because it does not exist` (aws-ebs / ecs-agent read it as "not mounted"); a path holding
   * something that is not a volume does not (they must not take that for "not mounted").
   */
  async function volumeAtTarget(targetPath: string): Promise<string> {
    const target = await checkTarget(targetPath);
    let m: MountedVolume | null;
    try {
      m = await host.mountedAt(target);
    } catch (e) {
      if (e instanceof CsiProxyError && e.code === Code.NotFound) {
        throw fragmentError("volume-target-path-missing", `${targetPath} is not a mount point: ${e.message}`);
      }
      throw e;
    }
    if (!m) {
      const dir = await host.inspectDirectory(target);
      throw dir
        ? fragmentError("volume-target-path-not-mounted", `${targetPath} is not a mount point`)
        : fragmentError("volume-target-path-missing", `Cannot find path '${targetPath}' because it does not exist.`);
    }
    return volumeOf(m, targetPath);
  }

  return inCallScope({
    async listVolumesOnDisk({ diskNumber, partitionNumber }) {
      guard("ListVolumesOnDisk");
      return { volumeIds: await host.listVolumes(checkDiskNumber(diskNumber), partitionNumber) };
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
      return { formatted: (await fileSystemOf(volumeId)) !== null };
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
      requireId(volumeId);
      const { totalBytes, freeBytes } = await host.getVolumeUsage(volumeId);
      return { totalBytes, usedBytes: totalBytes > freeBytes ? totalBytes - freeBytes : 0n };
    },

    async getDiskNumberFromVolumeId({ volumeId }) {
      guard("GetDiskNumberFromVolumeID");
      requireId(volumeId);
      return { diskNumber: (await host.locateVolume(volumeId)).diskNumber };
    },

    async getVolumeIdFromTargetPath({ targetPath }) {
      guard("GetVolumeIDFromTargetPath");
      if (!targetPath) throw invalidArgument("target path is empty");
      return { volumeId: await volumeAtTarget(targetPath) };
    },

    async getClosestVolumeIdFromTargetPath({ targetPath }) {
      guard("GetClosestVolumeIDFromTargetPath");
      if (!targetPath) throw invalidArgument("target path is empty");
      const holder = await host.volumeHolding(await checkTarget(targetPath));
      try {
        if (!holder) throw notFound("no volume holds it");
        return { volumeId: volumeOf(holder, holder.mountPoint) };
      } catch (e) {
        const err = CsiProxyError.from(e);
        throw new CsiProxyError(err.code, `error getting the closest volume for the path=${targetPath}, err=${err.message}`, { cause: e });
      }
    },

    async writeVolumeCache({ volumeId }) {
      guard("WriteVolumeCache");
      requireId(volumeId);
      await withContext(`flush volume ${volumeId}`, host.flushVolume(volumeId));
    },
  });
}
