/**
 * What Linux block devices mean in the disk and volume APIs' terms (docs/linux-concept-map.md explains
 * every choice), gathered for the Linux disk and volume hosts. Re-exports only; each concern lives in
 * the module named after it. Pure interpretation: nothing here touches the host or decides what to do.
 */
export { devOfDiskNumber, devString, diskNumberOf, sameDev, visibleDisks } from "./disk-numbers.ts";
export { diskIds, diskLocation, page83FromVpd, page83FromWwid, serialFromVpd } from "./disk-ids.ts";
export { isMbrExtended, isReservedPartition, isVolumePartition, LINUX_DATA_GPT_TYPE, LINUX_DATA_MBR_TYPE, MSR_TYPE } from "./partition-types.ts";
export { parseVolumeId, volumeIdOf, volumeOfPartition, volumeOfWholeDisk, type ParsedVolumeId, type VolumeRef } from "./volume-ids.ts";
export { findVolume, requireDisk, takeSnapshot, volumeOfDevice, type BlockSnapshot, type SnapshotOptions, type SnapshotSources } from "./block-snapshot.ts";
export { mountAt, mountHoldingPath, mountsOf, rootMount } from "./snapshot-mounts.ts";
export { isDiskOnline, liveMarks, markOf } from "./disk-online.ts";
export { deviceUse, noUse, stackedUses, tableMismatch } from "./device-use.ts";
export { contentSignatures, describeProbe, describeSignatures, growableFamily, isFilesystem } from "./probe-facts.ts";
export { rootRequirement } from "./root-requirement.ts";
