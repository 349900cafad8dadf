import type { BlockDisk, BlockHostApi, BlockMount, DevNumber, OfflineMark, PartitionTable, ProbeResult } from "../../groups/disk/host-api.ts";
import { FakeBlockWorld } from "./block-world.ts";

/** The reads both fake hosts share, answered from one {@link FakeBlockWorld}. */
export class FakeBlockHost implements BlockHostApi {
  readonly world: FakeBlockWorld;
  constructor(world: FakeBlockWorld = new FakeBlockWorld()) {
    this.world = world;
  }
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
  async readMounts(): Promise<BlockMount[]> {
    this.world.enter("readMounts");
    return this.world.mounts.map((m) => ({ ...m }));
  }
  async readSwapDevices(): Promise<DevNumber[]> {
    this.world.enter("readSwapDevices");
    return [...this.world.swaps];
  }
  async probe(devPath: string): Promise<ProbeResult> {
    this.world.enter("probe", devPath);
    return this.world.probe(devPath);
  }
  async readPartitionTable(disk: Pick<BlockDisk, "devPath">): Promise<PartitionTable | null> {
    this.world.enter("readPartitionTable", disk.devPath);
    return this.world.tableView(this.world.find(disk.devPath).disk);
  }
  async readOfflineMarks(): Promise<OfflineMark[]> {
    this.world.enter("readOfflineMarks");
    return this.world.marks.map((m) => ({ ...m }));
  }
}
