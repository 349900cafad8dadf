/**
 * {@link BlockTools} on the real system. Reads go to sysfs/procfs without processes, except the
 * signature probe (blkid -p), which has no kernel interface; changes are sysfs writes or util-linux
 * (sfdisk, partx, losetup, blockdev), e2fsprogs and xfsprogs through runCommand argv arrays.
 * Pass-through: no decisions here.
 */
import { mkdir, mkdtemp, readFile, readdir, realpath, rename, rmdir, stat, statfs, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { BlockDisk, BlockMount, BlockTools, DevNumber, FilesystemUsage, ManagedFsType, OfflineMark, PartitionTable, ProbeResult } from "./block-tools.ts";
import { runCommand } from "../exec/run-command.ts";
import { fsError } from "../fs-error.ts";
import { inspectDirectory } from "../inspect-directory.ts";
import { readMountTable } from "./mountinfo.ts";
import { listBlockDisks, readBlockDisk, SYS_BLOCK } from "./sysfs-block.ts";
import { readPartitionTable } from "./partition-table.ts";
import { internal } from "../../errors.ts";

/** Linux capability numbers (linux/capability.h) → names. */
const CAPABILITIES = [
  "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID",
  "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
  "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN",
  "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
  "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
  "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
];

/** Names of the capabilities set in a CapEff hex mask. */
export function capabilityNames(hexMask: string): Set<string> {
  const mask = BigInt(`0x${hexMask.trim() || "0"}`);
  return new Set(CAPABILITIES.filter((_, bit) => (mask >> BigInt(bit)) & 1n));
}

/** glibc's gnu_dev_major/minor for a 64-bit dev_t. */
export function decodeDev(rdev: bigint): DevNumber {
  const major = Number(((rdev >> 8n) & 0xfffn) | ((rdev >> 32n) & ~0xfffn));
  const minor = Number((rdev & 0xffn) | ((rdev >> 12n) & ~0xffn));
  return { major, minor };
}

/** Undoes /proc/swaps' octal escapes. */
const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** Parses `blkid -p -o export` output (KEY=value lines). */
export function parseBlkidExport(stdout: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of stdout.split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

/** sfdisk never wipes signatures on its own: csi-proxy decides what may be overwritten. */
const SFDISK = ["--quiet", "--wipe", "never", "--wipe-partitions", "never"];
/** sfdisk neither checks for a busy device (csi-proxy checked) nor re-reads the table: callers sync the kernel with partx. */
const NO_REREAD = ["--no-reread", "--no-tell-kernel"];

/** mkfs, fsck and resize can take a while on large devices. */
const LONG = { timeoutMs: 30 * 60_000 };

async function writeSysfs(file: string, value: string): Promise<void> {
  await writeFile(file, value).catch((e) => {
    throw fsError(e, "write", file);
  });
}

/** "Block count:   523244" → 523244n from dumpe2fs -h / xfs_db print output. */
function field(text: string, re: RegExp, what: string): bigint {
  const m = re.exec(text);
  if (!m) throw internal(`cannot find ${what} in tool output`);
  return BigInt(m[1]);
}

export interface LinuxBlockToolsOptions {
  /** Where offline marks persist (JSON). Kept on a tmpfs (/run) they vanish at reboot, with the device numbers they name. */
  stateFile: string;
}

export class LinuxBlockTools implements BlockTools {
  readonly #stateFile: string;
  constructor(options: LinuxBlockToolsOptions) {
    this.#stateFile = options.stateFile;
  }

  effectiveUid(): number {
    return process.geteuid?.() ?? 0;
  }

  async effectiveCapabilities(): Promise<Set<string>> {
    const status = await readFile("/proc/self/status", "utf8");
    return capabilityNames(/^CapEff:\s*([0-9a-fA-F]+)/m.exec(status)?.[1] ?? "0");
  }

  listDisks(): Promise<BlockDisk[]> {
    return listBlockDisks();
  }

  async findDisk(dev: DevNumber): Promise<BlockDisk | null> {
    let name: string;
    try {
      name = path.basename(await realpath(`/sys/dev/block/${dev.major}:${dev.minor}`));
    } catch {
      return null;
    }
    // Partitions have a /sys/dev/block entry too, but no /sys/block one.
    return existsSync(path.join(SYS_BLOCK, name)) ? readBlockDisk(name) : null;
  }

  async readMounts(): Promise<BlockMount[]> {
    return (await readMountTable()).map((m) => {
      const [major, minor] = m.device.split(":").map(Number);
      return { major, minor, mountPoint: m.mountPoint, fsType: m.fsType, source: m.source };
    });
  }

  async readSwapDevices(): Promise<DevNumber[]> {
    const text = await readFile("/proc/swaps", "utf8").catch(() => "");
    const out: DevNumber[] = [];
    for (const line of text.split("\n").slice(1)) {
      const file = line.split(/\s+/)[0];
      if (!file) continue;
      try {
        const st = await stat(unescape(file), { bigint: true });
        out.push(decodeDev(st.isBlockDevice() ? st.rdev : st.dev));
      } catch {
        // a swap file that vanished: nothing to protect
      }
    }
    return out;
  }

  async probe(devPath: string): Promise<ProbeResult> {
    const { stdout, exitCode } = await runCommand("blkid", ["-p", "-o", "export", devPath], { okExitCodes: [0, 2, 8], timeoutMs: 30_000 });
    if (exitCode === 2) return { kind: "empty" };
    if (exitCode === 8) return { kind: "ambivalent", detail: "blkid: ambivalent result, several signatures (see wipefs -n)" };
    const v = parseBlkidExport(stdout);
    // On a partition blkid also prints PART_ENTRY_* (the partition's own entry): not a signature.
    if (!v.TYPE && !v.PTTYPE) return { kind: "empty" };
    return { kind: "found", type: v.TYPE ?? null, usage: v.USAGE ?? null, ptType: v.PTTYPE ?? null };
  }

  readPartitionTable(disk: Pick<BlockDisk, "devPath" | "logicalBlockSize" | "sizeBytes">): Promise<PartitionTable | null> {
    return readPartitionTable(disk.devPath, disk.logicalBlockSize, disk.sizeBytes);
  }

  async readOfflineMarks(): Promise<OfflineMark[]> {
    let text: string;
    try {
      text = await readFile(this.#stateFile, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw internal(`read ${this.#stateFile}: ${(e as Error).message}`, e);
    }
    try {
      const parsed = JSON.parse(text) as { offline?: OfflineMark[] };
      return Array.isArray(parsed.offline) ? parsed.offline : [];
    } catch (e) {
      throw internal(`${this.#stateFile} is not valid JSON: ${(e as Error).message}`, e);
    }
  }

  /** Atomic replace (write a temporary file, rename). */
  async writeOfflineMarks(marks: OfflineMark[]): Promise<void> {
    await mkdir(path.dirname(this.#stateFile), { recursive: true, mode: 0o700 });
    const tmp = `${this.#stateFile}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify({ offline: marks }, null, 2) + "\n", { mode: 0o600 });
    await rename(tmp, this.#stateFile);
  }

  inspectDirectory(p: string): Promise<{ isDirectory: boolean; empty: boolean } | null> {
    return inspectDirectory(p);
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

  /* ---------------------------------------------------------------- disks */

  async createGptTable(devPath: string): Promise<void> {
    // Only ever called on a disk without partitions (the kernel shows none), so there is nothing to
    // tell the kernel: sfdisk's own re-read (BLKRRPART, ~250 ms) is skipped.
    await runCommand("sfdisk", [...SFDISK, ...NO_REREAD, devPath], { stdin: "label: gpt\n" });
  }

  async appendPartition(devPath: string, typeId: string): Promise<void> {
    // The type is a constant chosen by the disk host, never request data. The kernel learns about
    // the new partition once, through partx (BLKPG), instead of sfdisk re-reading the whole table.
    await runCommand("sfdisk", [...SFDISK, ...NO_REREAD, "--append", devPath], { stdin: `type=${typeId}\n` });
    await this.syncPartitions(devPath);
  }

  async syncPartitions(devPath: string): Promise<void> {
    // BLKPG: works on kernels without a parser for the table and on disks with mounted partitions, where BLKRRPART cannot.
    await runCommand("partx", ["--update", devPath]);
  }

  async listScsiHosts(): Promise<number[]> {
    const names = await readdir("/sys/class/scsi_host").catch(() => [] as string[]);
    return names.map((n) => /^host(\d+)$/.exec(n)).filter((m) => m !== null).map((m) => Number(m[1]));
  }

  async scanScsiHost(host: number): Promise<void> {
    await writeSysfs(`/sys/class/scsi_host/host${host}/scan`, "- - -");
  }

  async rescanScsiDevice(name: string): Promise<void> {
    await writeSysfs(`/sys/block/${name}/device/rescan`, "1");
  }

  async refreshLoopCapacity(devPath: string): Promise<void> {
    await runCommand("losetup", ["--set-capacity", devPath]);
  }

  async setScsiState(name: string, state: "running" | "offline"): Promise<void> {
    await writeSysfs(`/sys/block/${name}/device/state`, state);
  }

  async setReadOnly(devPath: string, readOnly: boolean): Promise<void> {
    await runCommand("blockdev", [readOnly ? "--setro" : "--setrw", devPath]);
  }

  /* ---------------------------------------------------------------- volumes */

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
