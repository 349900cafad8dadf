import { readFile, readdir, readlink } from "node:fs/promises";

/** One line of /proc/self/mountinfo. */
export interface MountEntry {
  mountId: number;
  parentId: number;
  /** "major:minor" of the mounted filesystem's device. */
  device: string;
  /** Path within the filesystem that is mounted (bind mounts: not "/"). */
  root: string;
  mountPoint: string;
  fsType: string;
  /** Mount source, e.g. /dev/loop3p1. */
  source: string;
  /** The filesystem's own options (after the source), e.g. btrfs' `subvol=/@home`; "" when absent. */
  superOptions?: string;
}

/** Undoes the kernel's octal escapes (`\040` for a space) in mountinfo paths. */
const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** Parses mountinfo text (see proc(5)). */
export function parseMountInfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    const fields = line.split(" ");
    const sep = fields.indexOf("-", 6);
    if (sep < 0) continue;
    entries.push({
      mountId: Number(fields[0]),
      parentId: Number(fields[1]),
      device: fields[2],
      root: unescape(fields[3]),
      mountPoint: unescape(fields[4]),
      fsType: fields[sep + 1],
      source: unescape(fields[sep + 2] ?? ""),
      superOptions: fields[sep + 3] ?? "",
    });
  }
  return entries;
}

/** The mount table of this process's mount namespace, read directly (no process spawned). */
export async function readMountTable(): Promise<MountEntry[]> {
  return parseMountInfo(await readFile("/proc/self/mountinfo", "utf8"));
}

/**
 * Mounts of device `major:minor` in every mount namespace visible under `procRoot`: one process per
 * namespace (the `mnt:[inode]` of /proc/<pid>/ns/mnt) has its mountinfo read. Processes that exit
 * meanwhile, or whose namespace link cannot be read (another user's, without privilege), are skipped.
 * Cost: one readlink per process and one mountinfo read per namespace.
 */
export async function mountsInAnyNamespace(major: number, minor: number, procRoot = "/proc"): Promise<{ pid: number; mountPoint: string; mountId: number }[]> {
  const device = `${major}:${minor}`;
  const pids = (await readdir(procRoot)).filter((n) => /^[1-9]\d*$/.test(n)).map(Number).sort((a, b) => a - b);
  const seen = new Set<string>();
  const found: { pid: number; mountPoint: string; mountId: number }[] = [];
  for (const pid of pids) {
    const ns = await readlink(`${procRoot}/${pid}/ns/mnt`).catch(() => null);
    if (ns === null || seen.has(ns)) continue;
    const text = await readFile(`${procRoot}/${pid}/mountinfo`, "utf8").catch(() => null);
    if (text === null) continue;
    seen.add(ns);
    for (const m of parseMountInfo(text)) if (m.device === device) found.push({ pid, mountPoint: m.mountPoint, mountId: m.mountId });
  }
  return found;
}
