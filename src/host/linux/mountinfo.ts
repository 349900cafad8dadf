import { readFile } from "node:fs/promises";
import { unescapeOctal } from "./block-parsers.ts";

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
      root: unescapeOctal(fields[3]),
      mountPoint: unescapeOctal(fields[4]),
      fsType: fields[sep + 1],
      source: unescapeOctal(fields[sep + 2] ?? ""),
      superOptions: fields[sep + 3] ?? "",
    });
  }
  return entries;
}

/** The mount table of this process's mount namespace, read directly (no process spawned). */
export async function readMountTable(): Promise<MountEntry[]> {
  return parseMountInfo(await readFile("/proc/self/mountinfo", "utf8"));
}
