import type { Win32 } from "../../windows/win32.ts";
import type { CimDisk, CimPartition, WindowsDiskHostApi } from "./host-api.ts";
import type { PowerShellPool } from "./powershell-pool.ts";
import { list, page83FromDescriptor, parseDisk, parsePartition } from "./cim-output.ts";

/** The Win32 calls the disk host needs (a {@link Win32}, or a fake in tests). */
export type DiskIoctls = Pick<Win32, "openForQuery" | "closeHandle" | "storageDeviceNumber" | "storageDeviceIdDescriptor">;

/** Disk host on Windows: CIM (MSFT_Disk, MSFT_Partition, MSFT_StorageSetting) through the worker pool; disk ids through IOCTLs. */
export class WindowsDiskHost implements WindowsDiskHostApi {
  readonly #pool: PowerShellPool;
  readonly #win32: DiskIoctls;

  constructor(pool: PowerShellPool, win32: DiskIoctls) {
    this.#pool = pool;
    this.#win32 = win32;
  }

  async listDisks(): Promise<CimDisk[]> {
    return list("disk.list", await this.#pool.call("disk.list")).map((d) => parseDisk("disk.list", d));
  }

  async getDisk(diskNumber: number): Promise<CimDisk> {
    return parseDisk("disk.get", await this.#pool.call("disk.get", { diskNumber }));
  }

  async initializeDisk(diskNumber: number, partitionStyle: number): Promise<void> {
    await this.#pool.call("disk.initialize", { diskNumber, partitionStyle });
  }

  async listPartitions(diskNumber: number): Promise<CimPartition[]> {
    return list("disk.partitions", await this.#pool.call("disk.partitions", { diskNumber })).map((p) => parsePartition("disk.partitions", p));
  }

  async createPartition(diskNumber: number, gptType: string | null): Promise<void> {
    await this.#pool.call("disk.createPartition", { diskNumber, gptType });
  }

  async refreshDisk(diskNumber: number): Promise<void> {
    await this.#pool.call("disk.refresh", { diskNumber });
  }

  async onlinePartition(diskNumber: number, partitionNumber: number): Promise<void> {
    await this.#pool.call("partition.online", { diskNumber, partitionNumber });
  }

  async rescan(): Promise<void> {
    await this.#pool.call("disk.rescan");
  }

  async setDiskOnline(diskNumber: number, online: boolean): Promise<void> {
    await this.#pool.call("disk.setOnline", { diskNumber, online });
  }

  async queryDeviceIds(path: string): Promise<{ deviceNumber: number; page83: string }> {
    const h = this.#win32.openForQuery(path);
    try {
      const deviceNumber = this.#win32.storageDeviceNumber(h, path);
      const page83 = page83FromDescriptor(this.#win32.storageDeviceIdDescriptor(h, path));
      return { deviceNumber, page83 };
    } finally {
      this.#win32.closeHandle(h);
    }
  }
}
