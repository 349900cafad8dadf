/**
 * Stateful fake of the Linux block tools (every interface linux-block-tools.ts puts together),
 * answering from and acting on one {@link FakeBlockWorld}. Put a LinuxDiskHost and a LinuxVolumeHost
 * over it to unit-test the Linux semantics of the disk and volume groups. Every mutating call is
 * logged in `world.calls`.
 */
import type { BlockDisk, BlockMount, DeviceOpener, DevNumber, LoopDevice, ManagedFsType, OfflineMark, PartitionTable, ProbeResult, Signature } from "../../src/host/linux/block/block-types.ts";
import type { BlockReads } from "../../src/host/linux/block/block-reads.ts";
import type { SignatureProbe } from "../../src/host/linux/block/signature-probe.ts";
import type { DeviceClaim, DeviceClaims, NamespaceMount } from "../../src/host/linux/block/device-claims.ts";
import type { PartitionResizing, Partitioning } from "../../src/host/linux/block/partitioning.ts";
import type { FilesystemTools, FilesystemUsage } from "../../src/host/linux/block/filesystem-tools.ts";
import type { MountTools } from "../../src/host/linux/mounts/mount-tools.ts";
import type { WriteBack } from "../../src/host/linux/block/write-back.ts";
import type { DeviceState, OfflineMarks } from "../../src/host/linux/block/device-state.ts";
import type { Privileges } from "../../src/host/linux/kernel/privileges.ts";
import { FakeBlockWorld } from "./fake-block-world.ts";
import { failedPrecondition, internal } from "../../src/errors.ts";

export class FakeBlockTools
  implements BlockReads, SignatureProbe, DeviceClaims, Partitioning, PartitionResizing, FilesystemTools, MountTools, WriteBack, DeviceState, OfflineMarks, Privileges
{
  readonly world: FakeBlockWorld;
  /** Mount points and devices flushed, in order (a flush must precede each unmount). */
  flushed: string[] = [];

  constructor(world: FakeBlockWorld = new FakeBlockWorld()) {
    this.world = world;
  }

  /* ---------------------------------------------------------------- reads */

  effectiveUid(): number {
    return this.world.uid;
  }
  async effectiveCapabilities(): Promise<Set<string>> {
    this.world.enter("effectiveCapabilities");
    return new Set(this.world.capabilities);
  }
  async listDisks(): Promise<BlockDisk[]> {
    this.world.enter("listDisks");
    return this.world.blockDisks();
  }
  async findDisk(dev: DevNumber): Promise<BlockDisk | null> {
    this.world.enter("findDisk");
    return this.world.blockDisks().find((d) => d.major === dev.major && d.minor === dev.minor) ?? null;
  }
  async readMounts(): Promise<BlockMount[]> {
    this.world.enter("readMounts");
    return this.world.mounts.map((m) => ({ ...m }));
  }
  /** This namespace's mounts (pid 1 stands for it) and those of `world.otherNamespaceMounts`. */
  async mountsInAnyNamespace(dev: DevNumber): Promise<NamespaceMount[]> {
    this.world.enter("mountsInAnyNamespace");
    const same = (m: DevNumber) => m.major === dev.major && m.minor === dev.minor;
    return [
      ...this.world.mounts.filter(same).map((m) => ({ pid: 1, mountPoint: m.mountPoint })),
      ...this.world.otherNamespaceMounts.filter(same).map((m) => ({ pid: m.pid, mountPoint: m.mountPoint })),
    ];
  }
  async deviceOpeners(devs: readonly DevNumber[]): Promise<DeviceOpener[]> {
    this.world.enter("deviceOpeners");
    return this.world.openers.filter((o) => devs.some((d) => d.major === o.dev.major && d.minor === o.dev.minor)).map((o) => ({ ...o }));
  }
  async readSwapDevices(): Promise<DevNumber[]> {
    this.world.enter("readSwapDevices");
    return [...this.world.swaps];
  }
  async probe(devPath: string): Promise<ProbeResult> {
    this.world.enter("probe", devPath);
    return this.world.probe(devPath);
  }
  /** The probe's signatures (a found filesystem behind a table reports both). */
  async listSignatures(devPath: string): Promise<Signature[]> {
    this.world.enter("listSignatures", devPath);
    const p = this.world.probe(devPath);
    if (p.kind === "empty") return [];
    if (p.kind === "ambivalent") return [{ type: "ext4", offset: 1080n }, { type: "xfs", offset: 0n }];
    return [p.type, p.ptType].filter((t): t is string => t !== null).map((type) => ({ type, offset: 0n }));
  }
  /** Loop devices of the world, on backing files nothing else shares. */
  async listLoops(): Promise<LoopDevice[]> {
    this.world.enter("listLoops");
    return this.world
      .blockDisks()
      .filter((d) => d.loopBackingFile)
      .map((d) => ({ name: d.name, devPath: d.devPath, major: d.major, minor: d.minor, sizeBytes: d.sizeBytes, offsetBytes: 0n, backingFile: d.loopBackingFile!, backing: null }));
  }
  async kernelFilesystems(): Promise<Set<string>> {
    this.world.enter("kernelFilesystems");
    return new Set(["ext2", "ext3", "ext4", "xfs", "btrfs"]);
  }
  /** Refused, as by the kernel, while the device (or, for a disk, one of its partitions) is mounted. */
  async claimExclusive(devPath: string, dev: DevNumber): Promise<DeviceClaim> {
    this.world.enter("claimExclusive", devPath);
    const disk = this.world.blockDisks().find((d) => d.devPath === devPath);
    const devs = [dev, ...(disk?.partitions ?? [])];
    if (this.world.mounts.some((m) => devs.some((d) => d.major === m.major && d.minor === m.minor))) {
      throw failedPrecondition(`${devPath} is in use: the kernel refuses an exclusive claim (mounted, or held by another program or device)`);
    }
    return { release: async () => {} };
  }
  async readPartitionTable(disk: Pick<BlockDisk, "devPath">): Promise<PartitionTable | null> {
    this.world.enter("readPartitionTable", disk.devPath);
    return this.world.tableView(this.world.find(disk.devPath).disk);
  }
  async readOfflineMarks(): Promise<OfflineMark[]> {
    this.world.enter("readOfflineMarks");
    return this.world.marks.map((m) => ({ ...m }));
  }
  async inspectDirectory(path: string): Promise<{ isDirectory: boolean; empty: boolean } | null> {
    this.world.enter("inspectDirectory", path);
    const entries = this.world.dirs.get(path);
    return entries === undefined ? null : { isDirectory: true, empty: entries === 0 };
  }
  async statfs(mountPoint: string): Promise<FilesystemUsage> {
    this.world.enter("statfs", mountPoint);
    return this.world.statfs(mountPoint);
  }
  async readFilesystemUsage(devPath: string, fsType: ManagedFsType): Promise<FilesystemUsage> {
    this.world.enter("readFilesystemUsage", `${devPath} ${fsType}`);
    const fs = this.world.fsOf(devPath);
    return { totalBytes: fs.sizeBytes, freeBytes: fs.sizeBytes - fs.usedBytes };
  }

  /* ---------------------------------------------------------------- disks */

  async createGptTable(devPath: string): Promise<void> {
    this.world.enter("createGptTable", devPath, true);
    this.world.createGptTable(devPath);
  }
  async appendPartition(devPath: string, typeId: string): Promise<void> {
    this.world.enter("appendPartition", `${devPath} ${typeId}`, true);
    this.world.appendPartition(devPath, typeId);
  }
  async syncPartitions(devPath: string): Promise<void> {
    this.world.enter("syncPartitions", devPath, true);
    this.world.find(devPath).disk.kernelSeesPartitions = true;
  }
  async listScsiHosts(): Promise<number[]> {
    this.world.enter("listScsiHosts");
    return [...this.world.scsiHosts];
  }
  async scanScsiHost(host: number): Promise<void> {
    this.world.enter("scanScsiHost", String(host), true);
  }
  async rescanScsiDevice(name: string): Promise<void> {
    this.world.enter("rescanScsiDevice", name, true);
    this.world.applyPendingSize(this.world.disk(name));
  }
  async refreshLoopCapacity(devPath: string): Promise<void> {
    this.world.enter("refreshLoopCapacity", devPath, true);
    this.world.applyPendingSize(this.world.find(devPath).disk);
  }
  async setScsiState(name: string, state: "running" | "offline"): Promise<void> {
    this.world.enter("setScsiState", `${name} ${state}`, true);
    const disk = this.world.disk(name);
    if (disk.scsiState === null) throw internal(`fake: ${name} is not a SCSI device`);
    disk.scsiState = state;
  }
  async setReadOnly(devPath: string, readOnly: boolean): Promise<void> {
    this.world.enter("setReadOnly", `${devPath} ${readOnly}`, true);
    this.world.find(devPath).disk.readOnly = readOnly;
  }
  async writeOfflineMarks(marks: OfflineMark[]): Promise<void> {
    this.world.enter("writeOfflineMarks", marks.map((m) => `${m.major}:${m.minor}`).join(",") || "-", true);
    this.world.marks = marks.map((m) => ({ ...m }));
  }

  /* ---------------------------------------------------------------- volumes */

  async makeFilesystem(devPath: string, fsType: ManagedFsType, replace = false): Promise<void> {
    this.world.enter("makeFilesystem", `${devPath} ${fsType}${replace ? " replace" : ""}`, true);
    this.world.makeFilesystem(devPath, fsType, replace);
  }
  async mount(devPath: string, target: string, fsType: string): Promise<void> {
    this.world.enter("mount", `${devPath} ${target} ${fsType}`, true);
    this.world.mount(devPath, target, fsType);
  }
  async unmount(target: string): Promise<void> {
    this.world.enter("unmount", target, true);
    this.world.unmount(target);
  }
  /** Logged as `syncfs <mount point>`. */
  async flushFilesystem(mountPoint: string): Promise<void> {
    this.world.enter("syncfs", mountPoint, true);
    this.flushed.push(mountPoint);
  }
  /** Logged as `fsync <device>`. */
  async flushDevice(devPath: string): Promise<void> {
    this.world.enter("fsync", devPath, true);
    this.flushed.push(devPath);
  }
  async relocateGptBackup(diskDevPath: string): Promise<void> {
    this.world.enter("relocateGptBackup", diskDevPath, true);
    const table = this.world.find(diskDevPath).disk.table;
    if (!table) throw internal("fake sfdisk: no table");
    table.backupAtEnd = true;
  }
  async resizePartition(diskDevPath: string, number: number, sizeSectors: bigint): Promise<void> {
    this.world.enter("resizePartition", `${diskDevPath} ${number} ${sizeSectors}`, true);
    this.world.resizePartition(diskDevPath, number, sizeSectors);
  }
  async checkFilesystem(devPath: string, fsType: ManagedFsType): Promise<void> {
    this.world.enter("checkFilesystem", `${devPath} ${fsType}`, true);
  }
  async growFilesystem(devPath: string, fsType: ManagedFsType, mountPoint: string | null): Promise<void> {
    this.world.enter("growFilesystem", `${devPath} ${fsType} ${mountPoint ?? "-"}`, true);
    this.world.growFilesystem(devPath, fsType, mountPoint);
  }
  async makeTempDir(): Promise<string> {
    this.world.enter("makeTempDir", "", true);
    return this.world.makeTempDir();
  }
  async removeTempDir(path: string): Promise<void> {
    this.world.enter("removeTempDir", path, true);
    this.world.dirs.delete(path);
  }
}
