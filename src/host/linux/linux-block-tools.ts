/**
 * {@link BlockTools} on the real system. Reads go to sysfs/procfs without processes, except the
 * signature probe (blkid -p), which has no kernel interface; changes are sysfs writes or util-linux
 * (sfdisk, partx, losetup, blockdev), e2fsprogs and xfsprogs through runCommand argv arrays.
 * Each method does one thing and decides nothing about the API (block-model.ts interprets, the
 * hosts and services decide); the refusals here are the kernel's and the tools' own (an exclusive
 * claim the kernel refuses, mkfs without force flags). State: the offline marks, kept in
 * offline-marks-file.ts.
 */
import { mkdtemp, open, readFile, readdir, realpath, rmdir, stat, statfs, writeFile } from "node:fs/promises";
import { constants, existsSync, readFileSync, readdirSync, realpathSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { OPENER_SETTLE_MS, type BlockDisk, type BlockMount, type BlockTools, type DevNumber, type DeviceClaim, type DeviceOpener, type FilesystemUsage, type LoopDevice, type ManagedFsType, type NamespaceMount, type OfflineMark, type PartitionTable, type ProbeResult, type Signature } from "./block-tools-api.ts";
import { cappedTimeoutMs, HostCommandError, runCommand, type RunOptions } from "../exec/run-command.ts";
import { fsError } from "../fs-error.ts";
import { inspectDirectory } from "../inspect-directory.ts";
import { createNamespaceMounts, type NamespaceMounts } from "./namespace-mounts.ts";
import { scanDeviceOpeners } from "./device-openers.ts";
import type { MountTableCache } from "./mount-table-cache.ts";
import type { MountEntry } from "./mountinfo.ts";
import { processMountTable } from "./mount-index.ts";
import { mountOnDir, unmountDir } from "./anchored-mount.ts";
import type { UndoLog } from "../../util/undo-retry.ts";
import { loadLibc } from "./libc.ts";
import { listBlockDisks, readBlockDisk, SYS_BLOCK } from "./sysfs-block.ts";
import { readPartitionTable } from "./partition-table.ts";
import { loadBlkid, type Blkid } from "./libblkid.ts";
import { OfflineMarksFile } from "./offline-marks-file.ts";
import { Code, CsiProxyError, failedPrecondition, internal } from "../../errors.ts";

/** The Debian package of each tool run here, for "install it" messages. */
const PACKAGE_OF: Record<string, string> = {
  blkid: "util-linux", wipefs: "util-linux", partx: "util-linux", blockdev: "util-linux", losetup: "mount", mount: "mount", umount: "mount",
  sfdisk: "fdisk", "mkfs.ext4": "e2fsprogs", e2fsck: "e2fsprogs", resize2fs: "e2fsprogs", dumpe2fs: "e2fsprogs",
  "mkfs.xfs": "xfsprogs", xfs_growfs: "xfsprogs", xfs_db: "xfsprogs", xfs_repair: "xfsprogs",
};

/** runCommand, with a missing tool reported as FailedPrecondition naming the package to install. */
export async function tool(file: string, args: readonly string[], options?: RunOptions) {
  try {
    return await runCommand(file, args, options);
  } catch (e) {
    if (e instanceof HostCommandError && e.exitCode === null && (e.cause as NodeJS.ErrnoException | undefined)?.code === "ENOENT") {
      throw failedPrecondition(`${file} is not installed: install the ${PACKAGE_OF[file] ?? file} package (scripts/install-linux-tools.sh installs every tool csi-proxy runs)`);
    }
    throw e;
  }
}

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

/** Exclusive claims refused with EBUSY are retried this often, this far apart (0.5 s in all). */
const CLAIM_ATTEMPTS = 10;
const CLAIM_RETRY_MS = 50;

/** Read-only openers are looked at again this often within OPENER_SETTLE_MS. */
const OPENER_SETTLE_STEP_MS = 100;

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

/** Errnos by which syncfs(2) and fsync(2) report that written data did not reach the disk. */
const WRITE_BACK_ERRNOS: Record<string, string> = {
  EIO: "input/output error",
  ENOSPC: "no space left on device",
  EDQUOT: "disk quota exceeded",
  EROFS: "the filesystem turned read-only after an error",
};

/** DataLoss for a write-back failure (`what` failed), null for any other error. */
function writeBackError(e: unknown, what: string): CsiProxyError | null {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  if (!code || !(code in WRITE_BACK_ERRNOS)) return null;
  return new CsiProxyError(Code.DataLoss, `${what}: ${code} (${WRITE_BACK_ERRNOS[code]})`, { cause: e });
}

/** `blkid -p -o export`: what {@link LinuxBlockTools.probe} runs where libblkid cannot be loaded. */
export async function probeWithBlkidProgram(devPath: string): Promise<ProbeResult> {
  const { stdout, exitCode } = await tool("blkid", ["-p", "-o", "export", devPath], { okExitCodes: [0, 2, 8], timeoutMs: 30_000 });
  if (exitCode === 2) return { kind: "empty" };
  if (exitCode === 8) return { kind: "ambivalent", detail: "blkid: ambivalent result, several signatures (see wipefs -n)" };
  const v = parseBlkidExport(stdout);
  // On a partition blkid also prints PART_ENTRY_* (the partition's own entry): not a signature.
  if (!v.TYPE && !v.PTTYPE) return { kind: "empty" };
  return { kind: "found", type: v.TYPE ?? null, usage: v.USAGE ?? null, ptType: v.PTTYPE ?? null };
}

/** `wipefs --no-act --json`: what {@link LinuxBlockTools.listSignatures} runs where libblkid cannot be loaded. */
export async function signaturesWithWipefs(devPath: string): Promise<Signature[]> {
  const { stdout } = await tool("wipefs", ["--no-act", "--json", devPath], { timeoutMs: 30_000 });
  if (!stdout.trim()) return [];
  const parsed = JSON.parse(stdout) as { signatures?: { type?: string; offset?: string }[] };
  return (parsed.signatures ?? []).map((s) => ({ type: s.type ?? "unknown", offset: BigInt(s.offset ?? "0") }));
}

/** libblkid in process, null where koffi or libblkid.so.1 is missing (then the programs run). */
const blkidOrNull = (() => {
  let loaded: Promise<Blkid | null> | undefined;
  return () => (loaded ??= loadBlkid().catch(() => null));
})();

export interface LinuxBlockToolsOptions {
  /** Where offline marks persist (offline-marks-file.ts). Kept on a tmpfs (/run) they vanish at reboot, with the device numbers they name. */
  stateFile: string;
  /** Where background cleanups (a mount that could not be undone: anchored-mount.ts) log; default stderr. */
  log?: UndoLog;
}

/**
 * The block view of one mount table version. Filesystems on an anonymous device number (btrfs shows
 * 0:NN in mountinfo) are attributed to their source when the source is a block device node: the
 * device the API knows them by (its number as stat'ed when this version was first used). The answer
 * is shared by every caller of that version and must not be changed.
 */
async function blockMountsOf(table: readonly MountEntry[]): Promise<BlockMount[]> {
  const sources = new Map<string, DevNumber | null>();
  const out: BlockMount[] = [];
  for (const m of table) {
    let [major, minor] = m.device.split(":").map(Number);
    if (major === 0 && m.source.startsWith("/dev/")) {
      if (!sources.has(m.source)) {
        const st = await stat(m.source, { bigint: true }).catch(() => null);
        sources.set(m.source, st?.isBlockDevice() ? decodeDev(st.rdev) : null);
      }
      const dev = sources.get(m.source);
      if (dev) ({ major, minor } = dev);
    }
    out.push({ major, minor, mountPoint: m.mountPoint, fsType: m.fsType, source: m.source, mountId: m.mountId });
  }
  return out;
}

/** A sysfs or procfs file's text, "" when it cannot be read (generated in memory: read synchronously, as sysfs-block.ts explains). */
function kernelText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

export class LinuxBlockTools implements BlockTools {
  readonly #offlineMarks: OfflineMarksFile;
  readonly #log: UndoLog | undefined;
  /** As fresh as reading /proc/self/mountinfo on every call (mount-table-cache.ts), parsed only after a change; shared by the process. */
  readonly #mountTable: MountTableCache = processMountTable();
  /** readMounts' answer per table version (the table array is the version): built once per mount change. */
  readonly #blockMounts = new WeakMap<readonly MountEntry[], Promise<BlockMount[]>>();
  /** Per loop device name: what its backing file was stat'ed as, for one medium (diskseq) and path; bounded by the number of loop devices. */
  readonly #loopBacking = new Map<string, { key: string; backing: LoopDevice["backing"] }>();
  constructor(options: LinuxBlockToolsOptions) {
    this.#offlineMarks = new OfflineMarksFile(options.stateFile);
    this.#log = options.log;
  }

  effectiveUid(): number {
    return process.geteuid?.() ?? 0;
  }

  /** Every namespace's table, each remembered until the kernel lists other mount ids for it (namespace-mounts.ts). */
  readonly #namespaces: NamespaceMounts = createNamespaceMounts();

  mountsInAnyNamespace(dev: DevNumber): Promise<NamespaceMount[]> {
    return this.#namespaces.mountsOf(dev.major, dev.minor);
  }

  async effectiveCapabilities(): Promise<Set<string>> {
    const status = await readFile("/proc/self/status", "utf8");
    return capabilityNames(/^CapEff:\s*([0-9a-fA-F]+)/m.exec(status)?.[1] ?? "0");
  }

  listDisks(options: { tables?: boolean; partitions?: boolean } = {}): Promise<BlockDisk[]> {
    return listBlockDisks({ withMedium: true, ...(options.tables === false ? { readTable: async () => null } : {}), ...(options.partitions === false ? { identityOnly: true } : {}) });
  }

  /** The sysfs link is resolved synchronously (sysfs is generated in memory, as sysfs-block.ts explains). */
  async findDisk(dev: DevNumber): Promise<BlockDisk | null> {
    let name: string;
    try {
      name = path.basename(realpathSync(`/sys/dev/block/${dev.major}:${dev.minor}`));
    } catch {
      return null;
    }
    // Partitions have a /sys/dev/block entry too, but no /sys/block one.
    return existsSync(path.join(SYS_BLOCK, name)) ? readBlockDisk(name) : null;
  }

  /** The whole disk a disk or partition device number belongs to, from sysfs (synchronously: in memory); null when neither. */
  diskOfDevice(dev: DevNumber): DevNumber | null {
    let real: string;
    try {
      real = realpathSync(`/sys/dev/block/${dev.major}:${dev.minor}`);
    } catch {
      return null;
    }
    const diskDir = existsSync(path.join(real, "partition")) ? path.dirname(real) : real;
    if (!existsSync(path.join(SYS_BLOCK, path.basename(diskDir)))) return null;
    const [major, minor] = kernelText(path.join(diskDir, "dev")).trim().split(":").map(Number);
    return Number.isInteger(major) && Number.isInteger(minor) ? { major, minor } : null;
  }

  /** Names and media (diskseq) of every /sys/block entry, read synchronously (in memory): one read per device. */
  diskSetKey(): string | undefined {
    let names: string[];
    try {
      names = readdirSync(SYS_BLOCK);
    } catch {
      return undefined;
    }
    const parts: string[] = [];
    for (const name of names.sort()) {
      const seq = kernelText(path.join(SYS_BLOCK, name, "diskseq")).trim();
      if (!seq) return undefined;
      parts.push(`${name}=${seq}`);
    }
    return parts.join(" ");
  }

  /** {@link blockMountsOf} of the current table, built once per mount table version. */
  async readMounts(): Promise<BlockMount[]> {
    const table = await this.#mountTable.table();
    let mounts = this.#blockMounts.get(table);
    if (!mounts) {
      const building = blockMountsOf(table);
      mounts = building;
      this.#blockMounts.set(table, building);
      building.catch(() => this.#blockMounts.delete(table));
    }
    return mounts;
  }

  async deviceOpeners(devs: readonly DevNumber[]): Promise<DeviceOpener[]> {
    let found = await scanDeviceOpeners(devs);
    // Only read-only openers: probing (udev's blkid) that ends within the settle time is not a use.
    for (const start = Date.now(); found.length > 0 && found.every((o) => o.access === "read") && Date.now() - start < OPENER_SETTLE_MS; ) {
      await new Promise((r) => setTimeout(r, OPENER_SETTLE_STEP_MS));
      found = await scanDeviceOpeners(devs, { pids: [...new Set(found.map((o) => o.pid))] });
    }
    return found;
  }

  async readSwapDevices(): Promise<DevNumber[]> {
    const files = kernelText("/proc/swaps").split("\n").slice(1).map((line) => line.split(/\s+/)[0]).filter(Boolean);
    const devs = await Promise.all(
      files.map((file) =>
        stat(unescape(file), { bigint: true }).then(
          (st) => decodeDev(st.isBlockDevice() ? st.rdev : st.dev),
          () => null, // a swap file that vanished: nothing to protect
        ),
      ),
    );
    return devs.filter((d): d is DevNumber => d !== null);
  }

  /** libblkid in process (libblkid.ts), or `blkid -p` where libblkid cannot be loaded. */
  async probe(devPath: string): Promise<ProbeResult> {
    const blkid = await blkidOrNull();
    return blkid ? blkid.probe(devPath) : probeWithBlkidProgram(devPath);
  }

  /** libblkid in process (libblkid.ts), or `wipefs --no-act` where libblkid cannot be loaded. */
  async listSignatures(devPath: string): Promise<Signature[]> {
    const blkid = await blkidOrNull();
    return blkid ? blkid.signatures(devPath) : signaturesWithWipefs(devPath);
  }

  /** sysfs read synchronously; the backing files are stat'ed concurrently (a backing file may sit on a slow filesystem). */
  async listLoops(): Promise<LoopDevice[]> {
    let names: string[];
    try {
      names = readdirSync(SYS_BLOCK).filter((n) => n.startsWith("loop"));
    } catch {
      names = [];
    }
    const loops = await Promise.all(
      names.map(async (name): Promise<LoopDevice | null> => {
        const dir = path.join(SYS_BLOCK, name);
        const backingFile = kernelText(path.join(dir, "loop/backing_file")).replace(/\n$/, "");
        if (!backingFile) return null; // not attached
        const [major, minor] = kernelText(path.join(dir, "dev")).trim().split(":").map(Number);
        const num = (f: string) => BigInt(kernelText(path.join(dir, f)).trim() || "0");
        const sizeBytes = num("size") * 512n;
        const offsetBytes = num("loop/offset");
        // The file an attached loop device holds open cannot change under the same medium (diskseq)
        // and path (backing_file follows renames; LOOP_CHANGE_FD changes the path): stat'ed once per pair.
        const seq = kernelText(path.join(dir, "diskseq")).trim();
        const key = seq ? `${seq} ${backingFile}` : "";
        let backing: LoopDevice["backing"] = null;
        const known = key ? this.#loopBacking.get(name) : undefined;
        if (known && known.key === key) backing = known.backing;
        else if (!backingFile.endsWith(" (deleted)")) {
          const st = await stat(backingFile, { bigint: true }).catch(() => null);
          if (st?.isBlockDevice()) backing = { kind: "block", dev: decodeDev(st.rdev) };
          else if (st) backing = { kind: "file", dev: decodeDev(st.dev), ino: st.ino };
          if (key && st) this.#loopBacking.set(name, { key, backing });
        }
        return { name, devPath: `/dev/${name}`, major, minor, sizeBytes, offsetBytes, backingFile, backing };
      }),
    );
    return loops.filter((l): l is LoopDevice => l !== null);
  }

  async kernelFilesystems(): Promise<Set<string>> {
    const text = await readFile("/proc/filesystems", "utf8").catch(() => "");
    return new Set(text.split("\n").map((l) => l.split("\t").pop()?.trim() ?? "").filter(Boolean));
  }

  async claimExclusive(devPath: string, dev: DevNumber): Promise<DeviceClaim> {
    let fh: Awaited<ReturnType<typeof open>> | undefined;
    try {
      // A holder that lets go within half a second (udev probing, a superblock released just after umount) is waited for.
      for (let attempt = 1; !fh; attempt++) {
        try {
          fh = await open(devPath, constants.O_RDONLY | constants.O_EXCL);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "EBUSY" || attempt >= CLAIM_ATTEMPTS) throw e;
          await new Promise((r) => setTimeout(r, CLAIM_RETRY_MS));
        }
      }
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "EBUSY") throw failedPrecondition(`${devPath} is in use: the kernel refuses an exclusive claim (mounted, or held by another program or device)`);
      if (code === "ENOENT" || code === "ENXIO") throw failedPrecondition(`${devPath} is gone (the device changed since it was looked up)`);
      throw fsError(e, "open", devPath);
    }
    const st = await fh.stat({ bigint: true }).catch(async (e: unknown) => {
      await fh.close();
      throw fsError(e, "stat", devPath);
    });
    const got = decodeDev(st.rdev);
    if (!st.isBlockDevice() || got.major !== dev.major || got.minor !== dev.minor) {
      await fh.close();
      throw failedPrecondition(`${devPath} is now device ${got.major}:${got.minor}, not ${dev.major}:${dev.minor} (the device changed since it was looked up)`);
    }
    let closed = false;
    return {
      release: async () => {
        if (closed) return;
        closed = true;
        await fh.close();
      },
    };
  }

  readPartitionTable(disk: Pick<BlockDisk, "devPath" | "logicalBlockSize" | "sizeBytes">): Promise<PartitionTable | null> {
    return readPartitionTable(disk.devPath, disk.logicalBlockSize, disk.sizeBytes);
  }

  readOfflineMarks(): Promise<OfflineMark[]> {
    return this.#offlineMarks.read();
  }

  writeOfflineMarks(marks: OfflineMark[]): Promise<void> {
    return this.#offlineMarks.write(marks);
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
      const { stdout } = await tool("dumpe2fs", ["-h", devPath]);
      const blockSize = field(stdout, /^Block size:\s+(\d+)/m, "Block size");
      return {
        totalBytes: field(stdout, /^Block count:\s+(\d+)/m, "Block count") * blockSize,
        freeBytes: field(stdout, /^Free blocks:\s+(\d+)/m, "Free blocks") * blockSize,
      };
    }
    const { stdout } = await tool("xfs_db", ["-r", "-c", "sb 0", "-c", "print dblocks fdblocks blocksize", devPath]);
    const blockSize = field(stdout, /^blocksize = (\d+)/m, "blocksize");
    return { totalBytes: field(stdout, /^dblocks = (\d+)/m, "dblocks") * blockSize, freeBytes: field(stdout, /^fdblocks = (\d+)/m, "fdblocks") * blockSize };
  }

  /* ---------------------------------------------------------------- disks */

  async createGptTable(devPath: string): Promise<void> {
    // Only ever called on a disk without partitions (the kernel shows none), so there is nothing to
    // tell the kernel: sfdisk's own re-read (BLKRRPART, ~250 ms) is skipped.
    await tool("sfdisk", [...SFDISK, ...NO_REREAD, devPath], { stdin: "label: gpt\n" });
  }

  async appendPartition(devPath: string, typeId: string): Promise<void> {
    // The type is a constant chosen by the disk host, never request data. The kernel learns about
    // the new partition once, through partx (BLKPG), instead of sfdisk re-reading the whole table.
    await tool("sfdisk", [...SFDISK, ...NO_REREAD, "--append", devPath], { stdin: `type=${typeId}\n` });
    await this.syncPartitions(devPath);
  }

  async syncPartitions(devPath: string): Promise<void> {
    // BLKPG: works on kernels without a parser for the table and on disks with mounted partitions, where BLKRRPART cannot.
    // An explicit range: without it partx (2.38) adds no MBR logical partition to a disk the kernel shows none on.
    await tool("partx", ["--update", "--nr", "1:256", devPath]);
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
    await tool("losetup", ["--set-capacity", devPath]);
  }

  async setScsiState(name: string, state: "running" | "offline"): Promise<void> {
    await writeSysfs(`/sys/block/${name}/device/state`, state);
  }

  async setReadOnly(devPath: string, readOnly: boolean): Promise<void> {
    await tool("blockdev", [readOnly ? "--setro" : "--setrw", devPath]);
  }

  /* ---------------------------------------------------------------- volumes */

  async makeFilesystem(devPath: string, fsType: ManagedFsType, replace = false): Promise<void> {
    // mke2fs (stdin not a terminal) checks only that the device is not mounted or busy; mkfs.xfs also
    // refuses an existing filesystem unless -f, which never overrides its mounted-device refusal.
    if (fsType === "ext4") await tool("mkfs.ext4", ["-q", devPath], LONG);
    else await tool("mkfs.xfs", replace ? ["-q", "-f", devPath] : ["-q", devPath], LONG);
  }

  /** mount(2) on the target held as a directory handle (anchored-mount.ts): no link is followed. */
  async mount(devPath: string, target: string, fsType: string): Promise<void> {
    await mountOnDir(await loadLibc(), devPath, target, fsType, { log: this.#log });
  }

  /** umount2(2) of the mount at target, found through its parent's handle (anchored-mount.ts). */
  async unmount(target: string): Promise<void> {
    await unmountDir(await loadLibc(), target);
  }

  async flushFilesystem(mountPoint: string, mountId?: number): Promise<void> {
    let fh: Awaited<ReturnType<typeof open>>;
    try {
      fh = await open(mountPoint, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    } catch (e) {
      throw writeBackError(e, `open the filesystem mounted at ${mountPoint}`) ?? fsError(e, "open", mountPoint);
    }
    try {
      if (mountId !== undefined) {
        const fdinfo = await readFile(`/proc/self/fdinfo/${fh.fd}`, "utf8").catch(() => "");
        const on = /^mnt_id:\s*(\d+)/m.exec(fdinfo)?.[1];
        if (on !== undefined && Number(on) !== mountId) throw failedPrecondition(`${mountPoint} is no longer the mount it was looked up as (mount ${on}, not ${mountId})`);
      }
      const libc = await loadLibc();
      await libc.syncfs(fh.fd, cappedTimeoutMs(60_000)).catch((e: unknown) => {
        throw writeBackError(e, `write back the filesystem mounted at ${mountPoint}`) ?? CsiProxyError.from(e);
      });
    } finally {
      await fh.close();
    }
  }

  async flushDevice(devPath: string, dev: DevNumber): Promise<void> {
    // Read-only: fsync needs no write access, and closing a descriptor opened for writing makes udev probe the device again.
    const fh = await open(devPath, constants.O_RDONLY).catch((e: unknown) => {
      throw fsError(e, "open", devPath);
    });
    try {
      const st = await fh.stat({ bigint: true });
      const got = decodeDev(st.rdev);
      if (!st.isBlockDevice() || got.major !== dev.major || got.minor !== dev.minor) {
        throw failedPrecondition(`${devPath} is now device ${got.major}:${got.minor}, not ${dev.major}:${dev.minor} (the device changed since it was looked up)`);
      }
      await fh.sync().catch((e: unknown) => {
        throw writeBackError(e, `write back ${devPath}`) ?? fsError(e, "fsync", devPath);
      });
    } finally {
      await fh.close();
    }
  }

  async relocateGptBackup(diskDevPath: string): Promise<void> {
    // Only the backup header moves: the kernel's partitions stay as they are (without --no-tell-kernel
    // sfdisk re-reads and the kernel drops them until the next partx: a daemon killed in between left a
    // volume nobody could find again).
    await tool("sfdisk", ["--quiet", "--no-reread", "--no-tell-kernel", "--relocate", "gpt-bak-std", diskDevPath]);
  }

  async resizePartition(diskDevPath: string, number: number, sizeSectors: bigint): Promise<void> {
    // sfdisk counts in logical sectors.
    const name = (await realpath(diskDevPath)).split("/").pop() ?? "";
    const lbs = BigInt((await readFile(`/sys/class/block/${name}/queue/logical_block_size`, "utf8").catch(() => "512")).trim() || "512");
    const size = (sizeSectors * 512n) / lbs;
    await tool("sfdisk", ["--quiet", "--no-reread", "--no-tell-kernel", "--wipe", "never", "-N", String(number), diskDevPath], {
      stdin: `, ${size}\n`,
    });
    await tool("partx", ["--update", "--nr", String(number), diskDevPath]);
  }

  async checkFilesystem(devPath: string, fsType: ManagedFsType): Promise<void> {
    if (fsType === "ext4") await tool("e2fsck", ["-f", "-p", devPath], { ...LONG, okExitCodes: [0, 1] });
    else await tool("xfs_repair", ["-n", devPath], LONG);
  }

  async growFilesystem(devPath: string, fsType: ManagedFsType, mountPoint: string | null): Promise<void> {
    if (fsType === "ext4") await tool("resize2fs", [devPath], LONG);
    else {
      if (!mountPoint) throw internal("xfs_growfs needs a mount point");
      await tool("xfs_growfs", ["-d", mountPoint], LONG);
    }
  }

  async makeTempDir(): Promise<string> {
    // Canonical: mount() opens it component by component and refuses symbolic links.
    return realpath(await mkdtemp(path.join(os.tmpdir(), "csi-proxy-grow-")));
  }

  async removeTempDir(p: string): Promise<void> {
    await rmdir(p);
  }
}
