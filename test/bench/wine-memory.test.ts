// bench/wine-memory.ts: the smaps parser and the split of a Wine process's memory into its PE images,
// Wine's own files and the rest.
import { test } from "node:test";
import assert from "node:assert/strict";
import { breakdown, parseSmaps, peImageSize } from "../../bench/wine-memory.ts";

/** One smaps entry: a header line and the fields the parser reads, plus one it must skip. */
const entry = (range: string, perms: string, offset: string, path: string, rss: number, anon: number) =>
  `${range} ${perms} ${offset} fe:00 ${path ? 42 : 0}${path ? `                          ${path}` : " "}\n` +
  `Size:               ${rss + 8} kB\nRss:                ${rss} kB\nPss:                ${rss} kB\nAnonymous:          ${anon} kB\nVmFlags: rd mr mw me\n`;

const exe = "/w/.cache/exe/abc/csi-proxy.exe";
const smaps =
  entry("00010000-00012000", "r--s", "00000000", "/usr/share/wine/nls/l_intl.nls", 8, 0) +
  entry("00940000-00d40000", "rw-p", "00000000", "", 4088, 4088) +
  entry("7b000000-7b001000", "r--p", "00000000", "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows/kernelbase.dll", 4, 0) +
  entry("7b001000-7b086000", "r-xp", "00001000", "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows/kernelbase.dll", 300, 12) +
  entry("140000000-140001000", "r--p", "00000000", exe, 4, 0) +
  entry("140001000-141d4e000", "r-xp", "00000000", "", 30004, 30004) +
  entry("141d4e000-14510b000", "r--p", "00000000", "", 52980, 52980) +
  // a file mapping of the exe inside the image (read-only data Wine could map from the file)
  entry("145419000-145569000", "r--p", "05152000", exe, 1000, 0) +
  // the first mapping past the image's end: not part of it
  entry("14575c000-14575d000", "rw-p", "00000000", "", 4, 4) +
  entry("180000000-180001000", "r--p", "00000000", "/w/koffi.node", 4, 0) +
  entry("180001000-180100000", "r-xp", "00000000", "", 1200, 1200) +
  entry("325c8f40000-325c9245000", "rw-p", "00000000", "", 3092, 3092);

test("parseSmaps reads every mapping with its range, offset, path, Rss and Anonymous", () => {
  const maps = parseSmaps(smaps);
  assert.equal(maps.length, 12);
  assert.deepEqual(maps[4], { start: 0x140000000n, end: 0x140001000n, perms: "r--p", offset: 0n, path: exe, rssKiB: 4, anonKiB: 0 });
  assert.equal(maps[1].path, "");
  assert.equal(maps[7].offset, 0x5152000n);
  assert.equal(maps[11].rssKiB, 3092);
});

test("breakdown puts the pages of each image's span apart, and only those", () => {
  const b = breakdown(parseSmaps(smaps), [
    { label: "exe", path: exe, size: 0x575c000 },
    { label: "koffi", path: "/w/koffi.node", size: 0x100000 },
    { label: "not loaded", path: "/w/other.dll", size: 0x1000 },
  ]);
  assert.equal(b.rssKiB, 8 + 4088 + 4 + 300 + 4 + 30004 + 52980 + 1000 + 4 + 4 + 1200 + 3092);
  assert.equal(b.anonKiB, 4088 + 12 + 30004 + 52980 + 4 + 1200 + 3092);
  assert.equal(b.fileKiB, b.rssKiB - b.anonKiB);
  assert.deepEqual(b.images[0], { label: "exe", base: "0x140000000", rssKiB: 4 + 30004 + 52980 + 1000, anonKiB: 30004 + 52980 });
  assert.deepEqual(b.images[1], { label: "koffi", base: "0x180000000", rssKiB: 1204, anonKiB: 1200 });
  assert.deepEqual(b.images[2], { label: "not loaded", rssKiB: 0, anonKiB: 0 });
  assert.equal(b.anonOutsideExeKiB, 4088 + 12 + 4 + 1200 + 3092);
  assert.equal(b.anonOutsideImagesKiB, 4088 + 12 + 4 + 3092);
  assert.equal(b.wineFilesKiB, 8 + 4 + 300 - 12);
});

test("peImageSize reads SizeOfImage from PE32+ and PE32 optional headers, and refuses other files", () => {
  for (const magic of [0x20b, 0x10b]) {
    const pe = Buffer.alloc(0x200);
    pe.writeUInt32LE(0x80, 0x3c);
    pe.write("PE\0\0", 0x80, "latin1");
    pe.writeUInt16LE(magic, 0x80 + 24);
    pe.writeUInt32LE(0x575c000, 0x80 + 24 + 56);
    assert.equal(peImageSize(pe), 0x575c000);
  }
  assert.throws(() => peImageSize(Buffer.alloc(0x200)), /not a PE file/);
});
