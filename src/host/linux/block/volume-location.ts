/**
 * A volume's location as the volume group reports it (VolumeLocation): disk and partition numbers,
 * size, device name, the disk's online state, how the kernel uses the volume's devices, and the
 * identity that must not change between looking the volume up and writing to it.
 */
import type { VolumeLocation } from "../../../groups/volume/host-api.ts";
import type { BlockSnapshot } from "./block-snapshot.ts";
import { deviceUse } from "./device-use.ts";
import { diskNumberOf } from "./disk-numbers.ts";
import { isDiskOnline } from "./disk-online.ts";
import type { VolumeRef } from "./volume-ids.ts";

/** What must not change between looking a volume up and writing to it: device, medium, extent. */
export const identityOf = (vol: VolumeRef): string =>
  `${vol.dev.major}:${vol.dev.minor} diskseq ${vol.disk.diskSeq ?? "-"} ${vol.partition ? `sectors ${vol.partition.startSectors}+${vol.partition.sizeSectors}` : `size ${vol.disk.sizeBytes}`}`;

/** The location of `vol` in `snap` (the reading it was found in). */
export function volumeLocation(snap: BlockSnapshot, vol: VolumeRef): VolumeLocation {
  const p = vol.partition;
  return {
    id: vol.id,
    diskNumber: diskNumberOf(vol.disk),
    partitionNumber: p ? p.number : null,
    sizeBytes: p ? p.sizeSectors * 512n : vol.disk.sizeBytes,
    name: vol.devPath,
    diskOnline: isDiskOnline(snap, vol.disk),
    // The volume and its disk (holders stacked on the whole disk, e.g. multipath, block it too).
    devices: (p ? [p, vol.disk] : [vol.disk]).map((d) => ({ name: d.devPath, use: deviceUse(snap, d, vol.disk, p ?? undefined) })),
    identity: identityOf(vol),
  };
}
