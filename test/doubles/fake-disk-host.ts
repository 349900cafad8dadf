import type { DiskHostApi, DiskLayout, DiskWriteCheck, HostDisk, HostPartition } from "../../src/groups/disk/host-api.ts";
import type { DiskIds } from "../../src/groups/disk/types.ts";
import { FakeStorage, type FakeDiskRow, type FakePartitionRow } from "./fake-storage.ts";

/** Stateful fake of the disk host, in Windows' shape, over a {@link FakeStorage} (share one with a FakeVolumeHost). */
export class FakeDiskHost implements DiskHostApi {
  readonly world: FakeStorage;

  constructor(world: FakeStorage = new FakeStorage()) {
    this.world = world;
  }

  #disk(d: FakeDiskRow): HostDisk {
    return {
      number: d.number,
      name: `\\\\.\\PhysicalDrive${d.number}`,
      location: d.location,
      sizeBytes: d.sizeBytes,
      online: d.online,
      use: { system: d.use.system ?? null, mountPoints: [...(d.use.mountPoints ?? [])], busy: [...(d.use.busy ?? [])] },
    };
  }

  #partition(d: FakeDiskRow, p: FakePartitionRow): HostPartition {
    return { number: p.number, name: `disk ${d.number} partition ${p.number}`, type: p.type, reserved: p.reserved, online: p.online, use: this.world.partitionUse(p) };
  }

  missingPrivilege(): string | null {
    return this.world.missingPrivilege;
  }
  async listDisks(): Promise<HostDisk[]> {
    this.world.enter("listDisks");
    return this.world.disks.map((d) => this.#disk(d)).sort((a, b) => a.number - b.number);
  }
  async listDiskIds(): Promise<Map<number, DiskIds>> {
    this.world.enter("listDiskIds");
    return new Map(this.world.disks.map((d) => [d.number, { ...d.ids }]));
  }
  async getDisk(diskNumber: number): Promise<HostDisk> {
    this.world.enter("getDisk", String(diskNumber));
    return this.#disk(this.world.disk(diskNumber));
  }
  async getDiskLayout(diskNumber: number): Promise<DiskLayout> {
    this.world.enter("getDiskLayout", String(diskNumber));
    const d = this.world.disk(diskNumber);
    return { disk: this.#disk(d), partitionStyle: d.style, content: d.content, partitions: d.partitions.map((p) => this.#partition(d, p)) };
  }
  async probeDiskLayout(diskNumber: number): Promise<DiskLayout> {
    return this.getDiskLayout(diskNumber);
  }
  async listPartitions(diskNumber: number): Promise<HostPartition[]> {
    this.world.enter("listPartitions", String(diskNumber));
    const d = this.world.disk(diskNumber);
    return d.partitions.map((p) => this.#partition(d, p));
  }
  /** As a real host: the service's check on the facts read right before the write. */
  async #verify(diskNumber: number, check: DiskWriteCheck): Promise<void> {
    const d = this.world.disk(diskNumber);
    await check({ disk: await this.getDisk(diskNumber), partitions: d.partitions.map((p) => this.#partition(d, p)) });
  }
  async initializeDisk(diskNumber: number, check: DiskWriteCheck): Promise<void> {
    await this.#verify(diskNumber, check);
    this.world.enter("initializeDisk", String(diskNumber), true);
    this.world.initialize(diskNumber);
  }
  async createDataPartition(diskNumber: number, style: "gpt" | "mbr", check: DiskWriteCheck): Promise<void> {
    await this.#verify(diskNumber, check);
    this.world.enter("createDataPartition", `${diskNumber} ${style}`, true);
    this.world.createPartition(diskNumber, style);
  }
  async refreshDisk(diskNumber: number): Promise<void> {
    this.world.enter("refreshDisk", String(diskNumber), true);
  }
  async onlinePartition(diskNumber: number, partitionNumber: number): Promise<void> {
    this.world.enter("onlinePartition", `${diskNumber} ${partitionNumber}`, true);
    const p = this.world.disk(diskNumber).partitions.find((x) => x.number === partitionNumber);
    if (p && p.online !== null) p.online = true;
  }
  async scanForDisks(): Promise<number[]> {
    this.world.enter("scanForDisks", "", true);
    if (this.world.refreshOneByOne) return this.world.disks.map((d) => d.number);
    for (const d of this.world.disks) this.world.applyPendingSize(d);
    return [];
  }
  async refreshDiskSize(diskNumber: number): Promise<void> {
    this.world.enter("refreshDiskSize", String(diskNumber), true);
    this.world.applyPendingSize(this.world.disk(diskNumber));
  }
  async setDiskOnline(diskNumber: number, online: boolean, check: DiskWriteCheck): Promise<void> {
    await this.#verify(diskNumber, check);
    this.world.enter("setDiskOnline", `${diskNumber} ${online}`, true);
    this.world.disk(diskNumber).online = online;
  }
}
