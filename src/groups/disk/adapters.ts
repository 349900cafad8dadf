import type { GroupAdapters } from "../../api/adapters.ts";
import { numberKeys, parseDiskId, stringKeys } from "../../api/legacy-ids.ts";
import type { DiskLocation, DiskService } from "./types.ts";

const location = (l: DiskLocation) => ({ Adapter: l.adapter, Bus: l.bus, Target: l.target, LUNID: l.lunId });

/** v1alpha1–v1beta2: disks are decimal strings, maps are string-keyed, ids are an `identifiers` map. */
const legacyCommon = (disk: DiskService, version: string) => ({
  listDiskLocations: async () => ({ diskLocations: stringKeys(await disk.listDiskLocations(), location) }),
  partitionDisk: async (req: { diskID: string }) => {
    await disk.partitionDisk({ diskNumber: parseDiskId(req.diskID, `Failed to convert ${version}.PartitionDiskRequest.DiskID to uint32: `) });
    return {};
  },
  rescan: async () => (await disk.rescan(), {}),
});

const legacyIds = (disk: DiskService, version: string) => ({
  ...legacyCommon(disk, version),
  listDiskIDs: async () => ({
    diskIDs: stringKeys(await disk.listDiskIds(), (ids) => ({ identifiers: { page83: ids.page83, serialNumber: ids.serialNumber } })),
  }),
  diskStats: async (req: { diskID: string }) => {
    const { totalBytes } = await disk.getDiskStats({ diskNumber: parseDiskId(req.diskID, "Failed to format DiskStatsRequest.DiskID with err: ") });
    return { diskSize: totalBytes };
  },
});

/** v1beta3 and v1: uint32 disk numbers. */
const current = (disk: DiskService) => ({
  listDiskLocations: async () => ({ diskLocations: numberKeys(await disk.listDiskLocations(), location) }),
  partitionDisk: async (req: { diskNumber: number }) => (await disk.partitionDisk({ diskNumber: req.diskNumber }), {}),
  rescan: async () => (await disk.rescan(), {}),
  listDiskIDs: async () => ({ diskIDs: numberKeys(await disk.listDiskIds(), (ids) => ({ ...ids })) }),
  getDiskStats: (req: { diskNumber: number }) => disk.getDiskStats({ diskNumber: req.diskNumber }),
  setDiskState: async (req: { diskNumber: number; isOnline: boolean }) => (await disk.setDiskState({ diskNumber: req.diskNumber, isOnline: req.isOnline }), {}),
  getDiskState: (req: { diskNumber: number }) => disk.getDiskState({ diskNumber: req.diskNumber }),
});

export const diskAdapters: GroupAdapters<"disk", DiskService> = {
  v1alpha1: (disk) => ({
    ...legacyCommon(disk, "v1alpha1"),
    getDiskNumberByName: async (req: { diskName: string }) => {
      const { diskNumber } = await disk.getDiskNumberByName({ diskName: req.diskName });
      return { diskNumber: String(diskNumber) };
    },
  }),
  v1beta1: (disk) => legacyIds(disk, "v1beta1"),
  v1beta2: (disk) => ({
    ...legacyIds(disk, "v1beta2"),
    setAttachState: async (req: { diskID: string; isOnline: boolean }) => {
      await disk.setDiskState({ diskNumber: parseDiskId(req.diskID, "Failed to format SetAttachStateRequest.DiskID with err: "), isOnline: req.isOnline });
      return {};
    },
    getAttachState: (req: { diskID: string }) => disk.getDiskState({ diskNumber: parseDiskId(req.diskID, "Failed to format GetAttachStateRequest.DiskID with err: ") }),
  }),
  v1beta3: current,
  v1: current,
};
