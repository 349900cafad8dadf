/**
 * The volume group on Windows: upstream csi-proxy master's decisions (reference-behaviour.md §2.3)
 * over {@link WindowsVolumeHostApi}, with the codes and the safer contract of
 * groups/volume/types.ts (FormatVolume never reformats; UnmountVolume only unmounts the named volume).
 *
 * Group logic beside the Windows host for the reason given in windows-disk-service.ts.
 */
import * as path from "node:path";
import type { VolumeService } from "../../groups/volume/types.ts";
import { CsiProxyError, failedPrecondition, invalidArgument, notFound } from "../../errors.ts";
import { IO_REPARSE_TAG_MOUNT_POINT, IO_REPARSE_TAG_SYMLINK, WinError, Win32Error } from "../../windows/win32.ts";
import { FileSystemType, type WindowsVolumeHostApi } from "./host-api.ts";
import { checkDiskNumber } from "./windows-disk-service.ts";

/** Partitions grow only by at least this much (upstream 3871187: tiny growth fails on Windows). */
export const MIN_GROWTH = 100n * 1024n * 1024n;
const MAX_HOPS = 256;
const VOLUME_NAME = /Volume\{[\w-]*\}/i;

const withSlash = (p: string) => (p.endsWith("\\") ? p : p + "\\");
const sameId = (a: string, b: string) => withSlash(a).toLowerCase() === withSlash(b).toLowerCase();

export function createWindowsVolumeService(deps: { host: WindowsVolumeHostApi }): VolumeService {
  const { host } = deps;

  function requireId(volumeId: string, text = "volume id empty") {
    if (!volumeId) throw invalidArgument(text);
  }

  /**
   * The volume mounted at `targetPath` (a volume mount point, or a symlink/junction leading to one;
   * at most 256 links). Not a mount point → NotFound.
   */
  async function volumeAt(targetPath: string): Promise<string> {
    let p = targetPath.replace(/\\+$/, "");
    for (let hop = 0; hop < MAX_HOPS; hop++) {
      const tag = await host.reparseTag(p);
      if (tag === null) throw notFound(`${targetPath} is not a mount point`);
      if (tag === IO_REPARSE_TAG_MOUNT_POINT) {
        try {
          return await host.getVolumeNameForVolumeMountPoint(withSlash(p));
        } catch (err) {
          if (!(err instanceof Win32Error)) throw err;
          // a junction to a directory, not a volume mount point: follow it
        }
      } else if (tag !== IO_REPARSE_TAG_SYMLINK) {
        throw notFound(`${targetPath} is not a mount point (reparse tag 0x${tag.toString(16)})`);
      }
      const target = await host.readLink(p);
      const m = VOLUME_NAME.exec(target);
      if (m) return `\\\\?\\${m[0]}\\`;
      p = path.win32.resolve(path.win32.dirname(p), target).replace(/\\+$/, "");
    }
    throw failedPrecondition(`${targetPath}: more than ${MAX_HOPS} links`);
  }

  /** The volume holding `targetPath`: the nearest mount point walking up, or the drive's volume. */
  async function closestVolume(targetPath: string): Promise<string> {
    let p = path.win32.normalize(targetPath).replace(/\\+$/, "");
    for (let hop = 0; hop < MAX_HOPS; hop++) {
      if (/^[A-Za-z]:$/.test(p)) return host.getVolumeNameForVolumeMountPoint(p + "\\");
      const tag = await host.reparseTag(p);
      if (tag === IO_REPARSE_TAG_MOUNT_POINT || tag === IO_REPARSE_TAG_SYMLINK) {
        if (tag === IO_REPARSE_TAG_MOUNT_POINT) {
          try {
            return await host.getVolumeNameForVolumeMountPoint(withSlash(p));
          } catch (err) {
            if (!(err instanceof Win32Error)) throw err;
          }
        }
        const target = await host.readLink(p);
        const m = VOLUME_NAME.exec(target);
        if (m) return `\\\\?\\${m[0]}\\`;
        p = path.win32.resolve(path.win32.dirname(p), target).replace(/\\+$/, "");
        continue;
      }
      const parent = path.win32.dirname(p);
      if (parent === p) break;
      p = parent.replace(/\\+$/, "");
    }
    throw notFound(`error getting the closest volume for the path=${targetPath}, err=no volume holds it`);
  }

  return {
    async listVolumesOnDisk({ diskNumber, partitionNumber }) {
      checkDiskNumber(diskNumber);
      return { volumeIds: await host.listVolumesOnDisk(diskNumber, partitionNumber) };
    },

    async mountVolume({ volumeId, targetPath }) {
      if (!volumeId) throw invalidArgument("MountVolumeRequest.VolumeId is empty");
      if (!targetPath) throw invalidArgument("MountVolumeRequest.TargetPath is empty");
      await host.getVolume(volumeId); // unknown volume: NotFound
      const dir = await host.inspectDirectory(targetPath);
      if (!dir) throw notFound(`cannot mount volume ${volumeId} at ${targetPath}: ${targetPath} does not exist (create the directory first)`);
      if (!dir.isDirectory) throw failedPrecondition(`cannot mount volume ${volumeId} at ${targetPath}: not a directory`);
      try {
        await host.setVolumeMountPoint(withSlash(targetPath), withSlash(volumeId));
      } catch (err) {
        if (err instanceof Win32Error && err.errno === WinError.DIR_NOT_EMPTY) {
          const current = await volumeAt(targetPath).catch(() => null);
          if (current && sameId(current, volumeId)) return; // idempotent, as upstream since v1.3.0
          throw failedPrecondition(
            `cannot mount volume ${volumeId} at ${targetPath}: ${current ? `volume ${current} is already mounted there` : "the directory is not empty"}`,
          );
        }
        if (err instanceof CsiProxyError) throw new CsiProxyError(err.code, `error mount volume (${volumeId}) to path ${targetPath}. error: ${err.message}`, { cause: err });
        throw err;
      }
    },

    async unmountVolume({ volumeId, targetPath }) {
      requireId(volumeId);
      if (!targetPath) throw invalidArgument("target path empty");
      await host.flushVolume(volumeId); // unknown volume: NotFound, nothing unmounted
      const current = await volumeAt(targetPath);
      if (!sameId(current, volumeId)) throw failedPrecondition(`cannot unmount volume ${volumeId} from ${targetPath}: volume ${current} is mounted there`);
      await host.deleteVolumeMountPoint(withSlash(targetPath));
    },

    async isVolumeFormatted({ volumeId }) {
      requireId(volumeId);
      return { formatted: (await host.getVolume(volumeId)).fileSystemType !== FileSystemType.Unknown };
    },

    async formatVolume({ volumeId }) {
      requireId(volumeId);
      const vol = await host.getVolume(volumeId);
      if (vol.fileSystemType === FileSystemType.NTFS) return;
      if (vol.fileSystemType !== FileSystemType.Unknown) {
        throw failedPrecondition(`refusing to format volume ${volumeId} as NTFS: it already holds ${vol.fileSystem || `file system type ${vol.fileSystemType}`}; formatting would destroy that data`);
      }
      await host.formatVolume(volumeId);
    },

    async resizeVolume({ volumeId, sizeBytes }) {
      requireId(volumeId);
      if (sizeBytes < 0n) throw invalidArgument(`invalid negative size ${sizeBytes} for volume (${volumeId})`);
      const partition = await host.getVolumePartition(volumeId);
      const target = sizeBytes === 0n ? (await host.getPartitionSupportedSize(volumeId)).sizeMax : sizeBytes;
      if (target < partition.size + MIN_GROWTH) return; // shrink, no-op and tiny growth: success without change
      await host.resizePartition(volumeId, target);
    },

    async getVolumeStats({ volumeId }) {
      requireId(volumeId);
      const vol = await host.getVolume(volumeId);
      const used = vol.size > vol.sizeRemaining ? vol.size - vol.sizeRemaining : 0n;
      return { totalBytes: vol.size, usedBytes: used };
    },

    async getDiskNumberFromVolumeId({ volumeId }) {
      requireId(volumeId);
      return { diskNumber: (await host.getVolumePartition(volumeId)).diskNumber };
    },

    async getVolumeIdFromTargetPath({ targetPath }) {
      if (!targetPath) throw invalidArgument("target path is empty");
      return { volumeId: await volumeAt(targetPath) };
    },

    async getClosestVolumeIdFromTargetPath({ targetPath }) {
      if (!targetPath) throw invalidArgument("target path is empty");
      return { volumeId: await closestVolume(targetPath) };
    },

    async writeVolumeCache({ volumeId }) {
      requireId(volumeId);
      await host.flushVolume(volumeId);
    },
  };
}
