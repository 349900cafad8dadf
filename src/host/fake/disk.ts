import type { DiskHostApi, OfflineMark } from "../../groups/disk/host-api.ts";
import { FakeBlockHost } from "./block-host.ts";
import { internal } from "../../errors.ts";

/** Stateful fake of the disk host: operates on its {@link FakeBlockWorld} (share one world with a FakeVolumeHost). */
export class FakeDiskHost extends FakeBlockHost implements DiskHostApi {
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
}
