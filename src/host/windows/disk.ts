/**
 * The disk group's host on Windows ({@link DiskHostApi}): MSFT_Disk / MSFT_Partition through the
 * PowerShell worker pool and disk ids through IOCTLs ({@link WindowsDiskCim}), reported in the
 * group's terms. Decisions are disk-service.ts's (upstream master's, docs/upstream-behaviour.md, Disk):
 * before each write the host hands the facts it reads to the service's check, and the worker call
 * that writes gets them as `expect` and refuses only a change (expected-facts.ts).
 *
 * Facts Windows gives here: online (IsOffline), partition style, partitions and their drive letters.
 * A partition holding the system drive (%SystemDrive%, C:) makes its disk the system disk. Other drive
 * letters are not reported as mounts: Windows assigns them to arriving volumes on its own, and a
 * re-attached data disk must stay usable. Holders, swap and other access paths are not visible to
 * the worker's queries, nor is what a RAW disk holds.
 */
import type { DiskHostApi, DiskLayout, DiskWriteCheck, HostDisk, HostPartition } from "../../groups/disk/host-api.ts";
import type { DeviceUse } from "../../policy/host-device.ts";
import type { DiskIds, DiskLocation } from "../../groups/disk/types.ts";
import type { PowerShellPool } from "./powershell/powershell-pool.ts";
import { WindowsDiskCim, type DiskIoctls } from "./powershell/disk-cim.ts";
import { GPT_BASIC_DATA, GPT_MICROSOFT_RESERVED, PartitionStyle, type CimDisk, type CimPartition } from "./powershell/cim-types.ts";
import { expectedDiskFacts, type ExpectedDiskFacts } from "./powershell/expected-facts.ts";
import { callSignal } from "../../util/call-scope.ts";
import { NOTHING_CHANGED, stopIfAborted } from "../../util/stop-if-aborted.ts";

/** Between a write's checks (worker calls that read) and the write: an aborted call stops there, nothing changed (the pool would refuse the write's call anyway, without saying so). */
const beforeWrite = (before: string) => stopIfAborted(callSignal(), { before, done: NOTHING_CHANGED });

/**
 * Upstream's Location parsing: split on ":", at least 5 segments; each trimmed segment of exactly two
 * space-separated tokens `Key Value` sets Adapter, Target, LUN, Bus (other keys ignored); null when
 * no two-token segment was seen.
 */
export function parseLocation(location: string): DiskLocation | null {
  const segments = location.split(":");
  if (segments.length < 5) return null;
  const loc: DiskLocation = { adapter: "", bus: "", target: "", lunId: "" };
  let seen = false;
  for (const segment of segments) {
    const tokens = segment.trim().split(" ");
    if (tokens.length !== 2) continue;
    seen = true;
    const [key, value] = tokens;
    if (key === "Adapter") loc.adapter = value;
    else if (key === "Target") loc.target = value;
    else if (key === "LUN") loc.lunId = value;
    else if (key === "Bus") loc.bus = value;
  }
  return seen ? loc : null;
}

/** The drive letter of %SystemDrive% ("C"), upper case. */
export function systemDriveLetter(env: NodeJS.ProcessEnv = process.env): string {
  return (/^([A-Za-z]):/.exec(env.SystemDrive ?? env.SYSTEMDRIVE ?? "")?.[1] ?? "C").toUpperCase();
}

/** A partition's uses: only whether it holds the system drive (see the module comment). */
export function partitionUse(p: CimPartition, systemDrive: string): DeviceUse {
  const system = p.driveLetter.toUpperCase() === systemDrive ? `the Windows system volume ${systemDrive}:` : null;
  return { system, mountPoints: [], busy: [] };
}

export const partitionName = (p: Pick<CimPartition, "diskNumber" | "partitionNumber">) => `disk ${p.diskNumber} partition ${p.partitionNumber}`;

const STYLES: Record<number, DiskLayout["partitionStyle"]> = { [PartitionStyle.RAW]: "raw", [PartitionStyle.MBR]: "mbr", [PartitionStyle.GPT]: "gpt" };

export interface WindowsDiskHostOptions {
  /** Drive letter of the system volume (default: from %SystemDrive%). */
  systemDrive?: string;
}

export class WindowsDiskHost implements DiskHostApi {
  readonly cim: WindowsDiskCim;
  readonly #systemDrive: string;

  constructor(pool: PowerShellPool, win32: DiskIoctls, options: WindowsDiskHostOptions = {}) {
    this.cim = new WindowsDiskCim(pool, win32);
    this.#systemDrive = (options.systemDrive ?? systemDriveLetter()).toUpperCase();
  }

  missingPrivilege(): string | null {
    return null; // Storage WMI answers AccessDenied itself (mapped to PermissionDenied)
  }

  #hostDisk(d: CimDisk): HostDisk {
    return {
      number: d.number,
      name: `\\\\.\\PhysicalDrive${d.number}`,
      location: parseLocation(d.location),
      sizeBytes: d.size,
      online: !d.isOffline,
      use: { system: null, mountPoints: [], busy: [] },
      // The physical disk behind the number (MSFT_Disk Path) and its size.
      identity: `${d.path} size ${d.size}`,
    };
  }

  #partition(p: CimPartition): HostPartition {
    return {
      number: p.partitionNumber,
      name: partitionName(p),
      type: p.gptType || (p.mbrType === null ? "" : `0x${p.mbrType.toString(16)}`),
      reserved: p.gptType.toLowerCase() === GPT_MICROSOFT_RESERVED,
      online: null, // MSFT_Partition.IsOffline is not among the worker's properties
      use: partitionUse(p, this.#systemDrive),
    };
  }

  async listDisks(): Promise<HostDisk[]> {
    return (await this.cim.listDisks()).map((d) => this.#hostDisk(d)).sort((a, b) => a.number - b.number);
  }

  /** Keyed by the IOCTL device number, as upstream; a disk that cannot be opened or queried fails the whole call. */
  async listDiskIds(): Promise<Map<number, DiskIds>> {
    const ids = new Map<number, DiskIds>();
    for (const disk of await this.cim.listDisks()) {
      const { deviceNumber, page83 } = await this.cim.queryDeviceIds(disk.path);
      ids.set(deviceNumber, { page83, serialNumber: disk.serialNumber ?? "" });
    }
    return ids;
  }

  async getDisk(diskNumber: number): Promise<HostDisk> {
    return this.#hostDisk(await this.cim.getDisk(diskNumber));
  }

  /** MSFT_Disk, and its MSFT_Partition rows unless it is RAW (a RAW disk has none). */
  async getDiskLayout(diskNumber: number): Promise<DiskLayout> {
    const d = await this.cim.getDisk(diskNumber);
    const partitionStyle = STYLES[d.partitionStyle] ?? "unknown";
    return {
      disk: this.#hostDisk(d),
      partitionStyle,
      content: partitionStyle === "unknown" ? `partition style ${d.partitionStyle}` : null, // Windows does not say what a RAW disk holds
      partitions: partitionStyle === "raw" ? [] : await this.listPartitions(diskNumber),
    };
  }

  probeDiskLayout(diskNumber: number): Promise<DiskLayout> {
    return this.getDiskLayout(diskNumber);
  }

  async listPartitions(diskNumber: number): Promise<HostPartition[]> {
    return (await this.cim.listPartitions(diskNumber)).map((p) => this.#partition(p));
  }

  /**
   * The facts of a write, read right before it (MSFT_Disk and its partitions), handed to the service's
   * `check`; returns the disk's facts as the worker expects them, for the write's own call to compare.
   */
  async #verifyWrite(diskNumber: number, check: DiskWriteCheck): Promise<ExpectedDiskFacts> {
    const d = await this.cim.getDisk(diskNumber);
    const partitions = d.partitionStyle === PartitionStyle.RAW ? [] : await this.listPartitions(diskNumber);
    await check({ disk: this.#hostDisk(d), partitions });
    return expectedDiskFacts(d);
  }

  /** The service's check on fresh facts, then MSFT_Disk.Initialize(GPT) in a worker call that refuses if the disk's facts changed. */
  async initializeDisk(diskNumber: number, check: DiskWriteCheck): Promise<void> {
    const expected = await this.#verifyWrite(diskNumber, check);
    beforeWrite(`initialising disk ${diskNumber} with GPT`);
    await this.cim.initializeDisk(diskNumber, PartitionStyle.GPT, expected);
  }

  /** Upstream's basic data partition: GptType {ebd0a0a2-…} on GPT, none on MBR; checked as {@link initializeDisk}. */
  async createDataPartition(diskNumber: number, style: "gpt" | "mbr", check: DiskWriteCheck): Promise<void> {
    const expected = await this.#verifyWrite(diskNumber, check);
    beforeWrite(`adding a partition to disk ${diskNumber}`);
    await this.cim.createPartition(diskNumber, style === "gpt" ? GPT_BASIC_DATA : null, expected);
  }

  async refreshDisk(diskNumber: number): Promise<void> {
    await this.cim.refreshDisk(diskNumber);
  }

  async onlinePartition(diskNumber: number, partitionNumber: number): Promise<void> {
    await this.cim.onlinePartition(diskNumber, partitionNumber);
  }

  /** UpdateHostStorageCache re-reads every disk's size too: nothing to refresh one by one. */
  async scanForDisks(): Promise<number[]> {
    await this.cim.rescan();
    return [];
  }

  async refreshDiskSize(): Promise<void> {
    // Covered by UpdateHostStorageCache (scanForDisks returns no disk).
  }

  /** MSFT_Disk.Online/Offline, checked as {@link initializeDisk}. */
  async setDiskOnline(diskNumber: number, online: boolean, check: DiskWriteCheck): Promise<void> {
    const expected = await this.#verifyWrite(diskNumber, check);
    beforeWrite(`setting disk ${diskNumber} ${online ? "online" : "offline"}`);
    await this.cim.setDiskOnline(diskNumber, online, expected);
  }
}
