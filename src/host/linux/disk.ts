/**
 * The disk group's host on Linux block devices ({@link DiskHostApi}): every answer is read from
 * sysfs, procfs, the partition table or blkid through {@link DiskTools} and interpreted by
 * the interpreting rooms (disk-numbers.ts, disk-ids.ts, block-snapshot.ts…); every operation is one tool step. Decisions are disk-service.ts's
 * (policy/block-policy.ts): before each write the host hands the facts of a fresh reading to the
 * service's check and refuses nothing itself (the kernel's exclusive claim and sfdisk keep theirs).
 * docs/linux-concept-map.md says what each concept means here.
 */
import type { DiskFacts, DiskHostApi, DiskLayout, DiskWriteCheck, HostDisk, HostPartition, UnfinishedStep } from "../../groups/disk/host-api.ts";
import type { SignatureFact } from "../../policy/host-device.ts";
import { describeIntent, toolMayRun, type IntentRecords } from "../../state/intent-records.ts";
import { persistentDiskKey } from "./block/device-identity.ts";
import type { DiskIds } from "../../groups/disk/types.ts";
import { internal } from "../../errors.ts";
import type { BlockDisk, PartitionTable } from "./block/block-types.ts";
import type { BlockReads } from "./block/block-reads.ts";
import type { SignatureProbe } from "./block/signature-probe.ts";
import type { DeviceClaims } from "./block/device-claims.ts";
import type { Partitioning } from "./block/partitioning.ts";
import type { DeviceState, OfflineMarks } from "./block/device-state.ts";
import type { Privileges } from "./kernel/privileges.ts";
import { SnapshotSessions } from "./block/snapshot-session.ts";
import { callSignal } from "../../util/call-scope.ts";
import { NOTHING_CHANGED, stopIfAborted } from "../../util/stop-if-aborted.ts";
import { deviceUse, noUse } from "./block/device-use.ts";
import { devOfDiskNumber, diskNumberOf, visibleDisks } from "./block/disk-numbers.ts";
import { diskIds, diskLocation } from "./block/disk-ids.ts";
import { isDiskOnline, liveMarks, markOf } from "./block/disk-online.ts";
import { isReservedPartition, LINUX_DATA_GPT_TYPE, LINUX_DATA_MBR_TYPE } from "./block/partition-types.ts";
import { contentSignatures, describeSignatures } from "../../policy/block-policy.ts";
import { requireDisk, takeSnapshot, type BlockSnapshot } from "./block/block-snapshot.ts";
import { rootRequirement } from "./kernel/root-requirement.ts";

const styleOf = (t: PartitionTable) => (t.type === "gpt" ? "gpt" : "mbr");

/** What must not change between a disk's look-up and a write to it: its number, medium and size. */
const identityOf = (d: BlockDisk) => `${d.major}:${d.minor} diskseq ${d.diskSeq ?? "-"} size ${d.sizeBytes}`;

/** What blkid found on a disk without partition table, for messages: "ext4 (filesystem)". */
function signature(type: string | null, usage: string | null): string {
  return [type, usage && `(${usage})`].filter(Boolean).join(" ") || "an unknown signature";
}

/**
 * Between two steps of a write: stops (the call's DeadlineExceeded/Cancelled, saying where and
 * what was changed) when the call was aborted (util/call-scope.ts), so no later step starts.
 */
const beforeStep = (before: string, done = NOTHING_CHANGED) => stopIfAborted(callSignal(), { before, done });

/** The block tools the disk host uses (linux-block-tools.ts has them all). */
export type DiskTools = BlockReads & SignatureProbe & DeviceClaims & Partitioning & DeviceState & OfflineMarks & Privileges;

/** The signature types `sfdisk` writing an empty GPT can leave, whole or in part (backup header first, then primary, then the protective MBR). */
const GPT_WRITE_LEAVES = ["gpt", "PMBR"];

export interface LinuxDiskHostOptions {
  /** Intent records of the table writes (state/intent-records.ts); none: no record is kept or read. */
  intents?: IntentRecords;
  /** Where a redone step is told (warning). */
  log?: { warning(msg: string): void };
}

export class LinuxDiskHost implements DiskHostApi {
  readonly #tools: DiskTools;
  readonly #intents: IntentRecords | undefined;
  readonly #log: LinuxDiskHostOptions["log"];

  readonly #sessions: SnapshotSessions;

  constructor(tools: DiskTools, options: LinuxDiskHostOptions = {}) {
    this.#tools = tools;
    this.#intents = options.intents;
    this.#log = options.log;
    this.#sessions = new SnapshotSessions((dev, options) => takeSnapshot(tools, dev, options));
  }

  /** Runs one operation of the service (under the disk's lock): its reads share one snapshot, its writes verify on their own (snapshot-session.ts). */
  session<T>(fn: () => Promise<T>): Promise<T> {
    return this.#sessions.run(fn);
  }

  missingPrivilege(): string | null {
    return rootRequirement(this.#tools.effectiveUid());
  }

  /** A snapshot holding just disk `n`, and that disk (NotFound when it is not a disk with a medium). */
  async #disk(n: number): Promise<{ snap: BlockSnapshot; disk: BlockDisk }> {
    const snap = await this.#sessions.read(devOfDiskNumber(n));
    return { snap, disk: requireDisk(snap, n) };
  }

  #hostDisk(snap: BlockSnapshot, disk: BlockDisk): HostDisk {
    return {
      number: diskNumberOf(disk),
      name: disk.devPath,
      location: diskLocation(disk),
      sizeBytes: disk.sizeBytes,
      online: isDiskOnline(snap, disk),
      use: deviceUse(snap, disk, disk),
      identity: identityOf(disk),
    };
  }

  /** The table's entries, online when the kernel shows them (with their uses); partitions the kernel shows without an entry too. */
  #partitions(snap: BlockSnapshot, disk: BlockDisk, table: PartitionTable | null): HostPartition[] {
    const entries = table?.entries ?? [];
    const out: HostPartition[] = entries.map((e) => {
      const kernel = disk.partitions.find((p) => p.number === e.number);
      return {
        number: e.number,
        name: kernel?.devPath ?? `${disk.devPath} partition ${e.number}`,
        type: e.typeId ?? "unknown",
        reserved: isReservedPartition(e),
        online: kernel !== undefined,
        use: kernel ? deviceUse(snap, kernel, disk) : noUse(),
      };
    });
    for (const p of disk.partitions) {
      if (entries.some((e) => e.number === p.number)) continue;
      out.push({ number: p.number, name: p.devPath, type: p.typeId ?? "unknown", reserved: isReservedPartition(p), online: true, use: deviceUse(snap, p, disk) });
    }
    return out.sort((a, b) => a.number - b.number);
  }

  async listDisks(): Promise<HostDisk[]> {
    const snap = await this.#sessions.read();
    return snap.disks.map((d) => this.#hostDisk(snap, d));
  }

  /** From sysfs alone: identifiers need no partition, partition table, mount or loop list (a few reads per disk; the rest per medium, cached). */
  async listDiskIds(): Promise<Map<number, DiskIds>> {
    const out = new Map<number, DiskIds>();
    for (const disk of visibleDisks(await this.#tools.listDisks({ tables: false, partitions: false }))) out.set(diskNumberOf(disk), diskIds(disk));
    return out;
  }

  async getDisk(n: number): Promise<HostDisk> {
    const { snap, disk } = await this.#disk(n);
    return this.#hostDisk(snap, disk);
  }

  /** From the kernel's partitions and the table read off the device; a disk the kernel shows no partitions on needs {@link probeDiskLayout}. */
  getDiskLayout(n: number): Promise<DiskLayout> {
    return this.#layout(n, false);
  }

  /** RAW means no signature at all (blkid): a disk without partition table may well hold a filesystem. */
  probeDiskLayout(n: number): Promise<DiskLayout> {
    return this.#layout(n, true);
  }

  async #layout(n: number, probeContent: boolean): Promise<DiskLayout> {
    const { snap, disk } = await this.#disk(n);
    const hostDisk = this.#hostDisk(snap, disk);
    let unfinished: UnfinishedStep | undefined;
    const layout = (partitionStyle: DiskLayout["partitionStyle"], content: string | null, table: PartitionTable | null = null): DiskLayout => ({
      disk: hostDisk,
      partitionStyle,
      content,
      partitions: this.#partitions(snap, disk, table),
      ...(unfinished && { unfinished }),
    });
    if (disk.partitions.length > 0) {
      const table = disk.partitionTable;
      return table ? layout(styleOf(table), null, table) : layout("unknown", `the kernel shows partitions but the partition table cannot be read${disk.tableError ? ` (${disk.tableError})` : ""}`);
    }
    if (!probeContent) return layout(null, null);
    const [probe, sigs] = await Promise.all([this.#tools.probe(disk.devPath), this.#tools.listSignatures(disk.devPath)]);
    unfinished = await this.#unfinished(disk.devPath, sigs);
    // Anything but a partition table, wherever libblkid finds it, is content (a whole-disk exFAT also reports PTTYPE=dos).
    const content = contentSignatures(sigs);
    if (probe.kind === "ambivalent") return layout("raw", `conflicting signatures (${probe.detail})`);
    if (probe.kind === "found" && probe.type) return layout("raw", signature(probe.type, probe.usage) + (probe.ptType ? ` behind a ${probe.ptType} partition-table signature` : ""));
    if (content.length) return layout("raw", `signatures ${describeSignatures(sigs)}`);
    if (probe.kind === "empty") return sigs.length ? layout("raw", `signatures ${describeSignatures(sigs)}`) : layout("raw", null);
    const table = await this.#tools.readPartitionTable(disk);
    return table ? layout(styleOf(table), null, table) : layout("unknown", `blkid reports a ${probe.ptType} partition table, which csi-proxy cannot read`);
  }

  async listPartitions(n: number): Promise<HostPartition[]> {
    const { snap, disk } = await this.#disk(n);
    const table = disk.partitions.length > 0 ? disk.partitionTable : await this.#tools.readPartitionTable(disk);
    return this.#partitions(snap, disk, table);
  }

  /**
   * Re-reads disk `n` at the moment of a write — with the processes holding its nodes (unless
   * `openers` is false) and, for a
   * partition-table write (`signatures`), every signature on the whole disk — and hands the facts of
   * that reading to the service's `check` (same disk, same refusals), which rejects to stop the write.
   * The host decides nothing here.
   */
  async #verifyWrite(n: number, check: DiskWriteCheck, options: { signatures: boolean; openers?: boolean; everyDisk?: boolean }): Promise<{ snap: BlockSnapshot; disk: BlockDisk }> {
    const snap = await this.#sessions.fresh(options.everyDisk ? undefined : devOfDiskNumber(n), { openers: options.openers ?? true });
    const disk = requireDisk(snap, n);
    const facts: DiskFacts = { disk: this.#hostDisk(snap, disk), partitions: this.#partitions(snap, disk, disk.partitionTable) };
    if (options.signatures) {
      facts.signatures = await this.#tools.listSignatures(disk.devPath);
      const u = await this.#unfinished(disk.devPath, facts.signatures);
      if (u?.onlyItsOwn) facts.unfinished = { intent: u.intent, writes: u.writes };
    }
    await check(facts);
    return { snap, disk };
  }

  /** A partition-table write, verified: the service's check, then the kernel's exclusive claim on the whole disk taken and released (nothing holds any part of it; sfdisk takes it again itself). */
  async #verifyTableWrite(n: number, check: DiskWriteCheck): Promise<BlockDisk> {
    const { disk } = await this.#verifyWrite(n, check, { signatures: true });
    beforeStep(`the exclusive-claim check of ${disk.devPath}`);
    await (await this.#tools.claimExclusive(disk.devPath, disk)).release();
    return disk;
  }

  /** The intent record on the disk at `devPath`, as a fact: its step, what it can leave, whether only that is there and its tool is gone. */
  async #unfinished(devPath: string, sigs: readonly SignatureFact[]): Promise<UnfinishedStep | undefined> {
    if (!this.#intents) return undefined;
    const found = await this.#intents.find(await persistentDiskKey(devPath));
    if (!found) return undefined;
    const running = toolMayRun(found.record);
    return {
      intent: describeIntent(found.file, found.record) + (running ? "; its tool may still be running" : ""),
      writes: found.record.writes,
      onlyItsOwn: !running && sigs.length > 0 && sigs.every((s) => found.record.writes.includes(s.type)),
    };
  }

  /** The GPT write, with its intent record written before sfdisk starts and removed once its end is seen. */
  async #initializeDisk(n: number, check: DiskWriteCheck): Promise<void> {
    let facts: DiskFacts | undefined;
    const disk = await this.#verifyTableWrite(n, async (f) => {
      facts = f;
      await check(f);
    });
    beforeStep(`writing a GPT partition table to ${disk.devPath}`);
    if (!this.#intents) return this.#tools.createGptTable(disk.devPath);
    const before = facts?.signatures?.length ? `signatures ${describeSignatures(facts.signatures)}` : "no signature";
    if (facts?.unfinished) this.#log?.warning(`PartitionDisk of ${disk.devPath}: redoing a GPT table write whose end nobody saw (${facts.unfinished.intent}): the disk holds only what that write leaves (${before})`);
    await this.#intents.during(
      { deviceKey: await persistentDiskKey(disk.devPath), devPath: disk.devPath, operation: "write an empty GPT partition table", writes: GPT_WRITE_LEAVES, before, command: `sfdisk ${disk.devPath} (label: gpt)` },
      (spawned) => this.#tools.createGptTable(disk.devPath, spawned),
    );
  }

  async #createDataPartition(n: number, style: "gpt" | "mbr", check: DiskWriteCheck): Promise<void> {
    const disk = await this.#verifyTableWrite(n, check);
    beforeStep(`adding a partition to ${disk.devPath}`);
    // Linux types, so that Linux tools and udev treat the partition normally. appendPartition also
    // synchronises the kernel's partitions.
    await this.#tools.appendPartition(disk.devPath, style === "gpt" ? LINUX_DATA_GPT_TYPE : LINUX_DATA_MBR_TYPE);
  }

  async refreshDisk(): Promise<void> {
    // Nothing to do: partition tables csi-proxy writes are synchronised with the kernel as they are written.
  }

  async #onlinePartition(n: number, partitionNumber: number): Promise<void> {
    const { disk } = await this.#disk(n);
    beforeStep(`telling the kernel about the partitions of ${disk.devPath} (partx)`);
    await this.#tools.syncPartitions(disk.devPath);
    this.#sessions.changed();
    if (!(await this.#disk(n)).disk.partitions.some((p) => p.number === partitionNumber)) {
      throw internal(`disk ${n} (${disk.devPath}) has partition ${partitionNumber} in its table, but the kernel does not show it`);
    }
  }

  async #scanForDisks(): Promise<number[]> {
    for (const host of await this.#tools.listScsiHosts()) {
      beforeStep(`scanning SCSI host ${host} for disks`, "the SCSI hosts before it were scanned (a scan only adds disks the host already has)");
      await this.#tools.scanScsiHost(host);
    }
    // SCSI disks re-read their capacity, loop devices their backing file's size, one by one.
    this.#sessions.changed();
    return (await this.#sessions.read()).disks.filter((d) => d.scsiAddress || d.loopBackingFile).map(diskNumberOf);
  }

  /** A disk that disappears before or while its size is refreshed needs no refresh: success. */
  async #refreshDiskSize(n: number): Promise<void> {
    const disk = await this.#tools.findDisk(devOfDiskNumber(n));
    if (!disk) return;
    try {
      if (disk.scsiAddress) await this.#tools.rescanScsiDevice(disk.name);
      else if (disk.loopBackingFile) await this.#tools.refreshLoopCapacity(disk.devPath);
    } catch (err) {
      const now = await this.#tools.findDisk(devOfDiskNumber(n)).catch(() => disk);
      if (now === null || now.diskSeq !== disk.diskSeq || (disk.loopBackingFile !== null && now.loopBackingFile !== disk.loopBackingFile)) return;
      throw err;
    }
  }

  /**
   * SCSI disks: the SCSI device state. Other disks: a persisted offline mark plus the kernel
   * read-only flag, which going online clears only if going offline set it. Each step is written
   * so that a daemon killed between two of them converges on the retry (kill points tested in
   * test/faults/volume-kill-points.test.ts). Marks of devices that
   * are gone or hold another medium are dropped on the way.
   */
  async #setDiskOnline(n: number, online: boolean, check: DiskWriteCheck): Promise<void> {
    // Every disk: the offline marks of the others are written back with this one's.
    const { snap, disk } = await this.#verifyWrite(n, check, { signatures: false, openers: !online, everyDisk: true });
    // Going offline: the kernel's exclusive claim on the whole disk is held for the change, so nothing mounts or claims any part of it meanwhile.
    beforeStep(online ? `bringing ${disk.devPath} online` : `the exclusive-claim check of ${disk.devPath}`);
    const claim = online ? null : await this.#tools.claimExclusive(disk.devPath, disk);
    try {
      if (!online) beforeStep(`taking ${disk.devPath} offline`);
      await this.#setOnline(snap, disk, online);
    } finally {
      await claim?.release();
    }
  }

  async #setOnline(snap: BlockSnapshot, disk: BlockDisk, online: boolean): Promise<void> {
    if (disk.scsiState !== null) {
      await this.#tools.setScsiState(disk.name, online ? "running" : "offline");
      return;
    }
    const mark = markOf(snap, disk);
    const others = liveMarks(snap).filter((m) => m !== mark);
    if (online) {
      if (mark?.setReadOnly) await this.#tools.setReadOnly(disk.devPath, false);
      await this.#tools.writeOfflineMarks(others);
      return;
    }
    // The mark (with what is about to change) is recorded before the flag is set: a daemon killed in
    // between leaves a mark whose flag is not set, which counts as online (isDiskOnline) and is
    // completed by the retry — never a read-only flag nobody remembers setting.
    const setReadOnly = !disk.readOnly;
    await this.#tools.writeOfflineMarks([...others, { major: disk.major, minor: disk.minor, diskSeq: disk.diskSeq, setReadOnly }]);
    if (!setReadOnly) return;
    if (callSignal()?.aborted) {
      // Aborted between the two steps: the mark is taken back (a mark whose flag is not set counts as online anyway).
      const undone = await this.#tools.writeOfflineMarks(others).then(() => true, () => false);
      beforeStep(
        `setting ${disk.devPath} read-only`,
        undone
          ? `${disk.devPath} stays online: its offline mark was recorded and removed again`
          : `${disk.devPath} stays online: its offline mark was recorded and could not be removed again, but a mark whose read-only flag was never set counts as online`,
      );
    }
    try {
      await this.#tools.setReadOnly(disk.devPath, true);
    } catch (e) {
      await this.#tools.writeOfflineMarks(others).catch(() => {});
      throw e;
    }
  }

  /* ---------------------------------------------------------------- writes: each ends the session's sharing (snapshot-session.ts) */

  initializeDisk(n: number, check: DiskWriteCheck): Promise<void> {
    return this.#sessions.write(() => this.#initializeDisk(n, check));
  }

  createDataPartition(n: number, style: "gpt" | "mbr", check: DiskWriteCheck): Promise<void> {
    return this.#sessions.write(() => this.#createDataPartition(n, style, check));
  }

  onlinePartition(n: number, partitionNumber: number): Promise<void> {
    return this.#sessions.write(() => this.#onlinePartition(n, partitionNumber));
  }

  scanForDisks(): Promise<number[]> {
    return this.#sessions.write(() => this.#scanForDisks());
  }

  refreshDiskSize(n: number): Promise<void> {
    return this.#sessions.write(() => this.#refreshDiskSize(n));
  }

  setDiskOnline(n: number, online: boolean, check: DiskWriteCheck): Promise<void> {
    return this.#sessions.write(() => this.#setDiskOnline(n, online, check));
  }
}
