import type { CallOptions } from "../../util/call-scope.ts";
/**
 * Version-agnostic volume API (newest shapes, v2alpha1). Volume ids are opaque strings produced by
 * ListVolumesOnDisk (`\\?\Volume{GUID}\` on Windows); an empty id is InvalidArgument, an unknown one
 * NotFound. Sizes are bytes.
 */
export interface VolumeService {
  /** Volumes on a disk; partitionNumber 0 means every partition. Unknown disk: empty list. */
  listVolumesOnDisk(req: { diskNumber: number; partitionNumber: number }, options?: CallOptions): Promise<{ volumeIds: string[] }>;
  /** Mounts the volume at targetPath (an existing empty directory). Idempotent for the same volume and path. */
  mountVolume(req: { volumeId: string; targetPath: string }, options?: CallOptions): Promise<void>;
  /** Flushes, then unmounts the volume from targetPath. The directory remains. */
  unmountVolume(req: { volumeId: string; targetPath: string }, options?: CallOptions): Promise<void>;
  /** True when the volume holds any filesystem. */
  isVolumeFormatted(req: { volumeId: string }, options?: CallOptions): Promise<{ formatted: boolean }>;
  /** Creates the default filesystem on a volume nothing uses, replacing one of the same type (as upstream, it formats again); FailedPrecondition when the volume is in use or holds any other signature. */
  formatVolume(req: { volumeId: string }, options?: CallOptions): Promise<void>;
  /** Grows the partition (and filesystem) to sizeBytes; 0 fills the disk; smaller or < +100 MiB is a no-op; negative is InvalidArgument. */
  resizeVolume(req: { volumeId: string; sizeBytes: bigint }, options?: CallOptions): Promise<void>;
  /** Filesystem size and used bytes. */
  getVolumeStats(req: { volumeId: string }, options?: CallOptions): Promise<{ totalBytes: bigint; usedBytes: bigint }>;
  getDiskNumberFromVolumeId(req: { volumeId: string }, options?: CallOptions): Promise<{ diskNumber: number }>;
  /** The volume mounted exactly at targetPath; a path that is not a mount point is NotFound. */
  getVolumeIdFromTargetPath(req: { targetPath: string }, options?: CallOptions): Promise<{ volumeId: string }>;
  /** The volume holding targetPath (walking up to the nearest mount). */
  getClosestVolumeIdFromTargetPath(req: { targetPath: string }, options?: CallOptions): Promise<{ volumeId: string }>;
  /** Flushes the volume's write cache to disk. */
  writeVolumeCache(req: { volumeId: string }, options?: CallOptions): Promise<void>;
}
