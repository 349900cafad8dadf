/**
 * Online state of a disk: SCSI device state, or csi-proxy's offline marks, which count only while the
 * device holds the same medium (same diskseq).
 */
import type { BlockDisk, OfflineMark } from "./block-types.ts";
import type { BlockSnapshot } from "./block-snapshot.ts";
import { sameDev } from "./disk-numbers.ts";

/** A mark counts for the device only while it holds the same medium (same diskseq). */
const markMatches = (mark: OfflineMark, disk: BlockDisk) => sameDev(mark, disk) && mark.diskSeq === disk.diskSeq;

export const markOf = (snap: BlockSnapshot, disk: BlockDisk) => snap.marks.find((m) => markMatches(m, disk));

/** Marks that still name an existing device with the same medium (stale ones are dropped on the next write). */
export const liveMarks = (snap: BlockSnapshot) => snap.marks.filter((m) => snap.disks.some((d) => markMatches(m, d)));

/** SCSI disks: device state "running"; other disks: no csi-proxy offline mark. */
export function isDiskOnline(snap: BlockSnapshot, disk: BlockDisk): boolean {
  if (disk.scsiState !== null) return disk.scsiState === "running";
  const mark = markOf(snap, disk);
  // A mark whose read-only flag was never set (the daemon stopped between recording and setting it) is not offline yet.
  return mark === undefined || (mark.setReadOnly && !disk.readOnly);
}
