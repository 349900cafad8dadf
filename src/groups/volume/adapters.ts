import type { CallContext } from "../../api/handlers.ts";
import type { GroupAdapters } from "../../api/adapters.ts";
import { parseDiskId } from "../../api/legacy-ids.ts";
import type { VolumeService } from "./types.ts";
import { forwarded } from "./forwarded.ts";

/**
 * v1alpha1–v1beta2: string disk ids, `path`/`size` field names, Dismount/VolumeStats/… method names.
 * The four renamed methods answer every failure as upstream's forwarders do ({@link forwarded}).
 */
const legacy = (volume: VolumeService) => ({
  listVolumesOnDisk: (req: { diskId: string }, ctx: CallContext) =>
    volume.listVolumesOnDisk({ diskNumber: parseDiskId(req.diskId, "Failed to parse diskId: err="), partitionNumber: 0 }, ctx),
  mountVolume: async (req: { volumeId: string; path: string }, ctx: CallContext) => (await volume.mountVolume({ volumeId: req.volumeId, targetPath: req.path }, ctx), {}),
  dismountVolume: (req: { volumeId: string; path: string }, ctx: CallContext) =>
    forwarded("UnmountVolume", async () => (await volume.unmountVolume({ volumeId: req.volumeId, targetPath: req.path }, ctx), {})),
  isVolumeFormatted: (req: { volumeId: string }, ctx: CallContext) => volume.isVolumeFormatted({ volumeId: req.volumeId }, ctx),
  formatVolume: async (req: { volumeId: string }, ctx: CallContext) => (await volume.formatVolume({ volumeId: req.volumeId }, ctx), {}),
  resizeVolume: async (req: { volumeId: string; size: bigint }, ctx: CallContext) => (await volume.resizeVolume({ volumeId: req.volumeId, sizeBytes: req.size }, ctx), {}),
});

const legacyStats = (volume: VolumeService) => ({
  ...legacy(volume),
  volumeStats: (req: { volumeId: string }, ctx: CallContext) =>
    forwarded("GetVolumeStats", async () => {
      const { totalBytes, usedBytes } = await volume.getVolumeStats({ volumeId: req.volumeId }, ctx);
      return { volumeSize: totalBytes, volumeUsedSize: usedBytes };
    }),
  getVolumeDiskNumber: (req: { volumeId: string }, ctx: CallContext) =>
    forwarded("GetDiskNumberFromVolumeID", async () => {
      const { diskNumber } = await volume.getDiskNumberFromVolumeId({ volumeId: req.volumeId }, ctx);
      return { diskNumber: BigInt(diskNumber) };
    }),
  getVolumeIDFromMount: (req: { mount: string }, ctx: CallContext) =>
    forwarded("GetVolumeIDFromTargetPath", () => volume.getVolumeIdFromTargetPath({ targetPath: req.mount }, ctx)),
});

/** v1beta3 and v1: current names and shapes; v2alpha1 adds GetClosestVolumeIDFromTargetPath. */
const current = (volume: VolumeService) => ({
  listVolumesOnDisk: (req: { diskNumber: number; partitionNumber: number }, ctx: CallContext) => volume.listVolumesOnDisk({ diskNumber: req.diskNumber, partitionNumber: req.partitionNumber }, ctx),
  mountVolume: async (req: { volumeId: string; targetPath: string }, ctx: CallContext) => (await volume.mountVolume({ volumeId: req.volumeId, targetPath: req.targetPath }, ctx), {}),
  unmountVolume: async (req: { volumeId: string; targetPath: string }, ctx: CallContext) => (await volume.unmountVolume({ volumeId: req.volumeId, targetPath: req.targetPath }, ctx), {}),
  isVolumeFormatted: (req: { volumeId: string }, ctx: CallContext) => volume.isVolumeFormatted({ volumeId: req.volumeId }, ctx),
  formatVolume: async (req: { volumeId: string }, ctx: CallContext) => (await volume.formatVolume({ volumeId: req.volumeId }, ctx), {}),
  resizeVolume: async (req: { volumeId: string; sizeBytes: bigint }, ctx: CallContext) => (await volume.resizeVolume({ volumeId: req.volumeId, sizeBytes: req.sizeBytes }, ctx), {}),
  getVolumeStats: (req: { volumeId: string }, ctx: CallContext) => volume.getVolumeStats({ volumeId: req.volumeId }, ctx),
  getDiskNumberFromVolumeID: (req: { volumeId: string }, ctx: CallContext) => volume.getDiskNumberFromVolumeId({ volumeId: req.volumeId }, ctx),
  getVolumeIDFromTargetPath: (req: { targetPath: string }, ctx: CallContext) => volume.getVolumeIdFromTargetPath({ targetPath: req.targetPath }, ctx),
  writeVolumeCache: async (req: { volumeId: string }, ctx: CallContext) => (await volume.writeVolumeCache({ volumeId: req.volumeId }, ctx), {}),
});

export const volumeAdapters: GroupAdapters<"volume", VolumeService> = {
  v1alpha1: legacy,
  v1beta1: legacyStats,
  v1beta2: (volume) => ({
    ...legacyStats(volume),
    writeVolumeCache: async (req: { volumeId: string }, ctx: CallContext) => (await volume.writeVolumeCache({ volumeId: req.volumeId }, ctx), {}),
  }),
  v1beta3: current,
  v1: current,
  v2alpha1: (volume) => ({
    ...current(volume),
    getClosestVolumeIDFromTargetPath: (req: { targetPath: string }, ctx: CallContext) =>
      volume.getClosestVolumeIdFromTargetPath({ targetPath: req.targetPath }, ctx),
  }),
};
