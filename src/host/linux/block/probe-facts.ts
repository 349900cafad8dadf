/**
 * Reading probe results: the phrases messages use for them, and which filesystems can be grown here.
 * What counts as content among signatures, and how they read in messages, are policy's
 * (policy/block-policy.ts `contentSignatures`, `describeSignatures`).
 */
import type { ManagedFsType, ProbeResult } from "./block-types.ts";

/** "xfs", "LVM2_member (raid)", "conflicting signatures (…)" for messages. */
export function describeProbe(p: ProbeResult): string {
  if (p.kind === "empty") return "no signature";
  if (p.kind === "ambivalent") return `conflicting signatures (${p.detail})`;
  if (p.ptType && !p.type) return `a ${p.ptType} partition table`;
  return `${p.type ?? "an unknown signature"}${p.usage && p.usage !== "filesystem" ? ` (${p.usage})` : ""}${p.unfinished ? " (its mkfs never finished)" : ""}`;
}

/** A probe that found exactly one filesystem. */
export const isFilesystem = (p: ProbeResult): p is { kind: "found"; type: string; usage: string; ptType: string | null; unfinished?: true } =>
  p.kind === "found" && p.usage === "filesystem" && p.type !== null;

/** resize2fs grows the whole ext family; xfs_growfs grows xfs. Other filesystems cannot be grown here. */
export function growableFamily(fsType: string | null): ManagedFsType | null {
  if (fsType === "ext2" || fsType === "ext3" || fsType === "ext4") return "ext4";
  if (fsType === "xfs") return "xfs";
  return null;
}
