/**
 * Mounts of a device in every mount namespace the host shows, with each namespace's table
 * remembered until the kernel's listing of its mounts says it changed.
 *
 * Each call lists the processes (/proc) and reads each one's namespace link (/proc/<pid>/ns/mnt,
 * synchronously: procfs answers from memory and takes no filesystem lock), one process per namespace
 * — the lowest pid. For each namespace the kernel lists its mount ids (mount-ids.ts: never reused,
 * so the same ids are the same mounts). A namespace whose ids are the ones remembered is not read
 * again: only the set of device numbers its table mounts is kept, and when the asked device is not
 * in it, it has no mount of that device. Otherwise (new, changed, or the device is in the set: its
 * mount points are then read fresh, to name them) its /proc/<pid>/mountinfo is read, after the ids
 * were listed — so the answer is as fresh as reading every table on every call.
 *
 * So a call costs one readdir of /proc, one readlink per process, one listmount per namespace
 * (~20 µs for a container-sized table) and one mountinfo read per namespace that changed. Where the
 * kernel's task listing can be had (kernel-task-listing.ts), the readdir and the readlinks are one
 * walk inside the kernel instead (one 16-byte record per process).
 *
 * Nothing is held open between calls: a remembered namespace is known by its id, not by a
 * descriptor (an open mountinfo or nsfs descriptor would keep the namespace, and every mount in it,
 * alive after its last process exits). Memory: per namespace seen at the last call, its mount ids
 * (8 bytes per mount) and device set; namespaces not seen at a call are forgotten. Without listmount
 * (kernels before 6.11, no koffi) every table is read on every call.
 */
import { readFile } from "node:fs/promises";
import { readdirSync, readlinkSync } from "node:fs";
import { openMountIdSource, type MountIdSource } from "./mount-ids.ts";
import { unescapeOctal } from "../kernel/mountinfo.ts";
import { openKernelTaskListing } from "../kernel/kernel-task-listing.ts";
import { callSignal } from "../../../util/call-scope.ts";
import { NOTHING_CHANGED, stopIfAborted } from "../../../util/stop-if-aborted.ts";

export interface NamespaceMount {
  pid: number;
  mountPoint: string;
  /** The mount's id in mountinfo (unique across namespaces). */
  mountId: number;
}

export interface NamespaceMountsOptions {
  procRoot?: string;
  /** Where mount ids come from; default the kernel's (mount-ids.ts); null: none, read every table. */
  ids?: () => Promise<MountIdSource | null>;
  /** Reads run this many at a time (each holds a libuv pool thread). */
  concurrency?: number;
  /**
   * Each process's namespace link text by pid, listed by the kernel in one walk (kernel-task-listing.ts),
   * or null: one readlink of /proc/<pid>/ns/mnt per process. Default: the kernel's listing where it can
   * be had and `procRoot` is not given.
   */
  processNamespaces?: () => Promise<Map<number, string> | null>;
}

export interface NamespaceMounts {
  /** Mounts of device `major:minor` in every namespace (this process's too), ordered by pid then mountinfo order. */
  mountsOf(major: number, minor: number): Promise<NamespaceMount[]>;
  /** Namespaces whose table is remembered right now. */
  rememberedNamespaces(): number;
  /** Tables read by the last call (for tests and the benchmark). */
  lastReads(): number;
}

interface Remembered {
  nsId: bigint;
  ids: Buffer;
  /** Device numbers ("major:minor") the table mounted when `ids` were listed (or later). */
  devices: Set<string>;
}

/** The third field (the device) of each mountinfo line. */
function devicesOf(text: string): Set<string> {
  const out = new Set<string>();
  for (let start = 0; start < text.length; ) {
    let end = text.indexOf("\n", start);
    if (end < 0) end = text.length;
    const a = text.indexOf(" ", start);
    const b = a < 0 ? -1 : text.indexOf(" ", a + 1);
    const c = b < 0 ? -1 : text.indexOf(" ", b + 1);
    if (c > 0 && c < end) out.add(text.slice(b + 1, c));
    start = end + 1;
  }
  return out;
}

/** Mounts (mount point, mount id) of `device` in mountinfo text, in table order. */
function mountPointsOf(text: string, device: string): { mountPoint: string; mountId: number }[] {
  const out: { mountPoint: string; mountId: number }[] = [];
  const needle = ` ${device} `;
  for (let at = text.indexOf(needle); at >= 0; ) {
    const lineStart = text.lastIndexOf("\n", at) + 1;
    let lineEnd = text.indexOf("\n", at);
    if (lineEnd < 0) lineEnd = text.length;
    const fields = text.slice(lineStart, lineEnd).split(" ");
    if (fields[2] === device && fields.length > 4) out.push({ mountPoint: unescapeOctal(fields[4]), mountId: Number(fields[0]) });
    at = text.indexOf(needle, lineEnd);
  }
  return out;
}

export function createNamespaceMounts(options: NamespaceMountsOptions = {}): NamespaceMounts {
  const procRoot = options.procRoot ?? "/proc";
  const concurrency = options.concurrency ?? 8;
  // Opened on the first scan, not here: the default source loads koffi and libc, which the daemon's
  // start-up must not wait for (the hosts are built before the endpoints listen).
  let source: Promise<MountIdSource | null> | undefined;
  const idSource = () => (source ??= (options.ids ?? openMountIdSource)().catch(() => null));
  const processNamespaces =
    options.processNamespaces ?? (options.procRoot !== undefined ? async () => null : async () => (await openKernelTaskListing())?.mountNamespaces() ?? null);
  let remembered = new Map<string, Remembered>();
  let reads = 0;
  let queue: Promise<unknown> = Promise.resolve();

  const nsOf = (pid: number) => {
    try {
      return readlinkSync(`${procRoot}/${pid}/ns/mnt`);
    } catch {
      return null;
    }
  };

  async function scan(device: string): Promise<NamespaceMount[]> {
    const ids = await idSource();
    const listed = await processNamespaces().catch(() => null);
    const pids = (listed ? [...listed.keys()] : readdirSync(procRoot).filter((n) => /^[1-9]\d*$/.test(n)).map(Number)).sort((a, b) => a - b);
    const first = new Map<string, number>();
    for (const pid of pids) {
      const ns = listed ? listed.get(pid)! : nsOf(pid);
      if (ns !== null && !first.has(ns)) first.set(ns, pid);
    }
    const before = remembered;
    const now = new Map<string, Remembered>();
    const found = new Map<number, { mountPoint: string; mountId: number }[]>();
    // Synchronously first: which namespaces must be read (new, changed, or mounting the device).
    const toRead: { ns: string; pid: number; listed: { nsId: bigint; ids: Buffer } | null }[] = [];
    for (const [ns, pid] of first) {
      let listed: { nsId: bigint; ids: Buffer } | null = null;
      if (ids) {
        const known = before.get(ns);
        // A remembered id lists that namespace whichever process is in it now; one that lists
        // nothing is gone (and its link's inode reused): looked up again below.
        const again = known ? ids.mountIds(known.nsId) : null;
        if (known && again) {
          listed = { nsId: known.nsId, ids: again };
          if (known.ids.equals(again)) {
            now.set(ns, known);
            if (!known.devices.has(device)) continue;
            // Mounted there: read it now to name the mount points.
          }
        } else {
          const nsId = ids.namespaceId(pid);
          const current = nsId === null ? null : ids.mountIds(nsId);
          // The id must be of the namespace the link named (the process may have moved or exited meanwhile).
          if (nsId !== null && current !== null && nsOf(pid) === ns) listed = { nsId, ids: current };
        }
      }
      toRead.push({ ns, pid, listed });
    }
    reads = toRead.length;
    const work = toRead.map(({ ns, pid, listed }) => async () => {
      const text = await readFile(`${procRoot}/${pid}/mountinfo`, "utf8").catch(() => null);
      // The process exited or moved meanwhile: this read says nothing of `ns`.
      if (text === null || nsOf(pid) !== ns) {
        now.delete(ns);
        return;
      }
      if (listed) now.set(ns, { ...listed, devices: devicesOf(text) });
      const points = mountPointsOf(text, device);
      if (points.length) found.set(pid, points);
    });
    let next = 0;
    const signal = callSignal();
    const runner = async () => {
      // An aborted call reads no more tables (what was read is not remembered: `remembered` is kept).
      while (next < work.length) {
        stopIfAborted(signal, { before: "reading the rest of the mount namespaces' tables", done: NOTHING_CHANGED });
        await work[next++]();
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, work.length) }, runner));
    remembered = now;
    return [...found].sort((a, b) => a[0] - b[0]).flatMap(([pid, points]) => points.map((m) => ({ pid, ...m })));
  }

  return {
    mountsOf(major, minor) {
      const run = queue.then(() => scan(`${major}:${minor}`));
      queue = run.catch(() => {});
      return run;
    },
    rememberedNamespaces: () => remembered.size,
    lastReads: () => reads,
  };
}
