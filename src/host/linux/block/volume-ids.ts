/**
 * Volumes and their ids: a partition or a whole-disk filesystem, named `\\?\Volume{<PARTUUID>}\` or
 * `\\?\Volume{dev-<major>-<minor>}\` (docs/linux-concept-map.md). Pure.
 */
import { invalidArgument } from "../../../errors.ts";
import type { BlockDisk, BlockPartition, DevNumber } from "./block-types.ts";

/** A volume: a partition, or a whole disk holding a filesystem without a partition table. */
export interface VolumeRef {
  id: string;
  disk: BlockDisk;
  partition: BlockPartition | null;
  /** The device node holding the filesystem. */
  devPath: string;
  dev: DevNumber;
}

/**
 * Volume id of a partition: `\\?\Volume{<PARTUUID>}\` (the shape Windows uses, so drivers' regexes
 * keep working; stable across formatting, unique per partition table). Partitions without a
 * PARTUUID and whole-disk filesystems get `\\?\Volume{dev-<major>-<minor>}\`, stable while the
 * device exists.
 */
export function volumeIdOf(dev: BlockPartition | BlockDisk): string {
  const uuid = "uuid" in dev ? dev.uuid : null;
  return `\\\\?\\Volume{${uuid ?? `dev-${dev.major}-${dev.minor}`}}\\`;
}

export function volumeOfPartition(disk: BlockDisk, p: BlockPartition): VolumeRef {
  return { id: volumeIdOf(p), disk, partition: p, devPath: p.devPath, dev: { major: p.major, minor: p.minor } };
}

export function volumeOfWholeDisk(disk: BlockDisk): VolumeRef {
  return { id: volumeIdOf(disk), disk, partition: null, devPath: disk.devPath, dev: { major: disk.major, minor: disk.minor } };
}

export type ParsedVolumeId = { kind: "uuid"; uuid: string } | { kind: "dev"; dev: DevNumber };

/**
 * Parses `\\?\Volume{X}\` (the trailing backslash is optional; Windows APIs accept both). X is a
 * PARTUUID (GPT GUID or MBR `xxxxxxxx-nn`) or `dev-<major>-<minor>`, compared case-insensitively
 * (keyword included, as Windows volume GUID paths are). Anything else: InvalidArgument.
 */
export function parseVolumeId(id: string): ParsedVolumeId {
  const m = /^\\\\\?\\Volume\{([^{}\\]+)\}\\?$/i.exec(id);
  const inner = m?.[1] ?? "";
  const dev = /^dev-(\d{1,4})-(\d{1,7})$/i.exec(inner);
  if (dev) return { kind: "dev", dev: { major: Number(dev[1]), minor: Number(dev[2]) } };
  if (/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(inner) || /^[0-9a-fA-F]{8}-[0-9a-fA-F]{2}$/.test(inner)) {
    return { kind: "uuid", uuid: inner.toLowerCase() };
  }
  throw invalidArgument(`volume id ${JSON.stringify(id)} is not of the form \\\\?\\Volume{<partition uuid>}\\`);
}

