import type { GroupAdapters } from "../../api/adapters.ts";
import { parseDiskId } from "../../api/legacy-ids.ts";
import type { VolumeService } from "./types.ts";
import { forwarded } from "./forwarded.ts";

/**
 * v1alpha1–v1beta2: string disk ids, `path`/`size` field names, Dismount/VolumeStats/… method names.
 * The four renamed methods answer every failure as upstream's forwarders do ({@link forwarded}).
 */
const legacy = (volume: VolumeService) => ({
  listVolumesOnDisk: (req: { diskId: string }) =>
    volume.listVolumesOnDisk({ diskNumber: parseDiskId(req.diskId, "Failed to parse diskId: err="), partitionNumber: 0 }),
  mountVolume: async (req: { volumeId: string; path: string }) => (await volume.mountVolume({ volumeId: req.volumeId, targetPath: req.path }), {}),
  dismountVolume: (req: { volumeId: string; path: string }) =>
    forwarded("UnmountVolume", async () => (await volume.unmountVolume({ volumeId: req.volumeId, targetPath: req.path }), {})),
  isVolumeFormatted: (req: { volumeId: string }) => volume.isVolumeFormatted({ volumeId: req.volumeId }),
  formatVolume: async (req: { volumeId: string }) => (await volume.formatVolume({ volumeId: req.volumeId }), {}),
  resizeVolume: async (req: { volumeId: string; size: bigint }) => (await volume.resizeVolume({ volumeId: req.volumeId, sizeBytes: req.size }), {}),
});

const legacyStats = (volume: VolumeService) => ({
  ...legacy(volume),
  volumeStats: (req: { volumeId: string }) =>
    forwarded("GetVolumeStats", async () => {
      const { totalBytes, usedBytes } = await volume.getVolumeStats({ volumeId: req.volumeId });
      return { volumeSize: totalBytes, volumeUsedSize: usedBytes };
    }),
  getVolumeDiskNumber: (req: { volumeId: string }) =>
    forwarded("GetDiskNumberFromVolumeID", async () => {
      const { diskNumber } = await volume.getDiskNumberFromVolumeId({ volumeId: req.volumeId });
      return { diskNumber: BigInt(diskNumber) };
    }),
  getVolumeIDFromMount: (req: { mount: string }) =>
    forwarded("GetVolumeIDFromTargetPath", () => volume.getVolumeIdFromTargetPath({ targetPath: req.mount })),
});

/** v1beta3 and v1: current names and shapes; v2alpha1 adds GetClosestVolumeIDFromTargetPath. */
const current = (volume: VolumeService) => ({
  listVolumesOnDisk: (req: { diskNumber: number; partitionNumber: number }) => volume.listVolumesOnDisk({ diskNumber: req.diskNumber, partitionNumber: req.partitionNumber }),
  mountVolume: async (req: { volumeId: string; targetPath: string }) => (await volume.mountVolume({ volumeId: req.volumeId, targetPath: req.targetPath }), {}),
  unmountVolume: async (req: { volumeId: string; targetPath: string }) => (await volume.unmountVolume({ volumeId: req.volumeId, targetPath: req.targetPath }), {}),
  isVolumeFormatted: (req: { volumeId: string }) => volume.isVolumeFormatted({ volumeId: req.volumeId }),
  formatVolume: async (req: { volumeId: string }) => (await volume.formatVolume({ volumeId: req.volumeId }), {}),
  resizeVolume: async (req: { volumeId: string; sizeBytes: bigint }) => (await volume.resizeVolume({ volumeId: req.volumeId, sizeBytes: req.sizeBytes }), {}),
  getVolumeStats: (req: { volumeId: string }) => volume.getVolumeStats({ volumeId: req.volumeId }),
  getDiskNumberFromVolumeID: (req: { volumeId: string }) => volume.getDiskNumberFromVolumeId({ volumeId: req.volumeId }),
  getVolumeIDFromTargetPath: (req: { targetPath: string }) => volume.getVolumeIdFromTargetPath({ targetPath: req.targetPath }),
  writeVolumeCache: async (req: { volumeId: string }) => (await volume.writeVolumeCache({ volumeId: req.volumeId }), {}),
});

export const volumeAdapters: GroupAdapters<"volume", VolumeService> = {
  v1alpha1: legacy,
  v1beta1: legacyStats,
  v1beta2: (volume) => ({
    ...legacyStats(volume),
    writeVolumeCache: async (req: { volumeId: string }) => (await volume.writeVolumeCache({ volumeId: req.volumeId }), {}),
  }),
  v1beta3: current,
  v1: current,
  v2alpha1: (volume) => ({
    ...current(volume),
    getClosestVolumeIDFromTargetPath: (req: { targetPath: string }) =>
      volume.getClosestVolumeIdFromTargetPath({ targetPath: req.targetPath }),
  }),
};
