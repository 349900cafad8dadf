/**
 * Which processes hold a block device node open or mapped, as fuser(1) finds them: every process's
 * descriptors (/proc/<pid>/fd) and file mappings (/proc/<pid>/map_files), matched by the st_rdev of
 * the file they refer to — whatever path or mount namespace the process opened it through. Users of
 * files on a filesystem mounted from the device are not openers of its node (the mount holds it
 * inside the kernel), and neither are the kernel's own holders (dm, md, loop): those are other facts.
 *
 * Cost, bounded by what the host runs (docs/performance.md "Opener scan"): one readdir of /proc;
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
import { parseMountInfo } from "./mountinfo.ts";
import { Code, CsiProxyError } from "../../errors.ts";
import { loadKoffi } from "../../win32/native.ts";


export interface OpenerScanOptions {
  /** Where procfs is (tests); default /proc. */
  procRoot?: string;
  /** A process never reported (the daemon itself); default this process. */
  selfPid?: number;
  /** Only these processes (a re-check of earlier findings); default every process. */
  pids?: readonly number[];
  /** The scan gives up (Unavailable) after this long, not having looked at every process; default {@link SCAN_DEADLINE_MS}. */
  deadlineMs?: number;
}

/** How long one scan may take before it gives up: far above the measured worst case (docs/performance.md "Opener scan"). */
export const SCAN_DEADLINE_MS = 60_000;

/** What one scan looked at (for the cost figures). */
export interface OpenerScanStats {
  processes: number;
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
  const proc = options.procRoot ?? "/proc";
  const self = options.selfPid ?? process.pid;
  const wanted = new Set(devs.map((d) => `${d.major}:${d.minor}`));
  const counted: OpenerScanStats = stats ?? { processes: 0, descriptors: 0, stats: 0, skipped: 0 };
  if (wanted.size === 0) return [];
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
  const rank = { mapped: 0, read: 1, "read-write": 2 } as const;
  const found = new Map<string, DeviceOpener>();
  const note = (pid: number, dev: string, access: DeviceOpener["access"]) => {
    const key = `${pid} ${dev}`;
    const had = found.get(key);
    if (had && rank[had.access] >= rank[access]) return;
    const [major, minor] = dev.split(":").map(Number);
    found.set(key, { pid, command: had?.command ?? commandOf(`${proc}/${pid}`), dev: { major, minor }, access });
  };

  const started = performance.now();
  const deadline = started + (options.deadlineMs ?? SCAN_DEADLINE_MS);
  let sliceStart = started;
  const maybeYield = async () => {
    const now = performance.now();
    if (now - sliceStart < SLICE_MS) return;
    if (now > deadline) {
      throw new CsiProxyError(Code.Unavailable, `looking for processes holding the device nodes took longer than ${Math.round(deadline - started)} ms (${counted.processes} of ${pids.length} processes, ${counted.descriptors} descriptors looked at); not knowing, csi-proxy does not change the device`);
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
      note(pid, dev, flags !== undefined && (parseInt(flags, 8) & 3) === 0 ? "read" : "read-write");
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
  return [...found.values()].sort((a, b) => a.pid - b.pid || a.dev.major - b.dev.major || a.dev.minor - b.dev.minor);
}
