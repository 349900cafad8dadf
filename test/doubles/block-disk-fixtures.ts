/**
 * Plain block-device records for the pure block modules' tests (src/host/linux/block/device-use.ts,
 * block-snapshot.ts, …): a 256 MiB disk major 7, its partitions major 259, loop devices and snapshots.
 * Sizes in MiB, converted to 512-byte sectors.
 */
import type { BlockSnapshot } from "../../src/host/linux/block/block-snapshot.ts";
import type { BlockDisk, BlockPartition, LoopDevice } from "../../src/host/linux/block/block-types.ts";

export const MiB = 1024n * 1024n;
/** MiB as 512-byte sectors. */
export const S = (mib: bigint) => (mib * MiB) / 512n;

export function part(number: number, minor: number, startMiB: bigint, sizeMiB: bigint, uuid: string | null = null): BlockPartition {
  return { name: `loop0p${number}`, devPath: `/dev/loop0p${number}`, major: 259, minor, number, startSectors: S(startMiB), sizeSectors: S(sizeMiB), uuid, typeId: null, holders: [], readOnly: false };
}

/** A disk whose on-disk table matches its kernel partitions unless `table` says otherwise. */
export function disk(name: string, minor: number, partitions: BlockPartition[], table?: BlockDisk["partitionTable"]): BlockDisk {
  return {
    name, devPath: `/dev/${name}`, major: 7, minor, diskSeq: "1", sizeBytes: 256n * MiB, logicalBlockSize: 512, readOnly: false, removable: false,
    loopBackingFile: null, scsiAddress: null, scsiState: null, serial: null, vpdPage80: null, vpdPage83: null, wwid: null, holders: [],
    partitions, partitionTable: table ?? { type: "gpt", entries: partitions.map((p) => ({ number: p.number, startSectors: p.startSectors, sizeSectors: p.sizeSectors, uuid: p.uuid, typeId: p.typeId })) },
  };
}

export const loop = (name: string, minor: number, backing: LoopDevice["backing"], offsetMiB = 0n, sizeMiB = 256n): LoopDevice => ({
  name, devPath: `/dev/${name}`, major: 7, minor, sizeBytes: sizeMiB * MiB, offsetBytes: offsetMiB * MiB, backingFile: `backing-of-${name}`, backing,
});

export const snap = (disks: BlockDisk[], loops: LoopDevice[] = [], mounts: BlockSnapshot["mounts"] = [], more: Partial<BlockSnapshot> = {}): BlockSnapshot => ({ disks, mounts, swaps: [], marks: [], loops, ...more });

/** A regular backing file (st_dev 254:1, inode 42). */
export const file = { kind: "file" as const, dev: { major: 254, minor: 1 }, ino: 42n };
