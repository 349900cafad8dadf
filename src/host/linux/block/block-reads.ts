/**
 * The block devices the kernel shows, read without processes: /sys/block (sysfs-block.ts), the
 * mount table (mount-table-cache.ts), loop devices, /proc/filesystems and the partition table on
 * the disk itself (partition-table.ts). Reads only; the interpreting rooms (disk-numbers.ts, block-snapshot.ts…) read them.
 */
import { readFile, stat } from "node:fs/promises";
import { existsSync, readFileSync, readdirSync, realpathSync } from "node:fs";
import * as path from "node:path";
import type { BlockDisk, BlockMount, DevNumber, LoopDevice, PartitionTable } from "./block-types.ts";
import { decodeDev } from "./block-parsers.ts";
import type { MountEntry } from "../kernel/mountinfo.ts";
import { processMountTable } from "../mounts/mount-index.ts";
import { listBlockDisks, readBlockDisk, SYS_BLOCK, type TableReader } from "./sysfs-block.ts";
import { readPartitionTable } from "./partition-table.ts";
import { UeventKeyed } from "./uevent-keyed.ts";
import type { UndoLog } from "../../../util/undo-retry.ts";
import type { DeviceGate } from "./device-gate.ts";

/** A device's same table read error is logged again after this long (ms), so a disk failing every call logs once a minute. */
const READ_ERROR_LOG_MS = 60_000;

export interface BlockReads {
  /**
   * Every whole block device (/sys/block) with a medium (size > 0), with its partitions. With
   * `tables: false` no partition table is read off a device (partitionTable, and the partitions'
   * uuid and typeId, are null): for answers that need only sysfs (identifiers, locations). With
   * `partitions: false`, identity only: no partition, holder, read-only or SCSI state is read
   * (`partitions` and `holders` empty): what ListDiskIDs needs, a few sysfs reads per disk. With
   * `tables: "kept"`: the listing is the one kept until the next uevent (uevent-keyed.ts), and when
   * read again a disk's partition table is the one last read off it while sysfs shows the same medium
   * (diskseq) and the same partitions (numbers, starts, sizes) — read again otherwise, and always for
   * a disk without diskseq. What that misses: what uevent-keyed.ts lists as sending no uevent (a
   * partition resized in place, a table rewritten on the device that the kernel was not told of).
   * Only for the disks a write does not act on (block-snapshot.ts); shared, must not be changed.
   */
  listDisks(options?: { tables?: boolean | "kept"; partitions?: boolean }): Promise<BlockDisk[]>;
  /** The whole block device with this number (via /sys/dev/block), null when there is none (or it is a partition). */
  findDisk(dev: DevNumber): Promise<BlockDisk | null>;
  /**
   * The whole disk holding a disk or partition device number (itself for a disk), null when it is
   * neither; lets a read take a snapshot of that one disk. Optional: without it, every disk is read.
   */
  diskOfDevice?(dev: DevNumber): DevNumber | null;
  /**
   * A text that changes whenever a block device appears, goes or gets a new medium (names and
   * diskseq of /sys/block); undefined where the kernel gives no diskseq. For answers only (read once
   * per uevent on the real host). Optional.
   */
  diskSetKey?(): string | undefined;
  readMounts(): Promise<BlockMount[]>;
  /**
   * Every attached loop device with its backing object, offset and size (sysfs, stat). On the real
   * host read once per uevent (uevent-keyed.ts) unless `fresh`: a write's verification asks fresh.
   * The answer is shared and must not be changed.
   */
  listLoops(options?: { fresh?: boolean }): Promise<LoopDevice[]>;
  /** Filesystem types the running kernel supports (/proc/filesystems). */
  kernelFilesystems(): Promise<Set<string>>;
  /** Reads the partition table from the disk itself (GPT or MBR); null when there is none it can parse. */
  readPartitionTable(disk: Pick<BlockDisk, "devPath" | "logicalBlockSize" | "sizeBytes">): Promise<PartitionTable | null>;
}

/** A sysfs or procfs file's text, "" when it cannot be read (generated in memory: read synchronously, as sysfs-block.ts explains). */
export function kernelText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/**
 * The block view of one mount table version. Filesystems on an anonymous device number (btrfs shows
 * 0:NN in mountinfo) are attributed to their source when the source is a block device node: the
 * device the API knows them by (its number as stat'ed when this version was first used). The answer
 * is shared by every caller of that version and must not be changed.
 */
async function blockMountsOf(table: readonly MountEntry[]): Promise<BlockMount[]> {
  const sources = new Map<string, DevNumber | null>();
  const out: BlockMount[] = [];
  for (const m of table) {
    let [major, minor] = m.device.split(":").map(Number);
    if (major === 0 && m.source.startsWith("/dev/")) {
      if (!sources.has(m.source)) {
        const st = await stat(m.source, { bigint: true }).catch(() => null);
        sources.set(m.source, st?.isBlockDevice() ? decodeDev(st.rdev) : null);
      }
      const dev = sources.get(m.source);
      if (dev) ({ major, minor } = dev);
    }
    out.push({ major, minor, mountPoint: m.mountPoint, fsType: m.fsType, source: m.source, mountId: m.mountId });
  }
  return out;
}

/**
 * The reads of this host. State, bounded: the block view of the current mount table version (one),
 * per loop device name what its backing file was stat'ed as (one entry per loop device), per disk
 * its partition table for `tables: "kept"` (one entry per disk of the last such listing), and the
 * last loop list, disk-set key and `tables: "kept"` listing, each kept until the next uevent (uevent-keyed.ts).
 */
export function createBlockReads(options: { log?: Pick<UndoLog, "warning">; deviceGate?: DeviceGate } = {}): BlockReads {
  const log = options.log ?? { warning: (msg: string) => process.stderr.write(`${msg}\n`) };
  /** Every read of a table off a device, under its disk's gate when there is one (device-gate.ts). */
  const gate = options.deviceGate;
  const readOff = (devPath: string, lbs: number, size: bigint, listing = false) =>
    gate ? gate.run(devPath, "the partition table read", () => readPartitionTable(devPath, lbs, size), { listing }) : readPartitionTable(devPath, lbs, size);
  /**
   * Per device node: the partition table last read off it and the medium (diskseq) and sysfs layout it
   * was read at, and the last read error logged with when. One entry each per device node name.
   */
  const lastRead = new Map<string, { key: string; table: PartitionTable | null }>();
  const lastLogged = new Map<string, { message: string; at: number }>();
  /**
   * Reads a table off the device. When that fails (an I/O error, partition-table.ts's message) the
   * failure is logged (once per message per device and {@link READ_ERROR_LOG_MS}) and the table last read off
   * the same medium with the same partitions is answered, as the kernel still uses it; without one
   * the error is thrown (readBlockDisk keeps it as the disk's tableError).
   */
  const tableReader = (listing: boolean): TableReader => async (devPath, lbs, size, layout) => {
    const key = layout.seq === null ? null : `${layout.seq}|${lbs}|${size}|${layout.partitions}`;
    try {
      const table = await readOff(devPath, lbs, size, listing);
      if (key) lastRead.set(devPath, { key, table });
      else lastRead.delete(devPath);
      return table;
    } catch (err) {
      const kept = key ? lastRead.get(devPath) : undefined;
      const message = err instanceof Error ? err.message : String(err);
      const logged = lastLogged.get(devPath);
      const now = Date.now();
      if (logged?.message !== message || now - logged.at > READ_ERROR_LOG_MS) {
        lastLogged.set(devPath, { message, at: now });
        log.warning(kept?.key === key ? `${message}; using the table last read off it (same medium, diskseq ${layout.seq}, same partitions)` : message);
      }
      if (kept && kept.key === key) return kept.table;
      throw err;
    }
  };
  /** As fresh as reading /proc/self/mountinfo on every call (mount-table-cache.ts), parsed only after a change; shared by the process. */
  const mountTable = processMountTable();
  /** readMounts' answer per table version (the table array is the version): built once per mount change. */
  const blockMounts = new WeakMap<readonly MountEntry[], Promise<BlockMount[]>>();
  /** Per loop device name: what its backing file was stat'ed as, for one medium (diskseq) and path. */
  const loopBacking = new Map<string, { key: string; backing: LoopDevice["backing"] }>();
  /** The last loop list and disk-set key: L and D sysfs reads, once per uevent instead of once per call. */
  const loopList = new UeventKeyed<Promise<LoopDevice[]>>();
  const diskSet = new UeventKeyed<string | undefined>();
  /** A disk named by the call waits for its table (up to device-gate.ts' give-up); a listing across disks skips a stuck one. */
  const readTable = tableReader(false);
  const listingTable = tableReader(true);
  /** Per device node: the partition table last read off it and the sysfs layout it was read at; only disks of the last kept listing. */
  const keptTables = new Map<string, { key: string; table: Promise<PartitionTable | null> }>();
  const keptTable: TableReader = (devPath, lbs, size, layout) => {
    if (layout.seq === null) return listingTable(devPath, lbs, size, layout);
    const key = `${layout.seq}|${lbs}|${size}|${layout.partitions}`;
    const kept = keptTables.get(devPath);
    if (kept?.key === key) return kept.table;
    const table = listingTable(devPath, lbs, size, layout);
    const entry = { key, table };
    keptTables.set(devPath, entry);
    table.catch(() => {
      if (keptTables.get(devPath) === entry) keptTables.delete(devPath);
    });
    return table;
  };

  /** The last `tables: "kept"` listing, until the next uevent. */
  const keptListing = new UeventKeyed<Promise<BlockDisk[]>>();
  const listKept = async () => {
    const disks = await listBlockDisks({ withMedium: true, readTable: keptTable });
    const listed = new Set(disks.map((d) => d.devPath));
    for (const devPath of keptTables.keys()) if (!listed.has(devPath)) keptTables.delete(devPath);
    return disks;
  };

  return {
    listDisks(options = {}) {
      if (options.tables === "kept") return keptListing.get(listKept);
      return listBlockDisks({ withMedium: true, readTable: options.tables === false ? async () => null : listingTable, ...(options.partitions === false ? { identityOnly: true } : {}) });
    },

    /** The sysfs link is resolved synchronously (sysfs is generated in memory, as sysfs-block.ts explains). */
    async findDisk(dev) {
      let name: string;
      try {
        name = path.basename(realpathSync(`/sys/dev/block/${dev.major}:${dev.minor}`));
      } catch {
        return null;
      }
      // Partitions have a /sys/dev/block entry too, but no /sys/block one.
      return existsSync(path.join(SYS_BLOCK, name)) ? readBlockDisk(name, { readTable }) : null;
    },

    /** From sysfs, synchronously (in memory). */
    diskOfDevice(dev) {
      let real: string;
      try {
        real = realpathSync(`/sys/dev/block/${dev.major}:${dev.minor}`);
      } catch {
        return null;
      }
      const diskDir = existsSync(path.join(real, "partition")) ? path.dirname(real) : real;
      if (!existsSync(path.join(SYS_BLOCK, path.basename(diskDir)))) return null;
      const [major, minor] = kernelText(path.join(diskDir, "dev")).trim().split(":").map(Number);
      return Number.isInteger(major) && Number.isInteger(minor) ? { major, minor } : null;
    },

    /** Names and media (diskseq) of every /sys/block entry, read synchronously (in memory): one read per device, once per uevent. */
    diskSetKey() {
      return diskSet.get(readDiskSetKey);
    },

    /** {@link blockMountsOf} of the current table, built once per mount table version. */
    async readMounts() {
      const table = await mountTable.table();
      let mounts = blockMounts.get(table);
      if (!mounts) {
        const building = blockMountsOf(table);
        mounts = building;
        blockMounts.set(table, building);
        building.catch(() => blockMounts.delete(table));
      }
      return mounts;
    },

    listLoops(options = {}) {
      return loopList.get(() => readLoops(loopBacking), options.fresh === true);
    },

    async kernelFilesystems() {
      const text = await readFile("/proc/filesystems", "utf8").catch(() => "");
      return new Set(text.split("\n").map((l) => l.split("\t").pop()?.trim() ?? "").filter(Boolean));
    },

    readPartitionTable(disk) {
      return readOff(disk.devPath, disk.logicalBlockSize, disk.sizeBytes);
    },
  };
}

/** Names and media (diskseq) of every /sys/block entry; undefined when one has no diskseq. */
function readDiskSetKey(): string | undefined {
  let names: string[];
  try {
    names = readdirSync(SYS_BLOCK);
  } catch {
    return undefined;
  }
  const parts: string[] = [];
  for (const name of names.sort()) {
    const seq = kernelText(path.join(SYS_BLOCK, name, "diskseq")).trim();
    if (!seq) return undefined;
    parts.push(`${name}=${seq}`);
  }
  return parts.join(" ");
}

/**
 * Every attached loop device: sysfs read synchronously; the backing files are stat'ed concurrently (a
 * backing file may sit on a slow filesystem), each once per medium and path (`loopBacking`).
 */
async function readLoops(loopBacking: Map<string, { key: string; backing: LoopDevice["backing"] }>): Promise<LoopDevice[]> {
  let names: string[];
  try {
    names = readdirSync(SYS_BLOCK).filter((n) => n.startsWith("loop"));
  } catch {
    names = [];
  }
  const loops = await Promise.all(
    names.map(async (name): Promise<LoopDevice | null> => {
      const dir = path.join(SYS_BLOCK, name);
      const backingFile = kernelText(path.join(dir, "loop/backing_file")).replace(/\n$/, "");
      if (!backingFile) return null; // not attached
      const [major, minor] = kernelText(path.join(dir, "dev")).trim().split(":").map(Number);
      const num = (f: string) => BigInt(kernelText(path.join(dir, f)).trim() || "0");
      const sizeBytes = num("size") * 512n;
      const offsetBytes = num("loop/offset");
      // The file an attached loop device holds open cannot change under the same medium (diskseq)
      // and path (backing_file follows renames; LOOP_CHANGE_FD changes the path): stat'ed once per pair.
      const seq = kernelText(path.join(dir, "diskseq")).trim();
      const key = seq ? `${seq} ${backingFile}` : "";
      let backing: LoopDevice["backing"] = null;
      const known = key ? loopBacking.get(name) : undefined;
      if (known && known.key === key) backing = known.backing;
      else if (!backingFile.endsWith(" (deleted)")) {
        const st = await stat(backingFile, { bigint: true }).catch(() => null);
        if (st?.isBlockDevice()) backing = { kind: "block", dev: decodeDev(st.rdev) };
        else if (st) backing = { kind: "file", dev: decodeDev(st.dev), ino: st.ino };
        if (key && st) loopBacking.set(name, { key, backing });
      }
      return { name, devPath: `/dev/${name}`, major, minor, sizeBytes, offsetBytes, backingFile, backing };
    }),
  );
  return loops.filter((l): l is LoopDevice => l !== null);
}
