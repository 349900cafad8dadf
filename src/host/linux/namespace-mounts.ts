/**
 * Mounts of a device in every mount namespace the host shows, with each other namespace's table
 * remembered until the kernel says it changed.
 *
 * Each call lists the processes (/proc) and reads each one's namespace link (/proc/<pid>/ns/mnt,
 * synchronously: procfs answers from memory and these reads take no filesystem lock), one process per
 * namespace — the lowest pid. A namespace seen for the first time gets a change probe (an open
 * /proc/<pid>/mountinfo polled for POLLPRI, as mount-table-cache.ts explains), then its table is
 * read once and only the set of device numbers it mounts is kept. Later calls poll the probe (~1 µs)
 * and re-read that table only when the kernel reported a change, or when the asked device is in the
 * set (then the mount points are read fresh, to name them). So a call costs one readdir, one
 * readlink per process, one poll per namespace and one read per namespace that changed; the answer is
 * as fresh as reading every table on every call (each probe is consumed before its read starts).
 *
 * Bounds and ownership: at most {@link NamespaceMountsOptions.maxProbes} probes (descriptors) are
 * held, owned by this object; namespaces beyond that are read on every call. An open mountinfo holds
 * a reference to its namespace, which keeps that namespace's mounts alive after its last process
 * exits; so a held probe is closed when its process is no longer in that namespace — checked at every
 * call and by a sweep every `sweepMs` (default 500 ms) while probes are held — and every probe is
 * closed `idleMs` (default 30 s) after the last call. Without koffi/poll nothing is cached.
 */
import { readFile } from "node:fs/promises";
import { readdirSync, readlinkSync } from "node:fs";
import { openMountChangeProbe, type MountChangeProbe } from "./mount-table-cache.ts";

export interface NamespaceMount {
  pid: number;
  mountPoint: string;
}

export interface NamespaceMountsOptions {
  procRoot?: string;
  /** Opens a change probe on a mountinfo file; default {@link openMountChangeProbe}. */
  openProbe?: (file: string) => Promise<MountChangeProbe>;
  maxProbes?: number;
  sweepMs?: number;
  idleMs?: number;
}

export interface NamespaceMounts {
  /** Mounts of device `major:minor` in every namespace (this process's too), ordered by pid then mountinfo order. */
  mountsOf(major: number, minor: number): Promise<NamespaceMount[]>;
  /** Namespaces whose table is remembered (a probe held) right now. */
  cachedNamespaces(): number;
  /** Closes every probe; later calls read every table. Idempotent. */
  close(): Promise<void>;
}

interface Cached {
  pid: number;
  probe: MountChangeProbe;
  /** Device numbers ("major:minor") the table mounts, as of its last read. */
  devices: Set<string>;
}

const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** The third field (the device) of each mountinfo line. */
function devicesOf(text: string): Set<string> {
  const out = new Set<string>();
  let start = 0;
  while (start < text.length) {
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

/** Mount points of `device` in mountinfo text. */
function mountPointsOf(text: string, device: string): string[] {
  const out: string[] = [];
  const needle = ` ${device} `;
  let at = text.indexOf(needle);
  while (at >= 0) {
    const lineStart = text.lastIndexOf("\n", at) + 1;
    let lineEnd = text.indexOf("\n", at);
    if (lineEnd < 0) lineEnd = text.length;
    const fields = text.slice(lineStart, lineEnd).split(" ");
    if (fields[2] === device && fields.length > 4) out.push(unescape(fields[4]));
    at = text.indexOf(needle, lineEnd);
  }
  return out;
}

export function createNamespaceMounts(options: NamespaceMountsOptions = {}): NamespaceMounts {
  const procRoot = options.procRoot ?? "/proc";
  const openProbe = options.openProbe ?? openMountChangeProbe;
  const maxProbes = options.maxProbes ?? 1024;
  const sweepMs = options.sweepMs ?? 500;
  const idleMs = options.idleMs ?? 30_000;
  const cache = new Map<string, Cached>();
  let probesBroken = false;
  let sweeper: NodeJS.Timeout | undefined;
  let lastCall = 0;
  let queue: Promise<unknown> = Promise.resolve();

  const nsOf = (pid: number) => {
    try {
      return readlinkSync(`${procRoot}/${pid}/ns/mnt`);
    } catch {
      return null;
    }
  };
  const drop = (ns: string) => {
    const c = cache.get(ns);
    if (!c) return;
    cache.delete(ns);
    void c.probe.close?.();
  };
  const stopSweeper = () => {
    if (sweeper) clearInterval(sweeper);
    sweeper = undefined;
  };
  const sweep = () => {
    if (performance.now() - lastCall >= idleMs) {
      for (const ns of [...cache.keys()]) drop(ns);
    } else {
      for (const [ns, c] of cache) if (nsOf(c.pid) !== ns) drop(ns);
    }
    if (cache.size === 0) stopSweeper();
  };
  const startSweeper = () => {
    if (sweeper || cache.size === 0) return;
    sweeper = setInterval(sweep, sweepMs);
    sweeper.unref();
  };

  async function scan(device: string): Promise<NamespaceMount[]> {
    lastCall = performance.now();
    const pids = readdirSync(procRoot).filter((n) => /^[1-9]\d*$/.test(n)).map(Number).sort((a, b) => a - b);
    const first = new Map<string, number>();
    for (const pid of pids) {
      const ns = nsOf(pid);
      if (ns !== null && !first.has(ns)) first.set(ns, pid);
    }
    // A namespace no process is in any more, or whose remembered process left it: let it go.
    for (const [ns, c] of cache) if (first.get(ns) === undefined || nsOf(c.pid) !== ns) drop(ns);

    const found = new Map<number, string[]>();
    const work = [...first].map(([ns, pid]) => async () => {
      let c = cache.get(ns);
      if (c && !c.probe.changed()) {
        if (!c.devices.has(device)) return;
        // Mounted there (as of the last change): read it now to name the mount points.
      } else if (c) {
        c.devices = new Set(); // consumed the probe; filled by the read below
      } else if (!probesBroken && cache.size < maxProbes) {
        const probe = await openProbe(`${procRoot}/${pid}/mountinfo`).catch((err: NodeJS.ErrnoException) => {
          // A process that exited or is not ours to read says nothing of probes in general.
          if (!["ENOENT", "ESRCH", "EACCES", "EPERM"].includes(err?.code ?? "")) probesBroken = true;
          return null;
        });
        if (probe === null) {
          // read below, uncached
        } else if (cache.has(ns)) void probe.close?.();
        else if (nsOf(pid) !== ns) {
          void probe.close?.(); // the process left the namespace meanwhile: the probe may watch another one
          return;
        } else cache.set(ns, (c = { pid, probe, devices: new Set() }));
      }
      const text = await readFile(`${procRoot}/${pid}/mountinfo`, "utf8").catch(() => null);
      // The process exited or moved meanwhile: this read says nothing of `ns`.
      if (text === null || nsOf(pid) !== ns) {
        if (c) drop(ns);
        return;
      }
      if (c) c.devices = devicesOf(text);
      const points = mountPointsOf(text, device);
      if (points.length) found.set(pid, points);
    });
    // Reads run a few at a time: each holds a libuv pool thread.
    let next = 0;
    const runner = async () => {
      while (next < work.length) await work[next++]();
    };
    await Promise.all(Array.from({ length: Math.min(8, work.length) }, runner));
    startSweeper();
    return [...found].sort((a, b) => a[0] - b[0]).flatMap(([pid, points]) => points.map((mountPoint) => ({ pid, mountPoint })));
  }

  return {
    mountsOf(major, minor) {
      const run = queue.then(() => scan(`${major}:${minor}`));
      queue = run.catch(() => {});
      return run;
    },
    cachedNamespaces: () => cache.size,
    async close() {
      stopSweeper();
      const all = [...cache.values()];
      cache.clear();
      await Promise.all(all.map((c) => c.probe.close?.()));
    },
  };
}
