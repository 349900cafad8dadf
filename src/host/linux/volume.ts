/**
 * Volume host operations on Linux: statfs/fs calls where the kernel answers directly, e2fsprogs,
 * xfsprogs and util-linux through runCommand argv arrays otherwise. Pass-through: no decisions here.
 */
import { mkdtemp, opendir, readFile, realpath, rmdir, stat, statfs } from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import type { FilesystemUsage, ManagedFsType, VolumeHostApi } from "../../groups/volume/host-api.ts";
import { runCommand } from "../exec/run-command.ts";
import { fsError } from "../fs-error.ts";
import { internal } from "../../errors.ts";
import { LinuxBlockHost } from "./block-host.ts";

/** mkfs, fsck and resize can take a while on large devices. */
const LONG = { timeoutMs: 30 * 60_000 };

/** "Block count:   523244" → 523244n from dumpe2fs -h / xfs_db print output. */
function field(text: string, re: RegExp, what: string): bigint {
  const m = re.exec(text);
  if (!m) throw internal(`cannot find ${what} in tool output`);
  return BigInt(m[1]);
}

export class LinuxVolumeHost extends LinuxBlockHost implements VolumeHostApi {
  async makeFilesystem(devPath: string, fsType: ManagedFsType): Promise<void> {
    // No -F / -f: mke2fs and mkfs.xfs keep refusing devices that already hold a filesystem.
    if (fsType === "ext4") await runCommand("mkfs.ext4", ["-q", devPath], LONG);
    else await runCommand("mkfs.xfs", ["-q", devPath], LONG);
  }

  async mount(devPath: string, target: string, fsType: string): Promise<void> {
    await runCommand("mount", ["--types", fsType, "--source", devPath, "--target", target]);
  }

  async unmount(target: string): Promise<void> {
    await runCommand("umount", [target]);
  }

  async inspectDirectory(p: string): Promise<{ isDirectory: boolean; empty: boolean } | null> {
    let st;
    try {
      st = await stat(p);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw fsError(e, "stat", p);
    }
    if (!st.isDirectory()) return { isDirectory: false, empty: false };
    const dir = await opendir(p).catch((e) => {
      throw fsError(e, "open directory", p);
    });
    try {
      return { isDirectory: true, empty: (await dir.read()) === null };
    } finally {
      await dir.close().catch(() => {});
    }
  }

  async statfs(mountPoint: string): Promise<FilesystemUsage> {
    const s = await statfs(mountPoint, { bigint: true }).catch((e) => {
      throw fsError(e, "statfs", mountPoint);
    });
    return { totalBytes: s.blocks * s.bsize, freeBytes: s.bfree * s.bsize };
  }

  async readFilesystemUsage(devPath: string, fsType: ManagedFsType): Promise<FilesystemUsage> {
    if (fsType === "ext4") {
      const { stdout } = await runCommand("dumpe2fs", ["-h", devPath]);
      const blockSize = field(stdout, /^Block size:\s+(\d+)/m, "Block size");
      return {
        totalBytes: field(stdout, /^Block count:\s+(\d+)/m, "Block count") * blockSize,
        freeBytes: field(stdout, /^Free blocks:\s+(\d+)/m, "Free blocks") * blockSize,
      };
    }
    const { stdout } = await runCommand("xfs_db", ["-r", "-c", "sb 0", "-c", "print dblocks fdblocks blocksize", devPath]);
    const blockSize = field(stdout, /^blocksize = (\d+)/m, "blocksize");
    return { totalBytes: field(stdout, /^dblocks = (\d+)/m, "dblocks") * blockSize, freeBytes: field(stdout, /^fdblocks = (\d+)/m, "fdblocks") * blockSize };
  }

  async flush(devPath: string): Promise<void> {
    // BLKFLSBUF: syncs the filesystem mounted from the device (if any), then the device's own buffers.
    await runCommand("blockdev", ["--flushbufs", devPath]);
  }

  async relocateGptBackup(diskDevPath: string): Promise<void> {
    await runCommand("sfdisk", ["--quiet", "--relocate", "gpt-bak-std", diskDevPath]);
  }

  async resizePartition(diskDevPath: string, number: number, sizeSectors: bigint): Promise<void> {
    // sfdisk counts in logical sectors.
    const name = (await realpath(diskDevPath)).split("/").pop() ?? "";
    const lbs = BigInt((await readFile(`/sys/class/block/${name}/queue/logical_block_size`, "utf8").catch(() => "512")).trim() || "512");
    const size = (sizeSectors * 512n) / lbs;
    await runCommand("sfdisk", ["--quiet", "--no-reread", "--no-tell-kernel", "--wipe", "never", "-N", String(number), diskDevPath], {
      stdin: `, ${size}\n`,
    });
    await runCommand("partx", ["--update", "--nr", String(number), diskDevPath]);
  }

  async checkFilesystem(devPath: string, fsType: ManagedFsType): Promise<void> {
    if (fsType === "ext4") await runCommand("e2fsck", ["-f", "-p", devPath], { ...LONG, okExitCodes: [0, 1] });
    else await runCommand("xfs_repair", ["-n", devPath], LONG);
  }

  async growFilesystem(devPath: string, fsType: ManagedFsType, mountPoint: string | null): Promise<void> {
    if (fsType === "ext4") await runCommand("resize2fs", [devPath], LONG);
    else {
      if (!mountPoint) throw internal("xfs_growfs needs a mount point");
      await runCommand("xfs_growfs", ["-d", mountPoint], LONG);
    }
  }

  async makeTempDir(): Promise<string> {
    return mkdtemp(path.join(os.tmpdir(), "csi-proxy-grow-"));
  }

  async removeTempDir(p: string): Promise<void> {
    await rmdir(p);
  }
}
