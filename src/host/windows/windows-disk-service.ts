/**
 * The disk group on Windows: upstream csi-proxy master's decisions (reference-behaviour.md §2.2)
 * over {@link WindowsDiskHostApi}, with the codes of groups/disk/types.ts.
 *
 * This is group logic; it lives beside the Windows host because groups/disk/disk-service.ts is
 * written for Linux block devices (dev_t disk numbers, sysfs, blkid), which Windows does not have.
 * It depends only on the host interface and is unit-tested against fixtures.
 */
import type { DiskIds, DiskLocation, DiskService } from "../../groups/disk/types.ts";
import { Code, CsiProxyError, internal, invalidArgument, notFound } from "../../errors.ts";
import { GPT_BASIC_DATA, GPT_MICROSOFT_RESERVED, PartitionStyle, type CimPartition, type WindowsDiskHostApi } from "./host-api.ts";

export function checkDiskNumber(n: number): void {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw invalidArgument(`disk number ${n} is not a uint32`);
}

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

const isDataPartition = (p: CimPartition) => p.gptType.toLowerCase() !== GPT_MICROSOFT_RESERVED;

export function createWindowsDiskService(deps: { host: WindowsDiskHostApi }): DiskService {
  const { host } = deps;

  async function listIds(): Promise<Map<number, DiskIds>> {
    const ids = new Map<number, DiskIds>();
    for (const disk of await host.listDisks()) {
      // like upstream, a disk that cannot be opened or queried fails the whole call
      const { deviceNumber, page83 } = await host.queryDeviceIds(disk.path);
      ids.set(deviceNumber, { page83, serialNumber: disk.serialNumber ?? "" });
    }
    return ids;
  }

  return {
    async listDiskLocations() {
      const out = new Map<number, DiskLocation>();
      for (const disk of await host.listDisks()) {
        const loc = parseLocation(disk.location);
        if (loc) out.set(disk.number, loc);
      }
      return out;
    },

    async partitionDisk({ diskNumber }) {
      checkDiskNumber(diskNumber);
      const disk = await host.getDisk(diskNumber);
      let style = disk.partitionStyle;
      if (style === PartitionStyle.RAW) {
        await host.initializeDisk(diskNumber, PartitionStyle.GPT);
        style = PartitionStyle.GPT;
      }
      if ((await host.listPartitions(diskNumber)).some(isDataPartition)) return;
      try {
        await host.createPartition(diskNumber, style === PartitionStyle.GPT ? GPT_BASIC_DATA : null);
      } catch (err) {
        // 42002 "access path already in use" (mapped to AlreadyExists) is tolerated, as upstream does
        if (!(err instanceof CsiProxyError && err.code === Code.AlreadyExists)) throw err;
      }
      await host.refreshDisk(diskNumber);
      const data = (await host.listPartitions(diskNumber)).filter(isDataPartition);
      if (data.length === 0) throw internal(`disk ${diskNumber}: no data partition after CreatePartition`);
      await host.onlinePartition(diskNumber, data[0].partitionNumber);
    },

    async rescan() {
      await host.rescan();
    },

    listDiskIds: listIds,

    async getDiskStats({ diskNumber }) {
      checkDiskNumber(diskNumber);
      return { totalBytes: (await host.getDisk(diskNumber)).size };
    },

    async setDiskState({ diskNumber, isOnline }) {
      checkDiskNumber(diskNumber);
      const disk = await host.getDisk(diskNumber);
      if (!disk.isOffline === isOnline) return;
      await host.setDiskOnline(diskNumber, isOnline);
    },

    async getDiskState({ diskNumber }) {
      checkDiskNumber(diskNumber);
      return { isOnline: !(await host.getDisk(diskNumber)).isOffline };
    },

    async getDiskNumberByName({ diskName }) {
      if (!diskName) throw invalidArgument("disk name is empty");
      for (const [number, ids] of await listIds()) if (ids.page83 === diskName) return { diskNumber: number };
      throw notFound(`could not find disk with Page83 ID ${diskName}: not found`);
    },
  };
}
