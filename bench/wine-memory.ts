// Resident memory of a Windows process under Wine, from /proc/<pid>/smaps, with the PE images
// shown apart. Wine's loader maps a PE file whose sections are not page-aligned in the file (node.exe,
// Go's exes, koffi.node) by copying each section into private anonymous memory at the image's address:
// those pages count as RssAnon here, where Windows would map them from the file (shared, paged in on
// demand). An image is found by its header mapping (the file mapped at offset 0) and spans SizeOfImage
// bytes from there (read from the file's PE optional header).
import { readFileSync } from "node:fs";

/** One mapping of smaps; sizes in KiB. */
export interface Mapping {
  start: bigint;
  end: bigint;
  perms: string;
  offset: bigint;
  path: string;
  rssKiB: number;
  anonKiB: number;
}

/** Parses the text of /proc/<pid>/smaps. */
export function parseSmaps(text: string): Mapping[] {
  const out: Mapping[] = [];
  let cur: Mapping | undefined;
  for (const line of text.split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) ([0-9a-f]+) \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      cur = { start: BigInt(`0x${head[1]}`), end: BigInt(`0x${head[2]}`), perms: head[3], offset: BigInt(`0x${head[4]}`), path: head[5].trim(), rssKiB: 0, anonKiB: 0 };
      out.push(cur);
      continue;
    }
    const field = /^(\w+):\s+(\d+) kB/.exec(line);
    if (!field || !cur) continue;
    if (field[1] === "Rss") cur.rssKiB = Number(field[2]);
    else if (field[1] === "Anonymous") cur.anonKiB = Number(field[2]);
  }
  return out;
}

/** SizeOfImage of a PE file's optional header (PE32 or PE32+), in bytes. */
export function peImageSize(file: Buffer): number {
  const pe = file.readUInt32LE(0x3c);
  if (file.toString("latin1", pe, pe + 4) !== "PE\0\0") throw new Error("not a PE file");
  return file.readUInt32LE(pe + 24 + 56); // SizeOfImage: same offset in PE32 and PE32+
}

export interface ImageUse {
  label: string;
  /** Where the image was mapped (hex), or undefined when the process has not loaded it. */
  base?: string;
  rssKiB: number;
  anonKiB: number;
}

export interface MemoryBreakdown {
  rssKiB: number;
  anonKiB: number;
  fileKiB: number;
  /** The PE images asked about (the exe first), each with its resident and anonymous KiB. */
  images: ImageUse[];
  /** Anonymous KiB outside the first image (the exe's own): heap, stacks, JIT code, other images. */
  anonOutsideExeKiB: number;
  /** Anonymous KiB outside every image asked about. */
  anonOutsideImagesKiB: number;
  /** Resident KiB of Wine's own files (builtin DLLs, .so, NLS tables, the loader). */
  wineFilesKiB: number;
}

/**
 * Splits a process's resident memory: `images` are { label, path (as smaps shows it), size
 * (SizeOfImage) }; the first is the exe.
 */
export function breakdown(maps: Mapping[], images: { label: string; path: string; size: number }[]): MemoryBreakdown {
  const sum = (ms: Mapping[], k: "rssKiB" | "anonKiB") => ms.reduce((a, m) => a + m[k], 0);
  const inImage = new Set<Mapping>();
  const uses: ImageUse[] = images.map(({ label, path, size }) => {
    const head = maps.find((m) => m.path === path && m.offset === 0n);
    if (!head) return { label, rssKiB: 0, anonKiB: 0 };
    const end = head.start + BigInt(size);
    const within = maps.filter((m) => m.start >= head.start && m.end <= end);
    for (const m of within) inImage.add(m);
    return { label, base: `0x${head.start.toString(16)}`, rssKiB: sum(within, "rssKiB"), anonKiB: sum(within, "anonKiB") };
  });
  const anonKiB = sum(maps, "anonKiB");
  const rssKiB = sum(maps, "rssKiB");
  const wine = maps.filter((m) => !inImage.has(m) && /\/wine(64)?(-preloader)?$|\/wine\/|\.nls$/.test(m.path));
  return {
    rssKiB,
    anonKiB,
    fileKiB: rssKiB - anonKiB,
    images: uses,
    anonOutsideExeKiB: anonKiB - (uses[0]?.anonKiB ?? 0),
    anonOutsideImagesKiB: anonKiB - uses.reduce((a, u) => a + u.anonKiB, 0),
    wineFilesKiB: sum(wine, "rssKiB") - sum(wine, "anonKiB"),
  };
}

/** breakdown() of a live process; `images` are Linux paths of PE files. */
export function processMemory(pid: number, images: { label: string; file: string }[]): MemoryBreakdown {
  const maps = parseSmaps(readFileSync(`/proc/${pid}/smaps`, "utf8"));
  return breakdown(maps, images.map(({ label, file }) => ({ label, path: file, size: peImageSize(readFileSync(file)) })));
}
