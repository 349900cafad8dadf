/**
 * This process's mount table, parsed once and re-read only after the kernel says it changed.
 *
 * How a change is seen: the kernel keeps a per-namespace event counter, raised inside every mount,
 * unmount, move or propagation that changes the namespace, before that system call returns. An open
 * /proc/self/mountinfo remembers the counter's value (set at open, updated by each poll(2)); poll
 * reports POLLPRI|POLLERR when they differ (proc(5), "/proc/pid/mountinfo": "a process can use
 * poll to learn of mount events"). poll with a zero timeout never sleeps and touches no filesystem,
 * so it is made synchronously on the event loop (koffi, ~1 µs) before each use of the cache.
 *
 * Contract of {@link createMountTableCache}'s `table()`:
 * - resolves with a table at least as new as every mount change that completed before the call
 *   (the probe is consumed first, then a new read is started, so a change between the probe and the
 *   read only makes the read newer); i.e. exactly as fresh as reading the file on every call;
 * - concurrent callers share one read; a failed read is not cached (the next call reads again, the
 *   failure reaches the callers of that read);
 * - without a probe (koffi or poll unavailable, open failed) every call reads the file; so does every
 *   call during the daemon's start-up (`readDirectly`, src/boot/start-up-phase.ts passed in by src/compose/linux.ts), before the probe is opened.
 *
 * Descriptor ownership: by default every cache watches through {@link processMountChangeProbe}, one
 * descriptor opened once per process and reachable from this module for the life of the process, so
 * it is never closed by garbage collection however many caches are made and dropped.
 */
import * as fs from "node:fs/promises";
import type { MountEntry } from "../kernel/mountinfo.ts";
import { readMountTable } from "../kernel/mountinfo.ts";
import { loadKoffi } from "../../../util/koffi-loader.ts";

/** Says whether the table may have changed since its previous call (or since it was opened). */
export interface MountChangeProbe {
  changed(): boolean;
  /** Closes the probe's descriptor; `changed` answers true from then on. Idempotent. */
  close?(): Promise<void>;
}

export interface MountTableCache {
  table(): Promise<readonly MountEntry[]>;
}

const POLLPRI = 0x2;
const POLLERR = 0x8;
const POLLHUP = 0x10;
const POLLNVAL = 0x20;

/**
 * A probe on a descriptor of /proc/self/mountinfo (O_CLOEXEC), held until `close()`: the caller owns
 * it and must close it or keep it reachable for the life of the process. Rejects when koffi or the file cannot be opened. Any poll failure counts as "changed".
 */
export async function openMountChangeProbe(file = "/proc/self/mountinfo"): Promise<MountChangeProbe> {
  const koffi = await loadKoffi();
  const poll = koffi.load("libc.so.6").func("int poll(void *fds, unsigned long nfds, int timeout)") as unknown as (fds: Buffer, n: number, timeout: number) => number;
  // The probe object owns the open file (its state lives there) until close(); the descriptor number
  // is copied into the pollfd only for the synchronous poll that uses it, never kept across an await.
  const handle = await fs.open(file, "r");
  let closing: Promise<void> | undefined;
  // struct pollfd { int fd; short events; short revents; }
  const pfd = Buffer.alloc(8);
  pfd.writeInt16LE(POLLPRI, 4);
  return {
    changed() {
      if (closing !== undefined || handle.fd < 0) return true;
      pfd.writeInt32LE(handle.fd, 0);
      pfd.writeInt16LE(0, 6);
      const n = poll(pfd, 1, 0);
      return n < 0 || (pfd.readInt16LE(6) & (POLLPRI | POLLERR | POLLHUP | POLLNVAL)) !== 0;
    },
    close() {
      closing ??= handle.close().catch(() => {});
      return closing;
    },
  };
}

/** Says whether the table changed since this probe's previous call (or since it was made). */
export interface MountChangeView {
  changed(): boolean;
}

/**
 * A source of independent change views over one probe: each view answers for its own previous call,
 * so a change consumed by one view is still reported to every other (a change counter is raised when
 * any view's poll sees the change; each view compares it with the value it last saw).
 */
export function shareMountChangeProbe(probe: MountChangeProbe): () => MountChangeView {
  let generation = 0;
  return () => {
    let seen = generation;
    return {
      changed() {
        if (probe.changed()) generation++;
        const changed = seen !== generation;
        seen = generation;
        return changed;
      },
    };
  };
}

let processViews: Promise<() => MountChangeView> | undefined;

/**
 * A view over this process's single /proc/self/mountinfo probe, opened on first use and never closed
 * (the process's exit closes it). Rejects, for this and every later call, when the probe cannot be opened.
 */
export function processMountChangeProbe(): Promise<MountChangeView> {
  processViews ??= openMountChangeProbe().then(shareMountChangeProbe);
  return processViews.then((view) => view());
}

/**
 * `readDirectly`: while it answers true (the daemon's start-up phase, passed in by the composition,
 * src/compose/linux.ts), each call reads the table itself and no probe is opened. Default: never.
 */
export function createMountTableCache(deps: { openProbe?: () => Promise<MountChangeView>; read?: () => Promise<MountEntry[]>; readDirectly?: () => boolean } = {}): MountTableCache {
  const read = deps.read ?? readMountTable;
  const readDirectly = deps.readDirectly ?? (() => false);
  const openProbe = deps.openProbe ?? processMountChangeProbe;
  let probe: MountChangeView | null | undefined;
  let opening: Promise<void> | undefined;
  let current: Promise<MountEntry[]> | undefined;
  return {
    async table() {
      // During the daemon's start-up (readDirectly) the file is read for this call
      // alone: the probe (koffi, libc) is opened by the first call after the endpoints listen.
      if (probe === undefined && opening === undefined && readDirectly()) return read();
      if (probe === undefined) {
        opening ??= openProbe().then(
          (p) => void (probe = p),
          () => void (probe = null),
        );
        await opening;
      }
      // The probe must be consumed before the read starts (never the other way round).
      if (probe === null || probe!.changed() || current === undefined) {
        const reading = read();
        current = reading;
        reading.catch(() => {
          if (current === reading) current = undefined;
        });
      }
      return current;
    },
  };
}
