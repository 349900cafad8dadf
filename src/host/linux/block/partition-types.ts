/**
 * Partition types: which partitions are volumes, the Microsoft reserved partition, MBR extended
 * containers, and the types PartitionDisk writes on Linux. Type ids are compared case-insensitively.
 */

/** GPT types that never carry a volume: Microsoft reserved (upstream ignores it), BIOS boot. */
const NON_VOLUME_GPT_TYPES = new Set(["e3c9e316-0b5c-4db8-817d-f92df00215ae", "21686148-6449-6e6f-744e-656564454649"]);
/** MBR extended-partition containers: they hold logical partitions, not a filesystem. */
const MBR_EXTENDED_TYPES = new Set(["0x5", "0xf", "0x85"]);

export const MSR_TYPE = "e3c9e316-0b5c-4db8-817d-f92df00215ae";

/** An MBR extended container ("0x5", "0x05", "0xF"…): holds logical partitions, not a filesystem. */
export function isMbrExtended(typeId: string | null): boolean {
  return MBR_EXTENDED_TYPES.has((typeId ?? "").toLowerCase().replace(/^0x0*/, "0x"));
}

/** GPT "Linux filesystem data": the type PartitionDisk gives the data partition on Linux. */
export const LINUX_DATA_GPT_TYPE = "0fc63daf-8483-4772-8e79-3d69d8477de4";
/** MBR "Linux" (0x83). */
export const LINUX_DATA_MBR_TYPE = "83";

/** The Microsoft reserved partition (upstream never counts it as a data partition). */
export function isReservedPartition(p: { typeId: string | null }): boolean {
  return p.typeId?.toLowerCase() === MSR_TYPE;
}

/** Partitions that are volumes: all but MSR, BIOS boot and MBR extended containers. */
export function isVolumePartition(p: { typeId: string | null }): boolean {
  const t = p.typeId?.toLowerCase() ?? "";
  return !NON_VOLUME_GPT_TYPES.has(t) && !isMbrExtended(t);
}
