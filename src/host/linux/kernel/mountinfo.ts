import { readFile } from "node:fs/promises";

/** Undoes the octal escapes (`\040` for a space) of /proc/swaps and mountinfo fields. */
export const unescapeOctal = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

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

/** `text[from, to)` with every backslash + three octal digits (how the kernel escapes space, tab, newline and backslash) decoded. */
function field(text: string, from: number, to: number): string {
  // Look for a backslash only inside the field (indexOf would scan the rest of the table: quadratic).
  let b = from;
  while (b < to && text.charCodeAt(b) !== 92) b++;
  if (b === to) return text.slice(from, to);
  let out = "";
  let start = from;
  for (; b + 3 < to; b++) {
    if (text.charCodeAt(b) !== 92) continue;
    const d1 = text.charCodeAt(b + 1) - 48;
    const d2 = text.charCodeAt(b + 2) - 48;
    const d3 = text.charCodeAt(b + 3) - 48;
    if (d1 < 0 || d1 > 7 || d2 < 0 || d2 > 7 || d3 < 0 || d3 > 7) continue;
    out += text.slice(start, b) + String.fromCharCode(d1 * 64 + d2 * 8 + d3);
    start = b + 4;
    b += 3;
  }
  return out + text.slice(start, to);
}

/**
 * Parses mountinfo text (see proc(5)): one pass over the text, no per-line split or regex; a field
 * is copied only when it is kept, and decoded only when it holds a backslash. Lines without the
 * "-" separator after the sixth field are skipped. Cost: linear in the text's length.
 */
export function parseMountInfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  const len = text.length;
  // Field boundaries of the current line: starts[i], ends[i] for the first six fields.
  const starts = [0, 0, 0, 0, 0, 0];
  const ends = [0, 0, 0, 0, 0, 0];
  let line = 0;
  while (line < len) {
    let eol = text.indexOf("\n", line);
    if (eol < 0) eol = len;
    let pos = line;
    let n = 0;
    for (; n < 6; n++) {
      starts[n] = pos;
      let sp = text.indexOf(" ", pos);
      if (sp < 0 || sp > eol) sp = eol;
      ends[n] = sp;
      if (sp === eol) break;
      pos = sp + 1;
    }
    if (n < 6 && ends[n] === eol) {
      // Fewer than seven fields: no separator possible.
      line = eol + 1;
      continue;
    }
    // The separator: the first field at index ≥ 6 that is exactly "-" (optional fields come before it).
    let sep = -1;
    while (pos <= eol) {
      let sp = text.indexOf(" ", pos);
      if (sp < 0 || sp > eol) sp = eol;
      if (sp === pos + 1 && text.charCodeAt(pos) === 45) {
        sep = sp;
        break;
      }
      if (sp === eol) break;
      pos = sp + 1;
    }
    if (sep < 0) {
      line = eol + 1;
      continue;
    }
    // After the separator: type, source, super options (each possibly absent).
    const after: string[] = [];
    let fpos = sep + 1;
    for (let k = 0; k < 3 && sep < eol; k++) {
      let sp = text.indexOf(" ", fpos);
      if (sp < 0 || sp > eol) sp = eol;
      after.push(k === 1 ? field(text, fpos, sp) : text.slice(fpos, sp));
      if (sp === eol) break;
      fpos = sp + 1;
    }
    entries.push({
      mountId: Number(text.slice(starts[0], ends[0])),
      parentId: Number(text.slice(starts[1], ends[1])),
      device: text.slice(starts[2], ends[2]),
      root: field(text, starts[3], ends[3]),
      mountPoint: field(text, starts[4], ends[4]),
      fsType: after[0] ?? "",
      source: after[1] ?? "",
      superOptions: after[2] ?? "",
    });
    line = eol + 1;
  }
  return entries;
}

/** The mount table of this process's mount namespace, read directly (no process spawned). */
export async function readMountTable(): Promise<MountEntry[]> {
  return parseMountInfo(await readFile("/proc/self/mountinfo", "utf8"));
}
