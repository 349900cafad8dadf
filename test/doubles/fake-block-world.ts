/**
 * A stateful in-memory model of a Linux host's block devices, behind the fake Linux block tools
 * (test/doubles/fake-block-tools.ts) and the unit tests of the Linux disk and volume hosts.
 *
 * It behaves like the real host where that matters for the services' decisions: partitions appear
 * only after the kernel is told (sfdisk/partx), mkfs refuses a device that already has a signature
 * or is mounted (the tools' own safety nets), mount needs an existing directory, xfs grows only
 * while mounted, disks grow only after a rescan. Every mutating host call is logged in `calls`;
 * `failNext(method, error)` injects a failure.
 */
import type { BlockDisk, BlockMount, BlockPartition, DeviceOpener, DevNumber, ManagedFsType, OfflineMark, PartitionTable, ProbeResult } from "../../src/host/linux/block/block-types.ts";
import type { FilesystemUsage } from "../../src/host/linux/block/filesystem-tools.ts";
import { internal, notFound, failedPrecondition } from "../../src/errors.ts";
import { FakeCallLog } from "./fake-call-log.ts";

const MiB = 1024n * 1024n;

/** What a device holds, as blkid would report it. */
export type FakeContent =
  | { kind: "fs"; type: string; sizeBytes: bigint; usedBytes: bigint; data: string[] }
  | { kind: "signature"; type: string; usage: string }
  | { kind: "ambivalent" };

export interface FakePartition {
  number: number;
  startSectors: bigint;
  sizeSectors: bigint;
  uuid: string;
  typeId: string;
  minor: number;
  holders: string[];
}

/** What sysfs shows of a disk (its partitions and table are modelled below). */
type SysfsDisk = Omit<BlockDisk, "devPath" | "removable" | "partitions" | "partitionTable">;

export interface FakeDisk extends SysfsDisk {
  /** Capacity the medium has grown to, applied by a rescan (SCSI) or capacity refresh (loop). */
  pendingSizeBytes?: bigint;
  table: { type: "gpt" | "dos"; entries: FakePartition[]; backupAtEnd: boolean; mbrSignature: string } | null;
  /** Whether the kernel shows the table's partitions (false: written but not yet re-read). */
  kernelSeesPartitions: boolean;
  /** Whole-disk content (a filesystem or signature without partition table). */
  content: FakeContent | null;
}

export type FakeDiskInit = Partial<Omit<FakeDisk, "name" | "major" | "minor">> & { name: string; major: number; minor: number };

export class FakeBlockWorld extends FakeCallLog {
  uid = 0;
  capabilities = new Set(["CAP_SYS_ADMIN", "CAP_SYS_RESOURCE"]);
  disks: FakeDisk[] = [];
  mounts: BlockMount[] = [];
  /** Mounts in other mount namespaces (a container's, another daemon's): not in `mounts`, seen only through /proc/<pid>/mountinfo. */
  otherNamespaceMounts: (DevNumber & { pid: number; mountPoint: string })[] = [];
  swaps: DevNumber[] = [];
  /** Processes holding device nodes open or mapped (what the opener scan would report after its settle time). */
  openers: DeviceOpener[] = [];
  marks: OfflineMark[] = [];
  scsiHosts: number[] = [];
  /** Existing directories and how many entries each has. */
  dirs = new Map<string, number>();
  /** Content of partitions, by "major:minor". */
  partitionContent = new Map<string, FakeContent | null>();
  private nextPartMinor = 0;
  private nextUuid = 1;
  private nextTemp = 1;

  addDisk(init: FakeDiskInit): FakeDisk {
    const disk: FakeDisk = {
      diskSeq: "1",
      sizeBytes: 1024n * MiB,
      logicalBlockSize: 512,
      readOnly: false,
      loopBackingFile: null,
      scsiAddress: null,
      scsiState: null,
      serial: null,
      vpdPage80: null,
      vpdPage83: null,
      wwid: null,
      holders: [],
      table: null,
      kernelSeesPartitions: true,
      content: null,
      ...init,
    };
    this.disks.push(disk);
    return disk;
  }

  /** A loop device on `backingFile` (major 7). */
  addLoop(index: number, backingFile: string, sizeBytes = 1024n * MiB): FakeDisk {
    return this.addDisk({ name: `loop${index}`, major: 7, minor: index, loopBackingFile: backingFile, sizeBytes });
  }

  disk(name: string): FakeDisk {
    const d = this.disks.find((x) => x.name === name);
    if (!d) throw new Error(`fake: no disk ${name}`);
    return d;
  }

  /** Gives a disk a table with one partition per size (in MiB, 1 MiB aligned), all kernel-visible. */
  partition(name: string, sizesMiB: number[], type: "gpt" | "dos" = "gpt", typeId?: string): FakePartition[] {
    const disk = this.disk(name);
    disk.table = { type, entries: [], backupAtEnd: true, mbrSignature: "0badcafe" };
    disk.kernelSeesPartitions = true;
    let start = 2048n;
    for (const mib of sizesMiB) {
      const size = BigInt(mib) * 2048n;
      this.addEntry(disk, start, size, typeId ?? (type === "gpt" ? "0fc63daf-8483-4772-8e79-3d69d8477de4" : "0x83"));
      start += size;
    }
    return disk.table.entries;
  }

  private addEntry(disk: FakeDisk, start: bigint, size: bigint, typeId: string): FakePartition {
    const table = disk.table!;
    const number = table.entries.length + 1;
    const uuid =
      table.type === "gpt" ? `00000000-0000-4000-8000-${(this.nextUuid++).toString(16).padStart(12, "0")}` : `${table.mbrSignature}-${number.toString(16).padStart(2, "0")}`;
    const p: FakePartition = { number, startSectors: start, sizeSectors: size, uuid, typeId, minor: this.nextPartMinor++, holders: [] };
    table.entries.push(p);
    this.partitionContent.set(`259:${p.minor}`, null);
    return p;
  }

  devPathOf(disk: FakeDisk, p?: FakePartition): string {
    if (!p) return `/dev/${disk.name}`;
    return `/dev/${disk.name}${/\d$/.test(disk.name) ? "p" : ""}${p.number}`;
  }

  /** Finds a device node: a disk or a partition. */
  find(devPath: string): { disk: FakeDisk; part?: FakePartition } {
    for (const disk of this.disks) {
      if (this.devPathOf(disk) === devPath) return { disk };
      for (const part of disk.table?.entries ?? []) {
        if (this.kernelShows(disk) && this.devPathOf(disk, part) === devPath) return { disk, part };
      }
    }
    throw notFound(`fake: ${devPath}: no such device`);
  }

  private kernelShows(disk: FakeDisk) {
    return disk.kernelSeesPartitions && disk.table !== null;
  }

  devOf(devPath: string): DevNumber {
    const { disk, part } = this.find(devPath);
    return part ? { major: 259, minor: part.minor } : { major: disk.major, minor: disk.minor };
  }

  contentOf(devPath: string): FakeContent | null {
    const { disk, part } = this.find(devPath);
    return part ? (this.partitionContent.get(`259:${part.minor}`) ?? null) : disk.content;
  }

  setContent(devPath: string, content: FakeContent | null): void {
    const { disk, part } = this.find(devPath);
    if (part) this.partitionContent.set(`259:${part.minor}`, content);
    else disk.content = content;
  }

  /** A filesystem with some data on a device (for "data still intact" checks). */
  putFilesystem(devPath: string, type: string, data: string[] = ["precious"]): void {
    this.setContent(devPath, { kind: "fs", type, sizeBytes: this.sizeOf(devPath), usedBytes: 10n * MiB, data });
  }

  sizeOf(devPath: string): bigint {
    const { disk, part } = this.find(devPath);
    return part ? part.sizeSectors * 512n : disk.sizeBytes;
  }

  mkdir(path: string, entries = 0): void {
    this.dirs.set(path, entries);
  }

  /** Mounts directly (an administrator's mount, not through the service). */
  mountDirect(devPath: string, mountPoint: string): void {
    const content = this.contentOf(devPath);
    const dev = this.devOf(devPath);
    this.mounts.push({ ...dev, mountPoint, fsType: content?.kind === "fs" ? content.type : "unknown", source: devPath });
  }

  /* ---------------------------------------------------------------- views the hosts report */

  blockDisks(): BlockDisk[] {
    return this.disks.map((d) => {
      const shown = this.kernelShows(d);
      const partitions: BlockPartition[] = shown
        ? d.table!.entries.map((p) => ({
            name: this.devPathOf(d, p).slice(5),
            devPath: this.devPathOf(d, p),
            major: 259,
            minor: p.minor,
            number: p.number,
            startSectors: p.startSectors,
            sizeSectors: p.sizeSectors,
            uuid: p.uuid,
            typeId: p.typeId,
            holders: [...p.holders],
            readOnly: d.readOnly,
          }))
        : [];
      return {
        name: d.name,
        devPath: this.devPathOf(d),
        major: d.major,
        minor: d.minor,
        diskSeq: d.diskSeq,
        sizeBytes: d.sizeBytes,
        logicalBlockSize: d.logicalBlockSize,
        readOnly: d.readOnly,
        removable: false,
        loopBackingFile: d.loopBackingFile,
        scsiAddress: d.scsiAddress,
        scsiState: d.scsiState,
        serial: d.serial,
        vpdPage80: d.vpdPage80,
        vpdPage83: d.vpdPage83,
        wwid: d.wwid,
        holders: [...d.holders],
        partitions,
        partitionTable: shown ? this.tableView(d) : null,
      };
    });
  }

  tableView(d: FakeDisk): PartitionTable | null {
    if (!d.table) return null;
    return {
      type: d.table.type,
      entries: d.table.entries.map((p) => ({ number: p.number, startSectors: p.startSectors, sizeSectors: p.sizeSectors, uuid: p.uuid, typeId: p.typeId })),
      ...(d.table.type === "gpt" ? { backupAtEnd: d.table.backupAtEnd, trailerSectors: 33n, lastUsableSectors: d.sizeBytes / 512n - 34n } : {}),
    };
  }

  probe(devPath: string): ProbeResult {
    const { disk, part } = this.find(devPath);
    if (!part && disk.table) return { kind: "found", type: null, usage: null, ptType: disk.table.type };
    const c = this.contentOf(devPath);
    if (!c) return { kind: "empty" };
    if (c.kind === "ambivalent") return { kind: "ambivalent", detail: "ext4, xfs" };
    if (c.kind === "fs") return { kind: "found", type: c.type, usage: "filesystem", ptType: null };
    return { kind: "found", type: c.type, usage: c.usage, ptType: null };
  }

  /* ---------------------------------------------------------------- mutations the hosts perform */

  createGptTable(devPath: string): void {
    const { disk } = this.find(devPath);
    disk.table = { type: "gpt", entries: [], backupAtEnd: true, mbrSignature: "00000000" };
    disk.content = null;
    disk.kernelSeesPartitions = true;
  }

  appendPartition(devPath: string, typeId: string): void {
    const { disk } = this.find(devPath);
    if (!disk.table) throw internal(`fake sfdisk: ${devPath} has no partition table`);
    const last = disk.table.entries.at(-1);
    const start = last ? last.startSectors + last.sizeSectors : 2048n;
    const end = disk.sizeBytes / 512n - (disk.table.type === "gpt" ? 33n : 0n);
    if (end - start < 2048n) throw internal(`fake sfdisk: no free space on ${devPath}`);
    this.addEntry(disk, start, ((end - start) / 2048n) * 2048n, typeId);
    disk.table.backupAtEnd = true;
    disk.kernelSeesPartitions = true;
  }

  applyPendingSize(disk: FakeDisk): void {
    if (disk.pendingSizeBytes !== undefined) {
      disk.sizeBytes = disk.pendingSizeBytes;
      delete disk.pendingSizeBytes;
      if (disk.table?.type === "gpt") disk.table.backupAtEnd = false;
    }
  }

  /** The medium grows (backing file truncated larger, cloud disk expanded); visible after a rescan. */
  growMedium(name: string, sizeBytes: bigint): void {
    this.disk(name).pendingSizeBytes = sizeBytes;
  }

  /** As mkfs: refuses a device mounted in any namespace; an existing filesystem only with `replace` and of the same type. */
  makeFilesystem(devPath: string, fsType: ManagedFsType, replace = false): void {
    const dev = this.devOf(devPath);
    if ([...this.mounts, ...this.otherNamespaceMounts].some((m) => m.major === dev.major && m.minor === dev.minor)) throw failedPrecondition(`fake mkfs: ${devPath} is mounted`);
    const old = this.contentOf(devPath);
    if (old && !(replace && old.kind === "fs" && old.type === fsType)) throw internal(`fake mkfs.${fsType}: ${devPath} contains an existing filesystem`);
    this.setContent(devPath, { kind: "fs", type: fsType, sizeBytes: this.sizeOf(devPath), usedBytes: 1n * MiB, data: [] });
  }

  mount(devPath: string, target: string, fsType: string): void {
    if (!this.dirs.has(target)) throw notFound(`fake mount: ${target} does not exist`);
    const c = this.contentOf(devPath);
    if (c?.kind !== "fs" || c.type !== fsType) throw internal(`fake mount: wrong fs type ${fsType} on ${devPath}`);
    this.mounts.push({ ...this.devOf(devPath), mountPoint: target, fsType, source: devPath });
  }

  unmount(target: string): void {
    const i = this.mounts.findLastIndex((m) => m.mountPoint === target);
    if (i < 0) throw internal(`fake umount: ${target}: not mounted`);
    this.mounts.splice(i, 1);
  }

  fsOf(devPath: string): Extract<FakeContent, { kind: "fs" }> {
    const c = this.contentOf(devPath);
    if (c?.kind !== "fs") throw internal(`fake: no filesystem on ${devPath}`);
    return c;
  }

  statfs(mountPoint: string): FilesystemUsage {
    const m = this.mounts.findLast((x) => x.mountPoint === mountPoint);
    if (!m) throw notFound(`fake statfs: ${mountPoint} not mounted`);
    const fs = this.fsOf(m.source);
    return { totalBytes: fs.sizeBytes, freeBytes: fs.sizeBytes - fs.usedBytes };
  }

  resizePartition(diskDevPath: string, number: number, sizeSectors: bigint): void {
    const { disk } = this.find(diskDevPath);
    const p = disk.table?.entries.find((e) => e.number === number);
    if (!p) throw internal(`fake sfdisk: no partition ${number}`);
    if (disk.table!.type === "gpt" && !disk.table!.backupAtEnd && p.startSectors + sizeSectors > disk.sizeBytes / 512n - 33n - 1000n) {
      // sfdisk would fix the backup header itself; the fake insists on the explicit relocation so the service's decision is visible.
      throw internal("fake sfdisk: backup GPT header not at the end of the disk");
    }
    p.sizeSectors = sizeSectors;
  }

  growFilesystem(devPath: string, fsType: ManagedFsType, mountPoint: string | null): void {
    const fs = this.fsOf(devPath);
    if (fsType === "xfs" && !mountPoint) throw internal("fake xfs_growfs: not mounted");
    fs.sizeBytes = this.sizeOf(devPath);
  }

  makeTempDir(): string {
    const p = `/run/fake-csi-proxy-tmp-${this.nextTemp++}`;
    this.dirs.set(p, 0);
    return p;
  }
}
