/**
 * Reads shared by the Linux disk and volume hosts: sysfs/procfs without processes, except the
 * signature probe (blkid -p), which has no kernel interface.
 */
import { readFile, rename, stat, writeFile, mkdir } from "node:fs/promises";
import * as path from "node:path";
import type { BlockDisk, BlockHostApi, BlockMount, DevNumber, OfflineMark, PartitionTable, ProbeResult } from "../../groups/disk/host-api.ts";
import { runCommand } from "../exec/run-command.ts";
import { readMountTable } from "./mountinfo.ts";
import { listBlockDisks } from "./sysfs-block.ts";
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

export interface LinuxBlockHostOptions {
  /** Where offline marks persist (JSON). Kept on a tmpfs (/run) they vanish at reboot, with the device numbers they name. */
  stateFile: string;
}

export class LinuxBlockHost implements BlockHostApi {
  protected readonly stateFile: string;
  constructor(options: LinuxBlockHostOptions) {
    this.stateFile = options.stateFile;
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
      text = await readFile(this.stateFile, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw internal(`read ${this.stateFile}: ${(e as Error).message}`, e);
    }
    try {
      const parsed = JSON.parse(text) as { offline?: OfflineMark[] };
      return Array.isArray(parsed.offline) ? parsed.offline : [];
    } catch (e) {
      throw internal(`${this.stateFile} is not valid JSON: ${(e as Error).message}`, e);
    }
  }

  /** Atomic replace (write a temporary file, rename). */
  async writeOfflineMarks(marks: OfflineMark[]): Promise<void> {
    await mkdir(path.dirname(this.stateFile), { recursive: true, mode: 0o700 });
    const tmp = `${this.stateFile}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify({ offline: marks }, null, 2) + "\n", { mode: 0o600 });
    await rename(tmp, this.stateFile);
  }
}
