/**
 * Reading probe results and signature lists: content (non-table) signatures, the phrases messages
 * use for them, and which filesystems can be grown here.
 */
import type { ManagedFsType, ProbeResult, Signature } from "./block-types.ts";

/** Signatures wipefs lists that are not partition tables (the filesystems, RAID, LVM, crypto… members). */
export const contentSignatures = (sigs: readonly Signature[]) => sigs.filter((x) => !PARTITION_TABLE_SIGNATURES.has(x.type.toLowerCase()));
const PARTITION_TABLE_SIGNATURES = new Set(["gpt", "pmbr", "dos"]);

/** "exfat at byte 3, dos at byte 510" for messages. */
export const describeSignatures = (sigs: readonly Signature[]) => sigs.map((x) => `${x.type} at byte ${x.offset}`).join(", ");

/** "xfs", "LVM2_member (raid)", "conflicting signatures (…)" for messages. */
export function describeProbe(p: ProbeResult): string {
  if (p.kind === "empty") return "no signature";
  if (p.kind === "ambivalent") return `conflicting signatures (${p.detail})`;
  if (p.ptType && !p.type) return `a ${p.ptType} partition table`;
  return `${p.type ?? "an unknown signature"}${p.usage && p.usage !== "filesystem" ? ` (${p.usage})` : ""}`;
}

/** A probe that found exactly one filesystem. */
export const isFilesystem = (p: ProbeResult): p is { kind: "found"; type: string; usage: string; ptType: string | null } =>
  p.kind === "found" && p.usage === "filesystem" && p.type !== null;

/** resize2fs grows the whole ext family; xfs_growfs grows xfs. Other filesystems cannot be grown here. */
export function growableFamily(fsType: string | null): ManagedFsType | null {
  if (fsType === "ext2" || fsType === "ext3" || fsType === "ext4") return "ext4";
  if (fsType === "xfs") return "xfs";
  return null;
}
