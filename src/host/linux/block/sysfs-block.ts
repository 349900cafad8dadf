/**
 * Whole block devices and their partitions as sysfs shows them (/sys/block), read with plain file
 * reads: no process. Partition tables are read from the device only for disks the kernel shows
 * partitions on (never for partition-less disks such as a whole-disk root filesystem).
 *
 * sysfs attributes are read synchronously: the kernel generates them in memory and never waits for
 * a device, and this way a few hundred of them cost about a millisecond instead of ten through the
 * thread pool. Identity attributes (serials, VPD pages, SCSI address…) are cached per device while
 * its diskseq is unchanged. Device reads (partition tables) stay asynchronous.
 */
import { readFileSync, readdirSync, realpathSync } from "node:fs";
import * as path from "node:path";
import type { BlockDisk, BlockPartition, PartitionTable } from "./block-types.ts";
import { mbrPartUuid, readPartitionTable } from "./partition-table.ts";
import { UeventKeyed } from "./uevent-keyed.ts";

export const SYS_BLOCK = "/sys/block";

/** Contents of a sysfs attribute, or null when it does not exist or cannot be read. */
function attr(file: string): string | null {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

function binaryAttr(file: string): Uint8Array | null {
  try {
    const b = readFileSync(file);
    return b.length ? new Uint8Array(b) : null;
  } catch {
    return null;
  }
}

function link(file: string): string | null {
  try {
    return realpathSync(file);
  } catch {
    return null;
  }
}

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** KEY=VALUE lines of a uevent file. */
export function parseUevent(text: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of (text ?? "").split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

const num = (s: string | null | undefined, fallback = 0) => (s == null || s.trim() === "" ? fallback : Number(s.trim()));
const big = (s: string | null) => (s === null || s.trim() === "" ? 0n : BigInt(s.trim()));
const trimmed = (s: string | null) => (s === null ? null : s.replace(/\n$/, ""));

function readPartition(dir: string): Omit<BlockPartition, "uuid" | "typeId"> | null {
  const partition = attr(path.join(dir, "partition"));
  if (partition === null) return null;
  const uevent = parseUevent(attr(path.join(dir, "uevent")));
  return {
    name: path.basename(dir),
    devPath: `/dev/${uevent.DEVNAME ?? path.basename(dir)}`,
    major: num(uevent.MAJOR),
    minor: num(uevent.MINOR),
    number: num(partition),
    startSectors: big(attr(path.join(dir, "start"))),
    sizeSectors: big(attr(path.join(dir, "size"))),
    holders: list(path.join(dir, "holders")),
    readOnly: num(attr(path.join(dir, "ro"))) === 1,
  };
}

const HCTL = /^(\d+):(\d+):(\d+):(\d+)$/;

/** Attributes that cannot change while a device keeps its medium (same diskseq). */
interface Identity {
  seq: string | null;
  uevent: Record<string, string>;
  logicalBlockSize: number;
  removable: boolean;
  hctl: RegExpExecArray | null;
  serial: string | null;
  vpdPage80: Uint8Array | null;
  vpdPage83: Uint8Array | null;
  wwid: string | null;
}
const identities = new Map<string, Identity>();

function identityOf(dir: string, seq: string | null): Identity {
  const cached = seq ? identities.get(dir) : undefined;
  if (cached && cached.seq === seq) return cached;
  const dev = path.join(dir, "device");
  const devLink = link(dev);
  const identity: Identity = {
    seq,
    uevent: parseUevent(attr(path.join(dir, "uevent"))),
    logicalBlockSize: num(attr(path.join(dir, "queue/logical_block_size")), 512) || 512,
    removable: num(attr(path.join(dir, "removable"))) === 1,
    hctl: devLink ? HCTL.exec(path.basename(devLink)) : null,
    serial: trimmed(attr(path.join(dir, "serial"))) ?? trimmed(attr(path.join(dev, "serial"))),
    vpdPage80: binaryAttr(path.join(dev, "vpd_pg80")),
    vpdPage83: binaryAttr(path.join(dev, "vpd_pg83")),
    wwid: (attr(path.join(dir, "wwid")) ?? attr(path.join(dev, "wwid")))?.trim() || null,
  };
  if (seq) identities.set(dir, identity);
  return identity;
}

/**
 * Reads a disk's partition table. `layout` is what sysfs shows of it right now — diskseq (null
 * without one) and every partition's number, start and size — for a reader that keeps tables
 * (block-reads.ts); the default reader ignores it.
 */
export type TableReader = (devPath: string, lbs: number, size: bigint, layout: { seq: string | null; partitions: string }) => Promise<PartitionTable | null>;

/** Reads one /sys/block entry. `readTable` reads the partition table (default: from the device, every time). */
export async function readBlockDisk(name: string, options: { sysBlock?: string; readTable?: TableReader; identityOnly?: boolean } = {}): Promise<BlockDisk> {
  const dir = path.join(options.sysBlock ?? SYS_BLOCK, name);
  const seq = attr(path.join(dir, "diskseq"))?.trim() || null;
  const id = identityOf(dir, seq);
  const sizeBytes = big(attr(path.join(dir, "size"))) * 512n;
  const devPath = `/dev/${id.uevent.DEVNAME ?? name}`;
  const h = id.hctl;
  // What identifies the disk: all a ListDiskIDs needs (no partition, holder, read-only or SCSI state read).
  const identity: BlockDisk = {
    name,
    devPath,
    major: num(id.uevent.MAJOR),
    minor: num(id.uevent.MINOR),
    diskSeq: seq ?? (id.uevent.DISKSEQ || null),
    sizeBytes,
    logicalBlockSize: id.logicalBlockSize,
    readOnly: false,
    removable: id.removable,
    loopBackingFile: trimmed(attr(path.join(dir, "loop/backing_file")))?.replace(/ \(deleted\)$/, "") || null,
    scsiAddress: h ? { host: Number(h[1]), channel: Number(h[2]), target: Number(h[3]), lun: Number(h[4]) } : null,
    scsiState: null,
    serial: id.serial,
    vpdPage80: id.vpdPage80,
    vpdPage83: id.vpdPage83,
    wwid: id.wwid,
    holders: [],
    partitions: [],
    partitionTable: null,
  };
  if (options.identityOnly) return identity;
  const parts = list(dir)
    .filter((e) => e.startsWith(name))
    .map((e) => readPartition(path.join(dir, e)))
    .filter((p): p is NonNullable<typeof p> => p !== null)
    .sort((a, b) => a.number - b.number);
  let table: PartitionTable | null = null;
  let tableError: string | undefined;
  if (parts.length > 0) {
    const layout = { seq, partitions: parts.map((p) => `${p.number}:${p.startSectors}+${p.sizeSectors}`).join(",") };
    const read: TableReader = options.readTable ?? ((dev, lbs, size) => readPartitionTable(dev, lbs, size));
    // A failed read is kept as the disk's tableError (an error for whoever needs the table), never "no table".
    table = await read(devPath, id.logicalBlockSize, sizeBytes, layout).catch((err: unknown) => {
      tableError = err instanceof Error ? err.message : String(err);
      return null;
    });
  }
  const partitions: BlockPartition[] = parts.map((p) => {
    const entry = table?.entries.find((e) => e.number === p.number);
    const uuid = entry?.uuid ?? (table?.type === "dos" ? mbrPartUuid(table as PartitionTable & { type: "dos" }, p.number) : null);
    return { ...p, uuid, typeId: entry?.typeId ?? null };
  });
  return {
    ...identity,
    readOnly: num(attr(path.join(dir, "ro"))) === 1,
    scsiState: h ? (attr(path.join(dir, "device/state"))?.trim() ?? null) : null,
    holders: list(path.join(dir, "holders")),
    partitions,
    partitionTable: table,
    ...(tableError === undefined ? {} : { tableError }),
  };
}

/**
 * The last identity-only listing of the disks with a medium ({@link listBlockDisks} with `withMedium`
 * and `identityOnly` on the real /sys/block), kept while the kernel has sent no uevent since
 * (uevent-keyed.ts: a disk that appears, goes, gets or loses a medium — a loop device attached or
 * detached — or changes size sends one). One listing, replaced at the next change; bounded by the
 * number of block devices. Shared: callers must not change the objects.
 */
const identityListing = new UeventKeyed<Promise<BlockDisk[]>>();

/**
 * Every /sys/block entry; with `withMedium`, only those whose size is not 0 (the rest — unattached loop
 * devices, empty card readers — is skipped after one read).
 *
 * With `withMedium` and `identityOnly` on the real /sys/block: read once per uevent (one read of
 * `/sys/kernel/uevent_seqnum` per call otherwise). A loop device's backing file is named as of that
 * reading: a rename of the file while attached sends no uevent, so the new name shows after the next
 * uevent on the node (the file is the same; only its name is not re-read).
 */
export function listBlockDisks(options: Parameters<typeof readBlockDisk>[1] & { withMedium?: boolean } = {}): Promise<BlockDisk[]> {
  const sysBlock = options.sysBlock ?? SYS_BLOCK;
  const read = async () => {
    let names = list(sysBlock);
    if (options.withMedium) names = names.filter((n) => big(attr(path.join(sysBlock, n, "size"))) > 0n);
    return Promise.all(names.map((n) => readBlockDisk(n, options)));
  };
  const cacheable = options.withMedium === true && options.identityOnly === true && sysBlock === SYS_BLOCK;
  return cacheable ? identityListing.get(read) : read();
}
