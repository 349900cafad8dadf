/**
 * ListDiskIDs and ListDiskLocations in Linux terms: SCSI VPD pages, sysfs wwids and addresses
 * (docs/linux-concept-map.md). Pure; the block reads feed it.
 */
import type { DiskIds, DiskLocation } from "../../../groups/disk/types.ts";
import type { BlockDisk } from "./block-types.ts";

/** ListDiskLocations: SCSI H:C:T:L → adapter/bus/target/LUN; disks without a SCSI address have no location (omitted, as upstream omits disks without a Location). */
export function diskLocation(disk: BlockDisk): DiskLocation | null {
  const a = disk.scsiAddress;
  if (!a) return null;
  return { adapter: String(a.host), bus: String(a.channel), target: String(a.target), lunId: String(a.lun) };
}

/**
 * SCSI VPD page 0x83: the first designator with association "addressed logical unit" (0) and code
 * set binary (1, rendered as lower-case hex) or ASCII (2, verbatim), as upstream does with
 * IOCTL_STORAGE_QUERY_PROPERTY. "" when there is none or the page is malformed.
 */
export function page83FromVpd(page: Uint8Array): string {
  if (page.length < 4 || page[1] !== 0x83) return "";
  const end = Math.min(page.length, 4 + ((page[2] << 8) | page[3]));
  for (let off = 4; off + 4 <= end; ) {
    const codeSet = page[off] & 0x0f;
    const association = (page[off + 1] >> 4) & 0x03;
    const len = page[off + 3];
    const body = page.subarray(off + 4, Math.min(off + 4 + len, end));
    if (association === 0 && codeSet === 1) return Buffer.from(body).toString("hex");
    if (association === 0 && codeSet === 2) return Buffer.from(body).toString("latin1");
    off += 4 + len;
  }
  return "";
}

/** SCSI VPD page 0x80 (unit serial number), untrimmed like Windows' SerialNumber; null when malformed. */
export function serialFromVpd(page: Uint8Array): string | null {
  if (page.length < 4 || page[1] !== 0x80) return null;
  const len = (page[2] << 8) | page[3];
  return Buffer.from(page.subarray(4, 4 + len)).toString("latin1");
}

/** page83 from a sysfs wwid ("naa.<hex>", "eui.<hex>", "t10.<ascii>"), in the VPD rendering above. */
export function page83FromWwid(wwid: string): string {
  const m = /^(naa|eui|t10)\.(.*)$/.exec(wwid.trim());
  if (!m) return "";
  return m[1] === "t10" ? m[2] : m[2].toLowerCase();
}

/**
 * ListDiskIDs identifiers. serialNumber: a loop device's backing file (so a caller can find the disk
 * it attached), else VPD 0x80, else the device's serial attribute, else "". page83: VPD 0x83, else
 * the wwid, else "" (loop and virtio disks have none).
 */
export function diskIds(disk: BlockDisk): DiskIds {
  const serialNumber = disk.loopBackingFile ?? (disk.vpdPage80 && serialFromVpd(disk.vpdPage80)) ?? disk.serial ?? "";
  let page83 = disk.vpdPage83 ? page83FromVpd(disk.vpdPage83) : "";
  if (!page83 && disk.wwid) page83 = page83FromWwid(disk.wwid);
  return { page83, serialNumber };
}

