/**
 * Disk numbers: a device's kernel dev_t as the API's disk number, and the disks the API shows
 * (docs/linux-concept-map.md). Pure; nothing here touches the host.
 */
import type { BlockDisk, DevNumber } from "./block-types.ts";

const MINOR_BITS = 2 ** 20;

/** Disk number of a device: the kernel's internal dev_t, (major << 20) | minor. Fits uint32, unique, stable while the device exists. */
export function diskNumberOf(dev: DevNumber): number {
  return dev.major * MINOR_BITS + dev.minor;
}

/** The device a disk number names (inverse of {@link diskNumberOf}). */
export function devOfDiskNumber(diskNumber: number): DevNumber {
  return { major: Math.floor(diskNumber / MINOR_BITS), minor: diskNumber % MINOR_BITS };
}

export const sameDev = (a: DevNumber, b: DevNumber) => a.major === b.major && a.minor === b.minor;
export const devString = (d: DevNumber) => `${d.major}:${d.minor}`;

/**
 * Disks the API shows: whole block devices with a medium (size > 0). That leaves out unattached loop
 * devices, empty card readers and unconfigured zram. Sorted by disk number.
 */
export function visibleDisks(disks: readonly BlockDisk[]): BlockDisk[] {
  return disks.filter((d) => d.sizeBytes > 0n).sort((a, b) => diskNumberOf(a) - diskNumberOf(b));
}
