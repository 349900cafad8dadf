/**
 * Which processes hold a block device node open or mapped, as fuser(1) finds them: every process's
 * descriptors (/proc/<pid>/fd) and file mappings (/proc/<pid>/map_files), matched by the st_rdev of
 * the file they refer to — whatever path or mount namespace the process opened it through. Users of
 * files on a filesystem mounted from the device are not openers of its node (the mount holds it
 * inside the kernel), and neither are the kernel's own holders (dm, md, loop): those are other facts.
 *
 * Two ways to the same facts. Where it can be had, the kernel lists them itself (kernel-task-listing.ts: an
 * iterator over every task's open files and mappings that hands back only block device files — one
 * walk inside the kernel, ~0.3 µs per descriptor or mapping, no syscall per descriptor). Elsewhere
 * (no BTF, no privilege to load it, another PID namespace, tests with a fake /proc) the walk of /proc:
 *
 * Cost of the walk, bounded by what the host runs (docs/performance.md "Block operations"): one readdir of /proc;
 * per process one readdir of fd/, one readlink per descriptor and one read of maps; one mountinfo
 * read per mount namespace; a stat only for the descriptors whose link text can name a file
 * (sockets, pipes, anonymous inodes and other `type:[inode]` objects are skipped by their text), and
 * once per distinct mapped file in a scan (shared libraries are stat'ed once, not once per process);
 * fdinfo, exe and comm only for matches.
 *
 * Never a call that can wait on a remote party: a stat of a file on a network or FUSE filesystem
 * may wait for its server forever (a dead NFS server, a hung FUSE daemon), so files on such
 * filesystems ({@link MAY_WAIT_FS}: for a descriptor, its link text under one of their mount points
 * in the process's namespace; for a mapping, its device) are not stat'ed — a device node opened
 * through one of them is not seen (counted as skipped).
 * readlink(2) and statx(2) go through koffi where it loads (a few µs each; Node's readlinkSync and
 * statSync cost 10–12 µs of CPU per call, most of it in JavaScript), through Node's fs otherwise.
 * The calls are synchronous (procfs is generated in memory and never waits for a device) and the
 * scan yields to the event loop whenever it has run for {@link SLICE_MS} since the last yield, so the
 * loop is never held much longer than that. Processes that end or cannot be read meanwhile are skipped.
 */
import { readFileSync, readdirSync, readlinkSync, statSync } from "node:fs";
import type { DeviceOpener, DevNumber } from "./block-types.ts";
import { parseMountInfo } from "../kernel/mountinfo.ts";
import { Code, CsiProxyError } from "../../../errors.ts";
import { loadKoffi } from "../../../util/koffi-loader.ts";
import { openKernelTaskListing, type KernelTaskListing } from "../kernel/kernel-task-listing.ts";
import { callSignal } from "../../../util/call-scope.ts";
import { NOTHING_CHANGED, stopIfAborted } from "../../../util/stop-if-aborted.ts";


export interface OpenerScanOptions {
  /** Where procfs is (tests); default /proc. */
  procRoot?: string;
  /** A process never reported (the daemon itself); default this process. */
  selfPid?: number;
  /** Only these processes (a re-check of earlier findings); default every process. */
  pids?: readonly number[];
  /** The scan gives up (Unavailable) after this long, not having looked at every process; default {@link SCAN_DEADLINE_MS}. */
  deadlineMs?: number;
  /**
   * How: "kernel" — the kernel's own listing of open and mapped block device files (kernel-task-listing.ts),
   * "procfs" — the walk of /proc. Default: the kernel's listing where it can be had and `procRoot` is
   * not given, else the walk.
   */
  via?: "kernel" | "procfs";
}

/** How long one scan may take before it gives up: far above the measured worst case (docs/performance.md "Block operations"). */
export const SCAN_DEADLINE_MS = 60_000;

/** What one scan looked at (for the cost figures). */
export interface OpenerScanStats {
  /** Which way the scan went ({@link OpenerScanOptions.via}); set by the scan. */
  via?: "kernel" | "procfs";
  /** Processes looked at (the kernel's listing: processes holding any block device file). */
  processes: number;
  /** Descriptors looked at (the kernel's listing: block device files and mappings it listed). */
  descriptors: number;
  /** Descriptors and mapped files stat'ed. */
  stats: number;
  /** Descriptors and mapped files not stat'ed because their filesystem may wait on a remote party. */
  skipped: number;
}

/** Filesystems whose stat may wait for a server or a user-space daemon. */
export const MAY_WAIT_FS = /^(?:fuse(?:blk|ctl)?(?:\..*)?|nfs4?|cifs|smb3?|9p|ceph|glusterfs|afs|lustre|virtiofs|gfs2|ocfs2|beegfs|gpfs)$/;

/** What one mount namespace's table says about where a stat may wait. */
interface NamespaceMounts {
  /** Mount points (as the namespace's processes see paths) of filesystems that may wait. */
  waitMountPoints: string[];
  /** Devices ("major:minor") of filesystems that may wait. */
  waitDevices: Set<string>;
}

/** Milliseconds of scanning between two yields to the event loop. */
export const SLICE_MS = 2;

/** Link texts of descriptors that cannot be a device node: `socket:[…]`, `pipe:[…]`, `anon_inode:…`, `net:[…]`… */
const NOT_A_FILE = /^(?:[a-z_]+:\[\d+\]|anon_inode:)/;

/**
 * glibc's gnu_dev_major/minor of a dev_t. Node reports st_rdev as a double: exact below 2^53, which
 * covers majors below 2^21 (the kernel's are below 2^12) with any 20-bit minor.
 */
function decode(rdev: number): string {
  const major = Math.floor(rdev / 256) % 4096 + Math.floor(rdev / 2 ** 32) - (Math.floor(rdev / 2 ** 32) % 4096);
  const minor = (rdev % 256) + (Math.floor(rdev / 4096) % 2 ** 20) - (Math.floor(rdev / 4096) % 256);
  return `${major}:${minor}`;
}

const tryRead = <T>(fn: () => T): T | null => {
  try {
    return fn();
  } catch {
    return null;
  }
};

/** The executable's file name ("dd"), else the command name the process gave itself (comm), else "". */
function commandOf(base: string): string {
  const exe = tryRead(() => readlinkSync(`${base}/exe`));
  if (exe) return exe.replace(/ \(deleted\)$/, "").split("/").pop() ?? "";
  return tryRead(() => readFileSync(`${base}/comm`, "utf8").trim()) ?? "";
}

/** The two per-descriptor calls, synchronous. */
interface ProcCalls {
  /** A link's text, null when it cannot be read. */
  readlink: (link: string) => string | null;
  /** The st_rdev ("major:minor") of the block device a /proc magic link refers to, null for anything else, undefined when it cannot be stat'ed. */
  blockDevOf: (link: string) => string | null | undefined;
}

const nodeCalls: ProcCalls = {
  readlink: (link) => tryRead(() => readlinkSync(link)),
  blockDevOf: (link) => {
    const st = tryRead(() => statSync(link, { throwIfNoEntry: false }));
    if (!st) return undefined;
    return st.isBlockDevice() ? decode(st.rdev) : null;
  },
};

const AT_FDCWD = -100;
/** Cached attributes only: a network or FUSE filesystem is not asked (type and device number never change). */
const AT_STATX_DONT_SYNC = 0x4000;
const STATX_TYPE = 0x1;
const S_IFMT = 0o170000;
const S_IFBLK = 0o060000;

/** libc's readlink(2) and statx(2) through koffi (struct statx's layout is the same on every architecture). */
async function koffiCalls(): Promise<ProcCalls> {
  const libc = (await loadKoffi()).load("libc.so.6");
  const readlink = libc.func("long readlink(const char *path, void *buf, unsigned long size)") as unknown as (p: string, b: Buffer, n: number) => number;
  const statx = libc.func("int statx(int dirfd, const char *path, int flags, unsigned int mask, void *buf)") as unknown as (d: number, p: string, f: number, m: number, b: Buffer) => number;
  const text = Buffer.alloc(4096);
  const stx = Buffer.alloc(256);
  return {
    readlink: (link) => {
      const n = readlink(link, text, text.length);
      return n < 0 ? null : text.toString("utf8", 0, n);
    },
    blockDevOf: (link) => {
      if (statx(AT_FDCWD, link, AT_STATX_DONT_SYNC, STATX_TYPE, stx) !== 0) return undefined;
      if ((stx.readUInt16LE(28) & S_IFMT) !== S_IFBLK) return null; // stx_mode
      return `${stx.readUInt32LE(128)}:${stx.readUInt32LE(132)}`; // stx_rdev_major, stx_rdev_minor
    },
  };
}

let calls: Promise<ProcCalls> | undefined;
const procCalls = () => (calls ??= koffiCalls().catch(() => nodeCalls));

/**
 * Every process (but `selfPid`) holding one of `devs` open or mapped: one entry per process and
 * device, "read-write" winning over "read" over "mapped". Sorted by pid. `stats`, when given, is
 * filled with what the scan looked at. Unavailable when the scan outlives its deadline.
 */
export async function scanDeviceOpeners(devs: readonly DevNumber[], options: OpenerScanOptions = {}, stats?: OpenerScanStats): Promise<DeviceOpener[]> {
  if (devs.length === 0) return [];
  const kernel = options.via === "procfs" || (options.via === undefined && options.procRoot !== undefined) ? null : await openKernelTaskListing();
  if (options.via === "kernel" && !kernel) throw new CsiProxyError(Code.Unavailable, "the kernel's listing of block device openers cannot be had here");
  if (stats) stats.via = kernel ? "kernel" : "procfs";
  if (!kernel) return walkProc(devs, options, stats);
  try {
    return await listWithKernel(kernel, devs, options, stats);
  } catch (err) {
    // Out of its deadline: say so. Any other failure of the kernel's listing: the walk is asked instead.
    if (err instanceof CsiProxyError || options.via === "kernel") throw err;
    if (stats) stats.via = "procfs";
    return walkProc(devs, options, stats);
  }
}

/** The "read-write" > "read" > "mapped" order in which one process's several holds of a device are reported. */
const RANK = { mapped: 0, read: 1, "read-write": 2 } as const;

/** Access of an open file from its open flags (O_ACCMODE: 0 read-only). */
const accessOf = (flags: number): DeviceOpener["access"] => ((flags & 3) === 0 ? "read" : "read-write");

function sorted(found: Iterable<DeviceOpener>): DeviceOpener[] {
  return [...found].sort((a, b) => a.pid - b.pid || a.dev.major - b.dev.major || a.dev.minor - b.dev.minor);
}

function deadlineError(ms: number, progress: string): CsiProxyError {
  return new CsiProxyError(Code.Unavailable, `looking for processes holding the device nodes took longer than ${Math.round(ms)} ms (${progress}); not knowing, csi-proxy does not change the device`);
}

/** {@link scanDeviceOpeners} from the kernel's listing: one walk inside the kernel, records only for block device files. */
async function listWithKernel(kernel: KernelTaskListing, devs: readonly DevNumber[], options: OpenerScanOptions, stats?: OpenerScanStats): Promise<DeviceOpener[]> {
  const self = options.selfPid ?? process.pid;
  const wanted = new Set(devs.map((d) => `${d.major}:${d.minor}`));
  const only = options.pids ? new Set(options.pids) : null;
  const started = performance.now();
  const deadlineMs = options.deadlineMs ?? SCAN_DEADLINE_MS;
  let reads = 0;
  const signal = callSignal();
  const records = await kernel.blockFiles(async () => {
    stopIfAborted(signal, { before: "the rest of the scan for processes holding the device nodes", done: NOTHING_CHANGED });
    if (reads++ === 0) return;
    if (performance.now() - started > deadlineMs) throw deadlineError(deadlineMs, `${reads - 1} reads of the kernel's listing`);
    await new Promise((r) => setImmediate(r));
  });
  const found = new Map<string, DeviceOpener>();
  const pids = new Set<number>();
  for (const r of records) {
    pids.add(r.pid);
    const dev = `${r.major}:${r.minor}`;
    if (r.pid === self || !wanted.has(dev) || (only && !only.has(r.pid))) continue;
    const access = r.fd < 0 ? "mapped" : accessOf(r.flags);
    const key = `${r.pid} ${dev}`;
    const had = found.get(key);
    if (had && RANK[had.access] >= RANK[access]) continue;
    found.set(key, { pid: r.pid, command: had?.command ?? commandOf(`/proc/${r.pid}`), dev: { major: r.major, minor: r.minor }, access });
  }
  if (stats) {
    stats.processes += pids.size;
    stats.descriptors += records.length;
  }
  return sorted(found.values());
}

/** {@link scanDeviceOpeners} by walking /proc. */
async function walkProc(devs: readonly DevNumber[], options: OpenerScanOptions, stats?: OpenerScanStats): Promise<DeviceOpener[]> {
  const proc = options.procRoot ?? "/proc";
  const self = options.selfPid ?? process.pid;
  const wanted = new Set(devs.map((d) => `${d.major}:${d.minor}`));
  const counted: OpenerScanStats = stats ?? { processes: 0, descriptors: 0, stats: 0, skipped: 0 };
  const { readlink, blockDevOf } = await procCalls();
  const pids = options.pids ?? (tryRead(() => readdirSync(proc)) ?? []).filter((n) => /^[1-9]\d*$/.test(n)).map(Number);
  /** Mapped files already stat'ed in this scan, by "st_dev inode" as maps shows them → block device or null. */
  const mapped = new Map<string, string | null>();
  /** By the namespace link text (`mnt:[…]`). */
  const namespaces = new Map<string, NamespaceMounts>();
  const namespaceOf = (base: string): NamespaceMounts => {
    const link = readlink(`${base}/ns/mnt`);
    const known = link === null ? undefined : namespaces.get(link);
    if (known) return known;
    const ns: NamespaceMounts = { waitMountPoints: [], waitDevices: new Set() };
    for (const m of parseMountInfo(tryRead(() => readFileSync(`${base}/mountinfo`, "utf8")) ?? "")) {
      if (!MAY_WAIT_FS.test(m.fsType)) continue;
      ns.waitMountPoints.push(m.mountPoint === "/" ? "" : m.mountPoint);
      ns.waitDevices.add(m.device);
    }
    if (link !== null) namespaces.set(link, ns);
    return ns;
  };
  const found = new Map<string, DeviceOpener>();
  const note = (pid: number, dev: string, access: DeviceOpener["access"]) => {
    const key = `${pid} ${dev}`;
    const had = found.get(key);
    if (had && RANK[had.access] >= RANK[access]) return;
    const [major, minor] = dev.split(":").map(Number);
    found.set(key, { pid, command: had?.command ?? commandOf(`${proc}/${pid}`), dev: { major, minor }, access });
  };

  const started = performance.now();
  const deadline = started + (options.deadlineMs ?? SCAN_DEADLINE_MS);
  let sliceStart = started;
  const signal = callSignal();
  const maybeYield = async () => {
    const now = performance.now();
    if (now - sliceStart < SLICE_MS) return;
    stopIfAborted(signal, { before: "the rest of the scan for processes holding the device nodes", done: NOTHING_CHANGED });
    if (now > deadline) {
      throw deadlineError(deadline - started, `${counted.processes} of ${pids.length} processes, ${counted.descriptors} descriptors looked at`);
    }
    await new Promise((r) => setImmediate(r));
    sliceStart = performance.now();
  };
  for (const pid of pids) {
    if (pid === self) continue;
    await maybeYield();
    counted.processes++;
    const base = `${proc}/${pid}`;
    let ns: NamespaceMounts | undefined;
    for (const fd of tryRead(() => readdirSync(`${base}/fd`)) ?? []) {
      if ((++counted.descriptors & 7) === 0) await maybeYield();
      const link = `${base}/fd/${fd}`;
      const text = readlink(link);
      if (text === null || NOT_A_FILE.test(text)) continue;
      ns ??= namespaceOf(base);
      if (ns.waitMountPoints.length && ns.waitMountPoints.some((mp) => text === mp || text.startsWith(`${mp}/`))) {
        counted.skipped++;
        continue;
      }
      counted.stats++;
      const dev = blockDevOf(link);
      if (!dev || !wanted.has(dev)) continue;
      const flags = /^flags:\s*([0-7]+)/m.exec(tryRead(() => readFileSync(`${base}/fdinfo/${fd}`, "utf8")) ?? "")?.[1];
      note(pid, dev, flags === undefined ? "read-write" : accessOf(parseInt(flags, 8)));
    }
    const maps = tryRead(() => readFileSync(`${base}/maps`, "utf8")) ?? "";
    for (const line of maps.split("\n")) {
      // start-end perms offset dev(hex major:minor) inode [path]
      const f = line.split(/\s+/, 6);
      if (f.length < 5 || f[4] === "0") continue;
      const key = `${f[3]} ${f[4]}`;
      let dev = mapped.get(key);
      if (dev === undefined) {
        ns ??= namespaceOf(base);
        const [major, minor] = f[3].split(":").map((x) => parseInt(x, 16));
        if (ns.waitDevices.has(`${major}:${minor}`)) {
          counted.skipped++;
          continue;
        }
        counted.stats++;
        dev = blockDevOf(`${base}/map_files/${f[0]}`);
        if (dev !== undefined) mapped.set(key, dev); // a mapping gone meanwhile says nothing about the file
      }
      if (dev && wanted.has(dev)) note(pid, dev, "mapped");
    }
  }
  return sorted(found.values());
}
