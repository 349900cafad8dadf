/**
 * How the kernel uses a device, as facts for the services' refusals: root filesystem, swap, holders,
 * stacked loop devices, partitions out of step with the on-disk table, mounts, processes holding the
 * node. Phrases follow "is"; nothing here decides what to do.
 */
import type { DeviceUse } from "../../../policy/host-device.ts";
import type { BlockDisk, BlockPartition, LoopBacking } from "./block-types.ts";
import type { BlockSnapshot } from "./block-snapshot.ts";
import { sameDev } from "./disk-numbers.ts";
import { isMbrExtended } from "./partition-types.ts";
import { mountsOf, rootMount } from "./snapshot-mounts.ts";

/**
 * Where the kernel's partition disagrees with the partition table on the disk (number, start, size;
 * an MBR extended container's size is not compared: the kernel shows it as 1 KiB), as a phrase that
 * follows "is"; null when they agree or the table cannot be read.
 */
export function tableMismatch(p: BlockPartition, disk: BlockDisk): string | null {
  const table = disk.partitionTable;
  if (!table) return null;
  const e = table.entries.find((x) => x.number === p.number);
  const fix = `re-read the table with partx --update ${disk.devPath}`;
  if (!e) return `shown by the kernel as partition ${p.number} (sectors ${p.startSectors}+${p.sizeSectors}), which the partition table of ${disk.devPath} does not have (stale kernel partition; ${fix})`;
  if (e.startSectors !== p.startSectors || (!isMbrExtended(e.typeId) && e.sizeSectors !== p.sizeSectors)) {
    return `stale: the kernel shows partition ${p.number} at sectors ${p.startSectors}+${p.sizeSectors}, the partition table of ${disk.devPath} at ${e.startSectors}+${e.sizeSectors} (${fix})`;
  }
  return null;
}

const sameBacking = (a: LoopBacking, b: LoopBacking) =>
  a.kind === b.kind && sameDev(a.dev, b.dev) && (a.kind === "block" || (b.kind === "file" && a.ino === b.ino));

/** Bytes [start, end) of `dev` within its disk. */
function regionOf(dev: BlockDisk | BlockPartition, disk: BlockDisk): [bigint, bigint] {
  return "startSectors" in dev ? [dev.startSectors * 512n, (dev.startSectors + dev.sizeSectors) * 512n] : [0n, disk.sizeBytes];
}

/**
 * Loop devices reading or writing bytes of `dev` (a disk, or a partition of `disk`), which register no
 * holder and take no claim: loops on `dev` itself, on its disk at an overlapping offset, on one of its
 * partitions (for a disk), or on the same backing object as `disk` over overlapping bytes (the same
 * image attached twice). And the other way round: `disk` is itself a loop on a block device that is
 * mounted or swap. Phrases that follow "is".
 */
export function stackedUses(snap: BlockSnapshot, dev: BlockDisk | BlockPartition, disk: BlockDisk, within: BlockDisk | BlockPartition = dev): string[] {
  const [start, end] = regionOf(within, disk);
  const own = snap.loops.find((l) => sameDev(l, disk));
  const out: string[] = [];
  for (const l of snap.loops) {
    if (sameDev(l, disk) || !l.backing) continue;
    const overlaps = (s: bigint, e: bigint) => l.offsetBytes < e && s < l.offsetBytes + l.sizeBytes;
    let hit = false;
    if (l.backing.kind === "block") {
      const under = l.backing.dev;
      hit = sameDev(under, disk) ? overlaps(start, end) : sameDev(under, dev);
    }
    if (!hit && own?.backing && sameBacking(own.backing, l.backing)) hit = overlaps(own.offsetBytes + start, own.offsetBytes + end);
    if (hit) out.push(`in use by ${l.devPath} (a loop device on ${l.backingFile}, bytes ${l.offsetBytes}–${l.offsetBytes + l.sizeBytes})`);
  }
  if (own?.backing?.kind === "block") {
    const under = own.backing.dev;
    for (const m of mountsOf(snap, under)) out.push(`stacked on ${own.backingFile}, which is mounted at ${m.mountPoint}`);
    if (snap.swaps.some((x) => sameDev(x, under))) out.push(`stacked on ${own.backingFile}, which is in use as swap`);
  }
  return out;
}

/**
 * How the kernel uses a device (`dev`: a disk, or a partition of `disk`): the root filesystem, swap,
 * holders and loop devices stacked on it (on a disk: over the bytes of `within` when given, the
 * partition a volume operation concerns), partitions out of step with the table, its mounts; and
 * the processes holding its node, when the snapshot scanned for them.
 */
export function deviceUse(snap: BlockSnapshot, dev: BlockDisk | BlockPartition, disk: BlockDisk, within?: BlockPartition): DeviceUse {
  const root = rootMount(snap);
  const busy: string[] = [];
  if (snap.swaps.some((s) => sameDev(s, dev))) busy.push("in use as swap");
  if (dev.holders.length) busy.push(`in use by ${dev.holders.map((h) => `/dev/${h}`).join(", ")} (holders)`);
  busy.push(...stackedUses(snap, dev, disk, within));
  if ("startSectors" in dev) {
    const stale = tableMismatch(dev, disk);
    if (stale) busy.push(stale);
  } else {
    const stale = disk.partitions.filter((p) => tableMismatch(p, disk) !== null).map((p) => p.number);
    if (stale.length) busy.push(`out of step with its partition table: the kernel shows partition${stale.length > 1 ? "s" : ""} ${stale.join(", ")} where the table has none or another extent (re-read the table with partx --update ${disk.devPath})`);
  }
  const use: DeviceUse = {
    system: root && sameDev(root, dev) ? "the root filesystem /" : null,
    mountPoints: mountsOf(snap, dev)
      .map((m) => m.mountPoint)
      .filter((m) => m !== "/"), // reported as `system`
    busy,
  };
  if (snap.openers) use.openers = snap.openers.filter((o) => sameDev(o.dev, dev)).map(({ pid, command, access }) => ({ pid, command, access }));
  return use;
}

/** Nothing known about a device the kernel does not show. */
export const noUse = (): DeviceUse => ({ system: null, mountPoints: [], busy: [] });
