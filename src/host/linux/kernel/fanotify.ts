/**
 * fanotify(7) on block device nodes, through koffi: which processes wrote a device node (FAN_MODIFY)
 * or closed it after opening it for writing (FAN_CLOSE_WRITE) while a watch was up. The kernel
 * reports the writer's pid (its thread group id, in this process's PID namespace) in each event.
 *
 * Notification class only (FAN_CLASS_NOTIF): nothing is ever blocked or asked for permission. The
 * group is non-blocking (FAN_NONBLOCK): {@link FanotifyWatch.drain} reads what is queued and returns
 * at once, never waiting (a read of an empty queue answers EAGAIN), so polling it from the event loop
 * never holds the loop for longer than copying the queued events. Events are reported with file
 * identifiers (FAN_REPORT_FID, Linux ≥ 5.1) where the device nodes' filesystem supports them, so the
 * kernel opens nothing; elsewhere each event carries a descriptor the kernel opened read-only on the
 * node, closed here as it is read.
 *
 * What the kernel merges: consecutive identical events of one pid on one node are one event, so the
 * queue (16 384 events by default) grows per writer, not per write. A full queue drops events and
 * queues one FAN_Q_OVERFLOW: reported as `overflowed`, never as "no writer".
 *
 * Needs CAP_SYS_ADMIN in effect: since Linux 5.13 an unprivileged group can be had (file identifiers,
 * inode marks), but its events carry pid 0 for every other process, so the tool's own writes could
 * not be told from anyone else's. Without it {@link openFanotify} rejects with code EPERM before
 * asking the kernel; on a kernel without fanotify with the errno name (ENOSYS, …). The caller says
 * what it watched instead.
 */
import { readFileSync } from "node:fs";
import { loadKoffi } from "../../../util/koffi-loader.ts";

/** CAP_SYS_ADMIN's bit in /proc/self/status CapEff. */
const CAP_SYS_ADMIN = 21n;

/** Whether this process has CAP_SYS_ADMIN in effect (/proc/self/status; false when it cannot be read). */
function hasSysAdmin(): boolean {
  try {
    const hex = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync("/proc/self/status", "latin1"))?.[1];
    return hex !== undefined && ((BigInt(`0x${hex}`) >> CAP_SYS_ADMIN) & 1n) === 1n;
  } catch {
    return false;
  }
}

const FAN_CLOEXEC = 0x1;
const FAN_NONBLOCK = 0x2;
const FAN_CLASS_NOTIF = 0x0;
const FAN_REPORT_FID = 0x200;
const FAN_MARK_ADD = 0x1;
/** A write through the node (vfs_write and friends). */
export const FAN_MODIFY = 0x2;
/** The last close of a file opened for writing. */
export const FAN_CLOSE_WRITE = 0x8;
const FAN_Q_OVERFLOW = 0x4000;
const O_RDONLY = 0;
const O_CLOEXEC = 0o2000000;
const AT_FDCWD = -100;
const EAGAIN = 11;
/** sizeof(struct fanotify_event_metadata): event_len u32, vers u8, reserved u8, metadata_len u16, mask u64, fd s32, pid s32. */
const METADATA_LEN = 24;
/** Bytes read per read(2): up to ~170 events; drain reads until the queue is empty. */
const READ_BYTES = 4096;

/** One event as read: who, what (FAN_MODIFY / FAN_CLOSE_WRITE bits). */
export interface FanotifyEvent {
  pid: number;
  mask: number;
}

export interface FanotifyWatch {
  /** How events identify the node: "fid" (the kernel opens nothing) or "fd" (a descriptor per event, closed here). */
  readonly mode: "fid" | "fd";
  /** Every event queued since the last drain; never waits. */
  drain(): FanotifyEvent[];
  /** True once the kernel dropped events (queue overflow): the watch can no longer say "no writer". */
  readonly overflowed: boolean;
  /** Closes the group (the marks go with it). Idempotent. */
  close(): void;
}

interface Calls {
  init: (flags: number, eventFlags: number) => number;
  mark: (fd: number, flags: number, mask: bigint, dirfd: number, path: string) => number;
  read: (fd: number, buf: Buffer, n: number) => number;
  close: (fd: number) => number;
  errno: () => number;
  errnoName: (n: number) => string;
}

let loading: Promise<Calls> | undefined;

function calls(): Promise<Calls> {
  loading ??= (async () => {
    const koffi = await loadKoffi();
    const libc = koffi.load("libc.so.6");
    const names = new Map(Object.entries(koffi.os.errno).map(([k, v]) => [v as number, k]));
    return {
      init: libc.func("int fanotify_init(unsigned int flags, unsigned int event_f_flags)") as unknown as Calls["init"],
      mark: libc.func("int fanotify_mark(int fd, unsigned int flags, uint64_t mask, int dirfd, const char *path)") as unknown as Calls["mark"],
      read: libc.func("long read(int fd, void *buf, unsigned long count)") as unknown as Calls["read"],
      close: libc.func("int close(int fd)") as unknown as Calls["close"],
      errno: () => koffi.errno(),
      errnoName: (n) => names.get(n) ?? `E${n}`,
    };
  })();
  return loading;
}

function errnoError(c: Calls, call: string, what: string): NodeJS.ErrnoException {
  const errno = c.errno();
  const name = c.errnoName(errno);
  return Object.assign(new Error(`${call}${what ? ` ${what}` : ""}: ${name}`), { code: name, errno, syscall: call });
}

/** A group with `nodes` marked for `mask`; FID reporting where the nodes' filesystem has it, else descriptors. */
async function open(c: Calls, nodes: readonly string[], mask: number, fid: boolean): Promise<FanotifyWatch> {
  const fd = c.init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | (fid ? FAN_REPORT_FID : 0), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw errnoError(c, "fanotify_init", "");
  for (const node of nodes) {
    if (c.mark(fd, FAN_MARK_ADD, BigInt(mask), AT_FDCWD, node) !== 0) {
      const err = errnoError(c, "fanotify_mark", node);
      c.close(fd);
      throw err;
    }
  }
  const buf = Buffer.alloc(READ_BYTES);
  let closed = false;
  let overflowed = false;
  return {
    mode: fid ? "fid" : "fd",
    get overflowed() {
      return overflowed;
    },
    drain() {
      const events: FanotifyEvent[] = [];
      while (!closed) {
        const n = c.read(fd, buf, buf.length);
        if (n < 0) {
          const errno = c.errno();
          if (errno === EAGAIN) break;
          throw Object.assign(new Error(`read of the fanotify group: ${c.errnoName(errno)}`), { code: c.errnoName(errno), errno });
        }
        if (n === 0) break;
        for (let at = 0; at + METADATA_LEN <= n; ) {
          const len = buf.readUInt32LE(at);
          if (len < METADATA_LEN) break; // malformed: never loop on it
          const m = Number(buf.readBigUInt64LE(at + 8));
          const eventFd = buf.readInt32LE(at + 16);
          const pid = buf.readInt32LE(at + 20);
          if (eventFd >= 0) c.close(eventFd);
          if (m & FAN_Q_OVERFLOW) overflowed = true;
          else events.push({ pid, mask: m });
          at += len;
        }
      }
      return events;
    },
    close() {
      if (closed) return;
      closed = true;
      c.close(fd);
    },
  };
}

/**
 * A fanotify group watching `nodes` (device node paths) for `mask`. Rejects with the errno (`code`)
 * when fanotify cannot be had (EPERM without CAP_SYS_ADMIN in effect, ENOSYS, EINVAL on old kernels).
 */
export async function openFanotify(nodes: readonly string[], mask: number = FAN_MODIFY | FAN_CLOSE_WRITE): Promise<FanotifyWatch> {
  if (!hasSysAdmin()) throw Object.assign(new Error("fanotify: no CAP_SYS_ADMIN in effect (the kernel would not name other processes)"), { code: "EPERM" });
  const c = await calls();
  try {
    return await open(c, nodes, mask, true);
  } catch (err) {
    // FAN_REPORT_FID needs file handles of the nodes' filesystem (and Linux ≥ 5.1): descriptors instead.
    if (!["EINVAL", "EOPNOTSUPP", "ENODEV", "EXDEV"].includes((err as NodeJS.ErrnoException).code ?? "")) throw err;
    return open(c, nodes, mask, false);
  }
}
