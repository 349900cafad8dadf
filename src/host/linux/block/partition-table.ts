/**
 * Reads GPT and MBR partition tables straight from a block device (two or three reads, no process),
 * for what sysfs does not tell: PARTUUIDs, partition types and the GPT backup-header position.
 * The parser is a pure function of the bytes; only {@link readPartitionTable} does I/O.
 */
import { open } from "node:fs/promises";
import { Code, CsiProxyError } from "../../../errors.ts";
import type { PartitionTable } from "./block-types.ts";

/** A GUID as stored on disk (first three fields little-endian) → canonical lower-case text. */
export function guidToString(b: Uint8Array): string {
  const hex = (from: number, to: number, reverse: boolean) => {
    const bytes = Array.from(b.subarray(from, to));
    return (reverse ? bytes.reverse() : bytes).map((x) => x.toString(16).padStart(2, "0")).join("");
  };
  return `${hex(0, 4, true)}-${hex(4, 6, true)}-${hex(6, 8, true)}-${hex(8, 10, false)}-${hex(10, 16, false)}`;
}

const isZero = (b: Uint8Array) => b.every((x) => x === 0);

/**
 * Reads `length` bytes at `offset` of the device; shorter reads (end of device) give shorter buffers.
 */
export type ReadAt = (offset: bigint, length: number) => Promise<Uint8Array>;

/**
 * Parses the partition table of a device of `sizeBytes` with `lbs`-byte logical blocks. GPT when LBA 1
 * holds a GPT header ("EFI PART"), else MBR when sector 0 ends in 55AA and its four entries look like
 * partition entries; null otherwise. Sizes in the result are 512-byte units.
 */
export async function parsePartitionTable(read: ReadAt, lbs: number, sizeBytes: bigint): Promise<PartitionTable | null> {
  const unit = BigInt(lbs / 512);
  const header = await read(BigInt(lbs), Math.min(lbs, 512));
  if (isGptHeader(header)) return parseGpt(header, read, lbs, sizeBytes);
  const mbr = await read(0n, 512);
  if (mbr.length < 512 || mbr[510] !== 0x55 || mbr[511] !== 0xaa) return null;
  const view = new DataView(mbr.buffer, mbr.byteOffset, mbr.byteLength);
  const signature = view.getUint32(440, true).toString(16).padStart(8, "0");
  const entries: PartitionTable["entries"] = [];
  for (let i = 0; i < 4; i++) {
    const off = 446 + i * 16;
    const boot = mbr[off];
    if (boot !== 0 && boot !== 0x80) return null; // not a partition table (a FAT boot sector, say)
    const type = mbr[off + 4];
    if (type === 0) continue;
    if (type === 0xee) return null; // protective MBR without a readable GPT
    entries.push({
      number: i + 1,
      startSectors: BigInt(view.getUint32(off + 8, true)) * unit,
      sizeSectors: BigInt(view.getUint32(off + 12, true)) * unit,
      uuid: `${signature}-${(i + 1).toString(16).padStart(2, "0")}`,
      typeId: `0x${type.toString(16)}`,
    });
  }
  const ext = entries.find((e) => EXTENDED.has(e.typeId ?? ""));
  if (ext) entries.push(...(await readLogical(read, lbs, ext.startSectors / unit, ext.sizeSectors / unit, signature)));
  return { type: "dos", entries };
}

/** Whether these bytes start a GPT header ("EFI PART" and room for the fields read). */
const isGptHeader = (header: Uint8Array) => header.length >= 92 && Buffer.from(header.subarray(0, 8)).toString("latin1") === "EFI PART";

/** The table a GPT header (primary at LBA 1, or the backup at the last LBA) describes; its entries are read where it says. */
async function parseGpt(header: Uint8Array, read: ReadAt, lbs: number, sizeBytes: bigint): Promise<PartitionTable | null> {
  const unit = BigInt(lbs / 512);
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  const myLba = view.getBigUint64(24, true);
  const alternateLba = view.getBigUint64(32, true);
  const lastUsableLba = view.getBigUint64(48, true);
  const entriesLba = view.getBigUint64(72, true);
  const count = view.getUint32(80, true);
  const entrySize = view.getUint32(84, true);
  if (entrySize < 128 || count > 4096) return null;
  const raw = await read(entriesLba * BigInt(lbs), count * entrySize);
  const entries: PartitionTable["entries"] = [];
  for (let i = 0; i < count && (i + 1) * entrySize <= raw.length; i++) {
    const e = raw.subarray(i * entrySize, (i + 1) * entrySize);
    const type = e.subarray(0, 16);
    if (isZero(type)) continue;
    const ev = new DataView(e.buffer, e.byteOffset, e.byteLength);
    const first = ev.getBigUint64(32, true);
    const last = ev.getBigUint64(40, true);
    entries.push({
      number: i + 1,
      startSectors: first * unit,
      sizeSectors: (last - first + 1n) * unit,
      uuid: guidToString(e.subarray(16, 32)),
      typeId: guidToString(type),
    });
  }
  const entryLbas = BigInt(Math.ceil((count * entrySize) / lbs));
  const lastLba = sizeBytes / BigInt(lbs) - 1n;
  return {
    type: "gpt",
    entries,
    lastUsableSectors: (lastUsableLba + 1n) * unit - 1n,
    // Read from the primary: where it says the backup is; read from the backup: where the backup itself sits.
    backupAtEnd: myLba === 1n ? alternateLba === lastLba : myLba === lastLba,
    trailerSectors: (1n + entryLbas) * unit,
  };
}

/** CRC-32 (IEEE, as GPT uses) of `b`. */
function crc32(b: Uint8Array): number {
  let c = 0xffffffff;
  for (const x of b) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

/** Whether a GPT header's own CRC (over its HeaderSize bytes, the CRC field zeroed) holds: the kernel uses a backup header only then. */
export function gptHeaderCrcHolds(header: Uint8Array): boolean {
  if (!isGptHeader(header)) return false;
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  const size = view.getUint32(12, true);
  if (size < 92 || size > header.length) return false;
  const copy = Uint8Array.from(header.subarray(0, size));
  copy.fill(0, 16, 20);
  return crc32(copy) === view.getUint32(16, true);
}

/** MBR extended-container types (CHS, LBA, Linux). */
const EXTENDED = new Set(["0x5", "0xf", "0x85"]);

/**
 * Logical partitions (5, 6, …): the chain of extended boot records inside the container starting at
 * LBA `extStart` (`extSize` blocks). Each entry's `ebrSectors` is where its EBR sits: a logical
 * partition may grow up to the next EBR (or the container's end), never past it.
 */
async function readLogical(read: ReadAt, lbs: number, extStart: bigint, extSize: bigint, signature: string): Promise<PartitionTable["entries"]> {
  const unit = BigInt(lbs / 512);
  const out: PartitionTable["entries"] = [];
  const seen = new Set<bigint>();
  // Numbered as the kernel numbers them: 5, 6, … for each EBR whose first entry is used (an empty one is skipped).
  for (let ebr = extStart, number = 5; seen.size < 128 && !seen.has(ebr) && ebr >= extStart && ebr < extStart + extSize; ) {
    seen.add(ebr);
    const sector = await read(ebr * BigInt(lbs), 512);
    if (sector.length < 512 || sector[510] !== 0x55 || sector[511] !== 0xaa) break;
    const view = new DataView(sector.buffer, sector.byteOffset, sector.byteLength);
    const type = sector[446 + 4];
    if (type !== 0) {
      out.push({
        number,
        startSectors: (ebr + BigInt(view.getUint32(446 + 8, true))) * unit,
        sizeSectors: BigInt(view.getUint32(446 + 12, true)) * unit,
        uuid: `${signature}-${number.toString(16).padStart(2, "0")}`,
        typeId: `0x${type.toString(16)}`,
        ebrSectors: ebr * unit,
      });
      number++;
    }
    const link = sector[462 + 4];
    if (!EXTENDED.has(`0x${link.toString(16)}`)) break;
    ebr = extStart + BigInt(view.getUint32(462 + 8, true));
  }
  return out;
}

/** Logical blocks read at once from the start of the device: the MBR, the GPT header and a standard 128-entry GPT array (LBA 2–33). */
const HEAD_BLOCKS = 34;

/**
 * Why a read of a device failed, as the caller's error: Unavailable (the device did not give the bytes;
 * nothing was changed, a retry may succeed), naming the device, the byte range and the errno.
 */
export function deviceReadError(devPath: string, what: string, offset: bigint, length: number, err: unknown): CsiProxyError {
  const errno = (err as NodeJS.ErrnoException).code ?? "error";
  const message = err instanceof Error ? err.message : String(err);
  return new CsiProxyError(Code.Unavailable, `cannot read ${what} of ${devPath}: bytes ${offset}–${offset + BigInt(length) - 1n} fail with ${errno} (${message})`, { cause: err });
}

/**
 * Opens the device read-only and parses its table. The first {@link HEAD_BLOCKS} logical blocks are
 * read in one go (one read for the usual GPT or MBR disk instead of two or three); anything beyond
 * them (entries elsewhere, logical partitions' EBRs) is read on demand.
 *
 * A read that fails is an error, never "no table" ({@link deviceReadError}: Unavailable naming the
 * bytes and errno). When the first blocks cannot be read, the backup GPT header at the last LBA is
 * used if its CRC holds (as the kernel's parser falls back to it), its entries read where it says;
 * else the first read's error is thrown.
 */
export async function readPartitionTable(devPath: string, lbs: number, sizeBytes: bigint): Promise<PartitionTable | null> {
  const fh = await open(devPath, "r");
  try {
    const readAt: ReadAt = async (offset, length) => {
      const buf = Buffer.alloc(length);
      try {
        const { bytesRead } = await fh.read(buf, 0, length, offset);
        return buf.subarray(0, bytesRead);
      } catch (err) {
        throw deviceReadError(devPath, "the partition table", offset, length, err);
      }
    };
    let head: Uint8Array;
    try {
      head = await readAt(0n, HEAD_BLOCKS * lbs);
    } catch (err) {
      const backup = sizeBytes >= BigInt(lbs) * 2n ? await readAt(sizeBytes - BigInt(lbs), lbs).catch(() => null) : null;
      if (backup && gptHeaderCrcHolds(backup)) return await parseGpt(backup, readAt, lbs, sizeBytes);
      throw err;
    }
    return await parsePartitionTable(
      (offset, length) => {
        const end = offset + BigInt(length);
        if (end <= BigInt(head.length)) return Promise.resolve(head.subarray(Number(offset), Number(end)));
        // At the end of a device shorter than the head, a short read like the device's own.
        if (BigInt(head.length) < BigInt(HEAD_BLOCKS * lbs) && offset <= BigInt(head.length)) return Promise.resolve(head.subarray(Number(offset)));
        return readAt(offset, length);
      },
      lbs,
      sizeBytes,
    );
  } finally {
    // Waited for: the call settles after its descriptor is closed (a read-only close cannot fail the answer).
    await fh.close().catch(() => {});
  }
}

/** PARTUUIDs of MBR logical partitions (5+) follow the same "<signature>-<nn>" rule as primary ones. */
export function mbrPartUuid(table: PartitionTable & { type: "dos" }, number: number): string | null {
  const first = table.entries[0]?.uuid ?? null;
  return first ? `${first.slice(0, 8)}-${number.toString(16).padStart(2, "0")}` : null;
}
