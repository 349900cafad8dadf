import type { CallOptions, NoRequest } from "../../util/call-scope.ts";
/** Where a disk sits on its storage adapter; all values are decimal strings, empty when unknown. */
export interface DiskLocation {
  adapter: string;
  bus: string;
  target: string;
  lunId: string;
}

/** Identifiers of a disk: SCSI VPD page 0x83 device id and the serial number ("" when absent). */
export interface DiskIds {
  page83: string;
  serialNumber: string;
}

/**
 * Version-agnostic disk API (newest shapes, v1). Disks are named by their disk number, stable for
 * the device's lifetime. Unknown disk numbers are NotFound.
 */
export interface DiskService {
  /** Location of every disk that has one, by disk number. */
  listDiskLocations(req?: NoRequest, options?: CallOptions): Promise<Map<number, DiskLocation>>;
  /**
   * Initialises a raw disk with a GPT table and adds one data partition filling it, when no data
   * partition exists. Idempotent. A disk holding data without a partition table is FailedPrecondition.
   */
  partitionDisk(req: { diskNumber: number }, options?: CallOptions): Promise<void>;
  /** Re-reads the host's view of disks and their sizes. */
  rescan(req?: NoRequest, options?: CallOptions): Promise<void>;
  /** Identifiers of every disk, by disk number. */
  listDiskIds(req?: NoRequest, options?: CallOptions): Promise<Map<number, DiskIds>>;
  /** Size of the disk in bytes. */
  getDiskStats(req: { diskNumber: number }, options?: CallOptions): Promise<{ totalBytes: bigint }>;
  /** Brings the disk online or offline; idempotent. */
  setDiskState(req: { diskNumber: number; isOnline: boolean }, options?: CallOptions): Promise<void>;
  getDiskState(req: { diskNumber: number }, options?: CallOptions): Promise<{ isOnline: boolean }>;
  /** Disk number of the disk whose page83 id equals `diskName` (v1alpha1 GetDiskNumberByName). NotFound when none. */
  getDiskNumberByName(req: { diskName: string }, options?: CallOptions): Promise<{ diskNumber: number }>;
}
