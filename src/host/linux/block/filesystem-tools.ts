/**
 * The filesystems csi-proxy creates, checks, grows and measures (e2fsprogs, xfsprogs, statfs(2)).
 * Only the tools' own refusals apply here: no force flag overrides a mounted or busy device. mkfs,
 * fsck and resize are bounded by {@link LONG_TOOL_RUN} (30 minutes), the superblock reads by
 * runCommand's default.
 */
import { statfs } from "node:fs/promises";
import type { ManagedFsType } from "./block-types.ts";
import { numberField } from "./block-parsers.ts";
import { LONG_TOOL_RUN, tool } from "./block-tool-runner.ts";
import { fsError } from "../../fs-error.ts";
import { internal } from "../../../errors.ts";
import { withWriterWatch, type WatchLog } from "./writer-watch.ts";

/** Filesystem size as the filesystem itself reports it, in bytes. */
export interface FilesystemUsage {
  totalBytes: bigint;
  /** Free blocks (including those reserved for root), as `df` counts "used" = total − free. */
  freeBytes: bigint;
}

export interface FilesystemTools {
  /**
   * Creates a filesystem, quick (mkfs.ext4 / mkfs.xfs defaults: no full write of the device). `replace`:
   * the device holds a filesystem of `fsType` the caller verified as unused, to be replaced (mkfs.xfs
   * refuses an existing filesystem without -f; mke2fs asks only on a terminal). Without it no force flag
   * is passed. Neither ever overrides the tools' own refusal of a mounted or busy device.
   */
  makeFilesystem(devPath: string, fsType: ManagedFsType, replace?: boolean): Promise<void>;
  /** Forced check of an unmounted filesystem, fixing only what is safe to fix automatically (e2fsck -f -p; xfs_repair -n, which only checks). */
  checkFilesystem(devPath: string, fsType: ManagedFsType): Promise<void>;
  /** Grows a filesystem to fill its device: resize2fs on the device (online when `mountPoint` is given, else offline), xfs_growfs on the mount point. */
  growFilesystem(devPath: string, fsType: ManagedFsType, mountPoint: string | null): Promise<void>;
  /** statfs of a mounted filesystem (no process). */
  statfs(mountPoint: string): Promise<FilesystemUsage>;
  /** Size of an unmounted filesystem from its superblock (dumpe2fs -h / xfs_db -r). */
  readFilesystemUsage(devPath: string, fsType: ManagedFsType): Promise<FilesystemUsage>;
}

/** The filesystem tools of this host (stateless). */
export function createFilesystemTools(options: { log?: WatchLog } = {}): FilesystemTools {
  return {
    async makeFilesystem(devPath, fsType, replace = false) {
      // mke2fs (stdin not a terminal) checks only that the device is not mounted or busy; mkfs.xfs also
      // refuses an existing filesystem unless -f, which never overrides its mounted-device refusal.
      // Another process writing the device meanwhile makes the answer Aborted (writer-watch.ts).
      const watched = { devPath, operation: `creating the ${fsType} filesystem`, damage: "the new filesystem may be damaged" };
      await withWriterWatch(watched, (onSpawn) => {
        const run = { ...LONG_TOOL_RUN, step: "mkfs", device: devPath, onSpawn } as const;
        return fsType === "ext4" ? tool("mkfs.ext4", ["-q", devPath], run) : tool("mkfs.xfs", replace ? ["-q", "-f", devPath] : ["-q", devPath], run);
      }, options.log);
    },

    async checkFilesystem(devPath, fsType) {
      // Must-finish (host-steps.ts): never signalled; -p fixes only what is safe automatically (never -y).
      if (fsType === "ext4") await tool("e2fsck", ["-f", "-p", devPath], { ...LONG_TOOL_RUN, okExitCodes: [0, 1], step: "e2fsck -p", device: devPath });
      else await tool("xfs_repair", ["-n", devPath], LONG_TOOL_RUN);
    },

    async growFilesystem(devPath, fsType, mountPoint) {
      // resize2fs of a mounted ext4 asks the kernel (online, crash-consistent: stoppable); of an
      // unmounted one rewrites the metadata itself (must-finish: never signalled, host-steps.ts).
      // Another process writing the device meanwhile makes the answer Aborted (writer-watch.ts).
      if (fsType !== "ext4" && !mountPoint) throw internal("xfs_growfs needs a mount point");
      const watched = { devPath, operation: `growing the ${fsType} filesystem`, damage: "the filesystem may be damaged" };
      await withWriterWatch(watched, (onSpawn) =>
        fsType === "ext4"
          ? tool("resize2fs", [devPath], { ...LONG_TOOL_RUN, step: mountPoint ? "resize2fs online" : "resize2fs offline", device: devPath, onSpawn })
          : tool("xfs_growfs", ["-d", mountPoint!], { ...LONG_TOOL_RUN, step: "xfs_growfs", device: devPath, onSpawn }),
      options.log);
    },

    async statfs(mountPoint) {
      const s = await statfs(mountPoint, { bigint: true }).catch((e) => {
        throw fsError(e, "statfs", mountPoint);
      });
      return { totalBytes: s.blocks * s.bsize, freeBytes: s.bfree * s.bsize };
    },

    async readFilesystemUsage(devPath, fsType) {
      if (fsType === "ext4") {
        const { stdout } = await tool("dumpe2fs", ["-h", devPath]);
        const blockSize = numberField(stdout, /^Block size:\s+(\d+)/m, "Block size");
        return {
          totalBytes: numberField(stdout, /^Block count:\s+(\d+)/m, "Block count") * blockSize,
          freeBytes: numberField(stdout, /^Free blocks:\s+(\d+)/m, "Free blocks") * blockSize,
        };
      }
      const { stdout } = await tool("xfs_db", ["-r", "-c", "sb 0", "-c", "print dblocks fdblocks blocksize", devPath]);
      const blockSize = numberField(stdout, /^blocksize = (\d+)/m, "blocksize");
      return { totalBytes: numberField(stdout, /^dblocks = (\d+)/m, "dblocks") * blockSize, freeBytes: numberField(stdout, /^fdblocks = (\d+)/m, "fdblocks") * blockSize };
    },
  };
}
