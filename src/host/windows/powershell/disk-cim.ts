import type { Awaitable, Win32 } from "../../../win32/win32.ts";
import type { CimDisk, CimPartition } from "./cim-types.ts";
import type { PowerShellPool } from "./powershell-pool.ts";
import { list, page83FromDescriptor, parseDisk, parsePartition } from "./cim-output.ts";
import type { ExpectedDiskFacts } from "./expected-facts.ts";

/** The Win32 calls the disk host needs (a {@link Win32}, or a fake in tests). */
export type DiskIoctls = Awaitable<Pick<Win32, "openForQuery" | "closeHandle" | "storageDeviceNumber" | "storageDeviceIdDescriptor">>;

/**
 * The Storage WMI disk and partition calls upstream csi-proxy's `pkg/os/disk` makes: one worker op
 * (MSFT_Disk, MSFT_Partition, MSFT_StorageSetting through the PowerShell pool) or one IOCTL sequence
 * (koffi) each. Pass-through; host/windows/disk.ts turns this into the disk group's host.
 *
 * Errors are CsiProxyErrors: unknown disk / partition NotFound; CIM errors and failed method return
 * values mapped by worker-error-codes.ts; Win32 errors by win32/win32-errors.ts.
 */
export class WindowsDiskCim {
  readonly #pool: PowerShellPool;
  readonly #win32: DiskIoctls;

  constructor(pool: PowerShellPool, win32: DiskIoctls) {
    this.#pool = pool;
    this.#win32 = win32;
  }

  /** SELECT * FROM MSFT_Disk. */
  async listDisks(): Promise<CimDisk[]> {
    return list("disk.list", await this.#pool.call("disk.list")).map((d) => parseDisk("disk.list", d));
  }

  /** The MSFT_Disk with this Number (NotFound). */
  async getDisk(diskNumber: number): Promise<CimDisk> {
    return parseDisk("disk.get", await this.#pool.call("disk.get", { diskNumber }));
  }

  /** MSFT_Disk.Initialize(PartitionStyle); refused first, in the same worker call, when the disk's facts differ from `expect` (expected-facts.ts). */
  async initializeDisk(diskNumber: number, partitionStyle: number, expect: ExpectedDiskFacts): Promise<void> {
    await this.#pool.call("disk.initialize", { diskNumber, partitionStyle, expect });
  }

  /** MSFT_Partition rows of the disk. */
  async listPartitions(diskNumber: number): Promise<CimPartition[]> {
    return list("disk.partitions", await this.#pool.call("disk.partitions", { diskNumber })).map((p) => parsePartition("disk.partitions", p));
  }

  /** MSFT_Disk.CreatePartition(UseMaximumSize, AssignDriveLetter=false, GptType when given, IsHidden=false, IsActive=false); refused first when the disk's facts differ from `expect`. */
  async createPartition(diskNumber: number, gptType: string | null, expect: ExpectedDiskFacts): Promise<void> {
    await this.#pool.call("disk.createPartition", { diskNumber, gptType, expect });
  }

  /** MSFT_Disk.Refresh(). */
  async refreshDisk(diskNumber: number): Promise<void> {
    await this.#pool.call("disk.refresh", { diskNumber });
  }

  /** MSFT_Partition.Online(). */
  async onlinePartition(diskNumber: number, partitionNumber: number): Promise<void> {
    await this.#pool.call("partition.online", { diskNumber, partitionNumber });
  }

  /** MSFT_StorageSetting.UpdateHostStorageCache(). */
  async rescan(): Promise<void> {
    await this.#pool.call("disk.rescan");
  }

  /** MSFT_Disk.Online() / Offline(); refused first when the disk's facts differ from `expect`. */
  async setDiskOnline(diskNumber: number, online: boolean, expect: ExpectedDiskFacts): Promise<void> {
    await this.#pool.call("disk.setOnline", { diskNumber, online, expect });
  }

  /** CreateFileW(path) + IOCTL_STORAGE_GET_DEVICE_NUMBER + IOCTL_STORAGE_QUERY_PROPERTY(StorageDeviceIdProperty). */
  async queryDeviceIds(path: string): Promise<{ deviceNumber: number; page83: string }> {
    const h = await this.#win32.openForQuery(path);
    try {
      const deviceNumber = await this.#win32.storageDeviceNumber(h, path);
      const page83 = page83FromDescriptor(await this.#win32.storageDeviceIdDescriptor(h, path));
      return { deviceNumber, page83 };
    } finally {
      await this.#win32.closeHandle(h);
    }
  }
}
