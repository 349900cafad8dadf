/**
 * Facts about every process, listed by the kernel itself through BPF iterator programs, instead of a
 * walk of /proc with a syscall per process and per descriptor:
 *
 * - {@link KernelTaskListing.blockFiles}: block device nodes every process holds open or mapped (a
 *   task_file iterator: every open file of every process; a task_vma iterator: every mapping), one
 *   16-byte record per file whose inode is a block device node — pid (tgid), descriptor (0xffffffff
 *   for a mapping), the node's device number, the file's open flags. The same facts as fuser's walk
 *   of /proc/<pid>/fd and /proc/<pid>/map_files with a stat of each (the node's st_rdev).
 * - {@link KernelTaskListing.mountNamespaces}: each process's mount namespace (a task iterator: pid
 *   and the namespace's inode number, what /proc/<pid>/ns/mnt's link text `mnt:[inode]` names).
 *
 * The walks happen inside the kernel and read only in-memory structures (never a filesystem, so a
 * dead NFS server or a hung FUSE daemon cannot make them wait).
 *
 * Available when: Linux with BTF (/sys/kernel/btf/vmlinux), the task_vma iterator (5.12+), the
 * privilege to load tracing programs (CAP_BPF + CAP_PERFMON, or CAP_SYS_ADMIN), not locked down, and
 * this process in the initial PID namespace (the records carry the kernel's global pids, which are
 * the /proc pids only there). {@link openKernelTaskListing} resolves null otherwise, and the callers
 * walk /proc instead (device-openers.ts, namespace-mounts.ts).
 *
 * Owned resources, opened on first use and kept until {@link closeKernelTaskListing} (the daemon's
 * stop): three iterator links (3 descriptors; each holds its loaded program). Each listing creates a
 * fresh iterator descriptor per walk, reads it to its end and closes it: what is kept is the program,
 * never a walk's result. The file and mapping walks run at once, each read(2) on a libuv pool thread
 * (never blocked: in-memory walks; ungated work, which the mount gate keeps a quarter of the pool for,
 * src/host/mount-gate.ts).
 * Cost: the kernel's walk over every task's file table and mappings (~0.1 µs per descriptor, ~0.2 µs
 * per mapping on this machine at load ~10; docs/performance.md "Block operations"), the record copy for
 * block device files only; one record per process for the namespaces (~1 µs per process in all).
 * The first use also reads the kernel's BTF (kernel-btf.ts) for the structure offsets (0.1–0.3 s, once).
 */
import { closeSync, read, readlinkSync } from "node:fs";
import { loadKoffi, type Koffi } from "../../../util/koffi-loader.ts";
import { readKernelBtf, KIND_FUNC } from "./kernel-btf.ts";
import { fileProgram, RECORD_BYTES, taskProgram, vmaProgram, type Offsets } from "./bpf-programs.ts";

/** One open or mapped block device node. */
export interface BlockFileRecord {
  pid: number;
  /** The descriptor number; -1 for a mapping. */
  fd: number;
  major: number;
  minor: number;
  /** The file's open flags (O_ACCMODE in the low two bits), 0 for a mapping. */
  flags: number;
}

export interface KernelTaskListing {
  /**
   * Every open or mapped block device file, as of one walk of the kernel's tasks. `beforeRead` runs
   * before each read(2) (one read covers at most 16 × 4 096 files or mappings, ~5–20 ms of kernel
   * time, on a pool thread): it may throw to stop the listing.
   */
  blockFiles(beforeRead?: () => Promise<void>): Promise<BlockFileRecord[]>;
  /** Each process's (thread group leader's) mount namespace as /proc/<pid>/ns/mnt names it (`mnt:[inode]`), by pid; exiting processes are left out. */
  mountNamespaces(): Promise<Map<number, string>>;
  /** Waits for the listings under way, then closes the iterator links (and with them the programs). Later listings reject. Idempotent. */
  close(): Promise<void>;
}

const SYS_BPF: Record<string, number> = { x64: 321, arm64: 280 };
const BPF_PROG_LOAD = 5;
const BPF_LINK_CREATE = 28;
const BPF_ITER_CREATE = 33;
const BPF_PROG_TYPE_TRACING = 26;
const BPF_TRACE_ITER = 28;
/** The initial PID namespace's inode number (PROC_PID_INIT_INO). */
const INIT_PID_NS = "pid:[4026531836]";
/** BPF_PROG_LOAD attempts when the verifier was interrupted by a signal (EAGAIN). */
const PROG_LOAD_ATTEMPTS = 20;

/**
 * Bytes asked for per read(2) of a block-file walk: 16 records, so a read returns after at most 16
 * ticks (65 536 objects, ~5–20 ms of kernel time) and the scan's deadline is looked at in between;
 * a handful of reads for a node of 2 000 processes × 50 descriptors.
 */
const READ_BYTES = 16 * RECORD_BYTES;

type Syscall = (nr: number, ...args: unknown[]) => number | bigint;

/** read(2) of `fd` into `buf` on libuv's thread pool. */
const readAsync = (fd: number, buf: Buffer) =>
  new Promise<number>((resolve, reject) => read(fd, buf, 0, buf.length, null, (err, n) => (err ? reject(err) : resolve(n))));

function bpfCall(koffi: Koffi, syscall: Syscall, cmd: number, attr: Buffer): number {
  const r = Number(syscall(SYS_BPF[process.arch], "int", cmd, "void *", attr, "unsigned int", attr.length));
  if (r < 0) {
    const errno = koffi.errno();
    const name = Object.entries(koffi.os.errno).find(([, n]) => n === errno)?.[0] ?? `E${errno}`;
    throw Object.assign(new Error(`bpf(${cmd}): ${name}`), { code: name, errno });
  }
  return r;
}

let sigmask: ((how: number, set: Buffer, old: Buffer) => number) | undefined;
/** Runs `fn` with every blockable signal blocked on this thread (pthread_sigmask), the mask restored after. */
function withSignalsHeld<T>(koffi: Koffi, fn: () => T): T {
  sigmask ??= koffi.load("libc.so.6").func("int pthread_sigmask(int how, const void *set, void *old)") as unknown as (how: number, set: Buffer, old: Buffer) => number;
  const all = Buffer.alloc(128, 0xff);
  const old = Buffer.alloc(128);
  const SIG_BLOCK = 0;
  const SIG_SETMASK = 2;
  if (sigmask(SIG_BLOCK, all, old) !== 0) return fn();
  try {
    return fn();
  } finally {
    sigmask(SIG_SETMASK, old, Buffer.alloc(128));
  }
}

function loadIterator(koffi: Koffi, syscall: Syscall, program: Buffer, btfId: number): number {
  const license = Buffer.from("GPL\0");
  const log = Buffer.alloc(64 * 1024);
  const attr = Buffer.alloc(128);
  attr.writeUInt32LE(BPF_PROG_TYPE_TRACING, 0);
  attr.writeUInt32LE(program.length / 8, 4);
  attr.writeBigUInt64LE(koffi.address(program), 8);
  attr.writeBigUInt64LE(koffi.address(license), 16);
  attr.writeUInt32LE(1, 24); // log_level
  attr.writeUInt32LE(log.length, 28);
  attr.writeBigUInt64LE(koffi.address(log), 32);
  attr.write("csi_openers", 48, "latin1");
  attr.writeUInt32LE(BPF_TRACE_ITER, 68); // expected_attach_type
  attr.writeUInt32LE(btfId, 108); // attach_btf_id
  let prog: number;
  try {
    // The verifier gives up with EAGAIN when a signal is pending (a profiler's SIGPROF, a child's
    // SIGCHLD): signals are held back on this thread during the load (delivered right after), and
    // an EAGAIN all the same is tried again, as libbpf does.
    for (let attempt = 1; ; attempt++) {
      try {
        prog = withSignalsHeld(koffi, () => bpfCall(koffi, syscall, BPF_PROG_LOAD, attr));
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== "EAGAIN" || attempt >= PROG_LOAD_ATTEMPTS) throw err;
      }
    }
  } catch (err) {
    const text = log.toString("utf8", 0, Math.max(0, log.indexOf(0))).trim().split("\n").slice(-3).join("; ");
    throw new Error(`${(err as Error).message}${text ? ` (verifier: ${text})` : ""}`, { cause: err });
  } finally {
    void [license, log, program]; // kept alive across the call
  }
  try {
    const link = Buffer.alloc(32);
    link.writeUInt32LE(prog, 0);
    link.writeUInt32LE(BPF_TRACE_ITER, 8);
    return bpfCall(koffi, syscall, BPF_LINK_CREATE, link);
  } finally {
    closeSync(prog); // the link holds the program
  }
}

async function open(): Promise<KernelTaskListing> {
  if (process.platform !== "linux" || !(process.arch in SYS_BPF)) throw new Error("not Linux x64/arm64");
  if (readlinkSync("/proc/self/ns/pid") !== INIT_PID_NS) throw new Error("not in the initial PID namespace");
  const koffi = await loadKoffi();
  const syscall = koffi.load("libc.so.6").func("long syscall(long number, ...)") as unknown as Syscall;
  const btf = readKernelBtf();
  const need = (s: string, m: string) => {
    const found = btf.memberOffset(s, m);
    if (!found) throw new Error(`kernel BTF has no ${s}.${m}`);
    return found;
  };
  const o: Offsets = {
    ctxMeta: need("bpf_iter__task_file", "meta").offset,
    ctxTask: need("bpf_iter__task_file", "task").offset,
    ctxFd: need("bpf_iter__task_file", "fd").offset,
    ctxFile: need("bpf_iter__task_file", "file").offset,
    ctxVma: need("bpf_iter__task_vma", "vma").offset,
    metaSeq: need("bpf_iter_meta", "seq").offset,
    metaSeqNum: need("bpf_iter_meta", "seq_num").offset,
    fileInode: need("file", "f_inode"),
    fileFlags: need("file", "f_flags"),
    inodeMode: need("inode", "i_mode"),
    inodeRdev: need("inode", "i_rdev"),
    taskTgid: need("task_struct", "tgid"),
    taskPid: need("task_struct", "pid"),
    taskNsproxy: need("task_struct", "nsproxy"),
    nsproxyMntNs: need("nsproxy", "mnt_ns"),
    mntNsInum: (() => {
      const ns = need("mnt_namespace", "ns");
      const inum = need("ns_common", "inum");
      return { offset: ns.offset + inum.offset, size: inum.size };
    })(),
    vmaFile: need("vm_area_struct", "vm_file"),
  };
  for (const ctx of ["bpf_iter__task_vma", "bpf_iter__task"]) {
    if (need(ctx, "task").offset !== o.ctxTask || need(ctx, "meta").offset !== o.ctxMeta) throw new Error(`unexpected ${ctx} context`);
  }
  const fnId = (n: string) => {
    const id = btf.typeId(n, KIND_FUNC);
    if (id === undefined) throw new Error(`kernel has no ${n}`);
    return id;
  };
  const links: number[] = [];
  try {
    links.push(loadIterator(koffi, syscall, fileProgram(o), fnId("bpf_iter_task_file")));
    links.push(loadIterator(koffi, syscall, vmaProgram(o), fnId("bpf_iter_task_vma")));
    links.push(loadIterator(koffi, syscall, taskProgram(o), fnId("bpf_iter_task")));
  } catch (err) {
    for (const l of links) closeSync(l);
    throw err;
  }
  const [fileIter, vmaIter, taskIter] = links;
  /** Iterations under way: {@link KernelTaskListing.close} waits for them before it closes the links. */
  const active = new Set<Promise<void>>();
  let closed = false;
  /**
   * Reads iterator `link` to its end, `readBytes` at a time, on libuv's thread pool (one read(2) at a
   * time per iteration; the event loop stays free, and two iterations walk on two threads at once).
   */
  const iterate = (link: number, out: BlockFileRecord[], readBytes: number, beforeRead?: () => Promise<void>): Promise<void> => {
    if (closed) return Promise.reject(new Error("the kernel's task listing was closed"));
    const run = (async () => {
      const createAttr = Buffer.alloc(8);
      createAttr.writeUInt32LE(link, 0);
      const fd = bpfCall(koffi, syscall, BPF_ITER_CREATE, createAttr);
      const buf = Buffer.alloc(readBytes);
      try {
        let pending = Buffer.alloc(0);
        for (let again = 0; ; ) {
          await beforeRead?.();
          let n: number;
          try {
            n = await readAsync(fd, buf);
          } catch (err) {
            // A million objects without a record: read on (a thousand times that is no node's size).
            if ((err as NodeJS.ErrnoException).code === "EAGAIN" && ++again < 1000) continue;
            throw err;
          }
          if (n === 0) break;
          const data = pending.length ? Buffer.concat([pending, buf.subarray(0, n)]) : buf.subarray(0, n);
          const whole = data.length - (data.length % RECORD_BYTES);
          for (let p = 0; p < whole; p += RECORD_BYTES) {
            const pid = data.readUInt32LE(p);
            if (pid === 0) continue; // a tick
            const rdev = data.readUInt32LE(p + 8);
            out.push({ pid, fd: data.readInt32LE(p + 4), major: rdev >>> 20, minor: rdev & 0xfffff, flags: data.readUInt32LE(p + 12) });
          }
          pending = Buffer.from(data.subarray(whole));
        }
      } finally {
        closeSync(fd);
      }
    })();
    active.add(run);
    void run.then(
      () => active.delete(run),
      () => active.delete(run),
    );
    return run;
  };
  const listing: KernelTaskListing = {
    async blockFiles(beforeRead) {
      const files: BlockFileRecord[] = [];
      const mappings: BlockFileRecord[] = [];
      // Both walks at once: each on its own pool thread (and core).
      await Promise.all([iterate(fileIter, files, READ_BYTES, beforeRead), iterate(vmaIter, mappings, READ_BYTES, beforeRead)]);
      return files.concat(mappings);
    },
    async mountNamespaces() {
      const out: BlockFileRecord[] = [];
      await iterate(taskIter, out, 64 * 1024);
      // The record's device field carries the inode number; undo its major/minor split.
      return new Map(out.map((r) => [r.pid, `mnt:[${r.major * 0x100000 + r.minor}]`]));
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([...active]);
      for (const l of links) closeSync(l);
    },
  };
  // Offsets read from the wrong place would list wrong facts silently: this process's own entry must
  // be what /proc says (pid, tgid, nsproxy and the namespace's inode read right).
  const own = (await listing.mountNamespaces()).get(process.pid);
  if (own !== readlinkSync("/proc/self/ns/mnt")) {
    await listing.close();
    throw new Error(`the kernel's task listing names this process's mount namespace ${own ?? "(none)"}, /proc says ${readlinkSync("/proc/self/ns/mnt")}`);
  }
  return listing;
}

let opening: Promise<KernelTaskListing | null> | undefined;
let why: string | undefined;

/**
 * The kernel's listings, opened at the first use after start (or after {@link closeKernelTaskListing})
 * and shared by every caller in the process until closed; null where they cannot be had
 * ({@link kernelListingUnavailableReason} says why; not tried again until closed).
 */
export function openKernelTaskListing(): Promise<KernelTaskListing | null> {
  opening ??= open().catch((err: Error) => {
    why = err.message;
    return null;
  });
  return opening;
}

/**
 * Closes the shared listing (its three links and programs; the daemon's stop calls it): listings
 * under way finish first. The next {@link openKernelTaskListing} opens a new one. Idempotent.
 */
export async function closeKernelTaskListing(): Promise<void> {
  const was = opening;
  opening = undefined;
  why = undefined;
  await (await was)?.close();
}

/** Why the kernel's listings are not used (after {@link openKernelTaskListing} resolved null). */
export const kernelListingUnavailableReason = () => why;
