import type { CallContext } from "../../api/handlers.ts";
import type { GroupAdapters } from "../../api/adapters.ts";
import { numberKeys, parseDiskId, stringKeys } from "../../api/legacy-ids.ts";
import type { DiskLocation, DiskService } from "./types.ts";

const location = (l: DiskLocation) => ({ Adapter: l.adapter, Bus: l.bus, Target: l.target, LUNID: l.lunId });

/** v1alpha1–v1beta2: disks are decimal strings, maps are string-keyed, ids are an `identifiers` map. */
const legacyCommon = (disk: DiskService, version: string) => ({
  listDiskLocations: async (_req: object, ctx: CallContext) => ({ diskLocations: stringKeys(await disk.listDiskLocations({}, ctx), location) }),
  partitionDisk: async (req: { diskID: string }, ctx: CallContext) => {
    await disk.partitionDisk({ diskNumber: parseDiskId(req.diskID, `Failed to convert ${version}.PartitionDiskRequest.DiskID to uint32: `) }, ctx);
    return {};
  },
  rescan: async (_req: object, ctx: CallContext) => (await disk.rescan({}, ctx), {}),
});

const legacyIds = (disk: DiskService, version: string) => ({
  ...legacyCommon(disk, version),
  listDiskIDs: async (_req: object, ctx: CallContext) => ({
    diskIDs: stringKeys(await disk.listDiskIds({}, ctx), (ids) => ({ identifiers: { page83: ids.page83, serialNumber: ids.serialNumber } })),
  }),
  diskStats: async (req: { diskID: string }, ctx: CallContext) => {
    const { totalBytes } = await disk.getDiskStats({ diskNumber: parseDiskId(req.diskID, "Failed to format DiskStatsRequest.DiskID with err: ") }, ctx);
    return { diskSize: totalBytes };
  },
});

/** v1beta3 and v1: uint32 disk numbers. */
const current = (disk: DiskService) => ({
  listDiskLocations: async (_req: object, ctx: CallContext) => ({ diskLocations: numberKeys(await disk.listDiskLocations({}, ctx), location) }),
  partitionDisk: async (req: { diskNumber: number }, ctx: CallContext) => (await disk.partitionDisk({ diskNumber: req.diskNumber }, ctx), {}),
  rescan: async (_req: object, ctx: CallContext) => (await disk.rescan({}, ctx), {}),
  listDiskIDs: async (_req: object, ctx: CallContext) => ({ diskIDs: numberKeys(await disk.listDiskIds({}, ctx), (ids) => ({ ...ids })) }),
  getDiskStats: (req: { diskNumber: number }, ctx: CallContext) => disk.getDiskStats({ diskNumber: req.diskNumber }, ctx),
  setDiskState: async (req: { diskNumber: number; isOnline: boolean }, ctx: CallContext) => (await disk.setDiskState({ diskNumber: req.diskNumber, isOnline: req.isOnline }, ctx), {}),
  getDiskState: (req: { diskNumber: number }, ctx: CallContext) => disk.getDiskState({ diskNumber: req.diskNumber }, ctx),
});

export const diskAdapters: GroupAdapters<"disk", DiskService> = {
  v1alpha1: (disk) => ({
    ...legacyCommon(disk, "v1alpha1"),
    getDiskNumberByName: async (req: { diskName: string }, ctx: CallContext) => {
      const { diskNumber } = await disk.getDiskNumberByName({ diskName: req.diskName }, ctx);
      return { diskNumber: String(diskNumber) };
    },
  }),
  v1beta1: (disk) => legacyIds(disk, "v1beta1"),
  v1beta2: (disk) => ({
    ...legacyIds(disk, "v1beta2"),
    setAttachState: async (req: { diskID: string; isOnline: boolean }, ctx: CallContext) => {
      await disk.setDiskState({ diskNumber: parseDiskId(req.diskID, "Failed to format SetAttachStateRequest.DiskID with err: "), isOnline: req.isOnline }, ctx);
      return {};
    },
    getAttachState: (req: { diskID: string }, ctx: CallContext) => disk.getDiskState({ diskNumber: parseDiskId(req.diskID, "Failed to format GetAttachStateRequest.DiskID with err: ") }, ctx),
  }),
  v1beta3: current,
  v1: current,
};
