/**
 * The facts behind the write refusals, as pure functions of what sysfs and the table say: stacked loop
 * devices (regions, offsets, shared backing objects, the reverse stacking) and kernel partitions out
 * of step with the on-disk table. The same facts on real loop devices: test/redteam/block-redteam.test.ts.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { findVolume, stackedUses, tableMismatch, type BlockSnapshot } from "./block-model.ts";
import type { BlockDisk, BlockPartition, LoopDevice } from "./block-types.ts";
import { Code } from "../../errors.ts";

const MiB = 1024n * 1024n;
const S = (mib: bigint) => (mib * MiB) / 512n;

function part(number: number, minor: number, startMiB: bigint, sizeMiB: bigint, uuid: string | null = null): BlockPartition {
  return { name: `loop0p${number}`, devPath: `/dev/loop0p${number}`, major: 259, minor, number, startSectors: S(startMiB), sizeSectors: S(sizeMiB), uuid, typeId: null, holders: [], readOnly: false };
}

function disk(name: string, minor: number, partitions: BlockPartition[], table?: BlockDisk["partitionTable"]): BlockDisk {
  return {
    name, devPath: `/dev/${name}`, major: 7, minor, diskSeq: "1", sizeBytes: 256n * MiB, logicalBlockSize: 512, readOnly: false, removable: false,
    loopBackingFile: null, scsiAddress: null, scsiState: null, serial: null, vpdPage80: null, vpdPage83: null, wwid: null, holders: [],
    partitions, partitionTable: table ?? { type: "gpt", entries: partitions.map((p) => ({ number: p.number, startSectors: p.startSectors, sizeSectors: p.sizeSectors, uuid: p.uuid, typeId: p.typeId })) },
  };
}

const loop = (name: string, minor: number, backing: LoopDevice["backing"], offsetMiB = 0n, sizeMiB = 256n): LoopDevice => ({
  name, devPath: `/dev/${name}`, major: 7, minor, sizeBytes: sizeMiB * MiB, offsetBytes: offsetMiB * MiB, backingFile: `backing-of-${name}`, backing,
});

const snap = (disks: BlockDisk[], loops: LoopDevice[], mounts: BlockSnapshot["mounts"] = []): BlockSnapshot => ({ disks, mounts, swaps: [], marks: [], loops });
const file = { kind: "file" as const, dev: { major: 254, minor: 1 }, ino: 42n };

describe("stacked loop devices", () => {
  const p1 = part(1, 0, 1n, 100n);
  const p2 = part(2, 1, 101n, 100n);
  const d = disk("loop0", 0, [p1, p2]);
  const self = loop("loop0", 0, file);

  test("a loop on the partition itself uses it; a loop on another partition does not", () => {
    const s = snap([d], [self, loop("loop5", 5, { kind: "block", dev: { major: 259, minor: 1 } }, 0n, 100n)]);
    assert.deepEqual(stackedUses(s, p1, d), []);
    assert.match(stackedUses(s, p2, d)[0], /^in use by \/dev\/loop5 /);
    assert.deepEqual(stackedUses(s, d, d), [], "a loop on a partition is that partition's use");
  });

  test("a loop on the whole disk at an offset uses only the partitions its bytes overlap", () => {
    const s = snap([d], [self, loop("loop6", 6, { kind: "block", dev: { major: 7, minor: 0 } }, 150n, 10n)]);
    assert.deepEqual(stackedUses(s, p1, d), []);
    assert.equal(stackedUses(s, p2, d).length, 1);
    assert.equal(stackedUses(s, d, d).length, 1);
    assert.deepEqual(stackedUses(s, d, d, p1), [], "the disk, for an operation on p1");
    assert.equal(stackedUses(s, d, d, p2).length, 1, "the disk, for an operation on p2");
  });

  test("the same backing file attached twice: overlapping bytes are in use, disjoint ones are not", () => {
    const overlapping = snap([d], [self, loop("loop7", 7, file, 50n, 10n)]);
    assert.equal(stackedUses(overlapping, p1, d).length, 1);
    assert.deepEqual(stackedUses(overlapping, p2, d), []);
    const otherFile = snap([d], [self, loop("loop7", 7, { ...file, ino: 43n })]);
    assert.deepEqual(stackedUses(otherFile, p1, d), []);
  });

  test("the reverse: a loop disk stacked on a mounted block device", () => {
    const upper = disk("loop8", 8, []);
    const s = snap([upper], [loop("loop8", 8, { kind: "block", dev: { major: 259, minor: 0 } }, 0n, 100n)], [
      { major: 259, minor: 0, mountPoint: "/mnt/x", fsType: "ext4", source: "/dev/loop0p1" },
    ]);
    assert.deepEqual(stackedUses(s, upper, upper), ["stacked on backing-of-loop8, which is mounted at /mnt/x"]);
  });
});

describe("kernel partitions against the on-disk table", () => {
  const p1 = part(1, 0, 1n, 298n);
  test("same number, start and size: in step", () => assert.equal(tableMismatch(p1, disk("loop0", 0, [p1])), null));
  test("another start or size: stale, with both extents", () => {
    const table = { type: "gpt" as const, entries: [{ number: 1, startSectors: S(150n), sizeSectors: S(50n), uuid: null, typeId: null }] };
    assert.match(tableMismatch(p1, disk("loop0", 0, [p1], table)) ?? "", /^stale: the kernel shows partition 1 at sectors 2048\+610304, the partition table of \/dev\/loop0 at 307200\+102400/);
  });
  test("a kernel partition the table lacks", () => {
    const table = { type: "gpt" as const, entries: [] };
    assert.match(tableMismatch(p1, disk("loop0", 0, [p1], table)) ?? "", /which the partition table of \/dev\/loop0 does not have/);
  });
  test("an MBR extended container: the kernel's 1 KiB size is not a mismatch", () => {
    const ext = { ...part(2, 1, 60n, 0n), sizeSectors: 2n, typeId: "0x5" };
    const table = { type: "dos" as const, entries: [{ number: 2, startSectors: S(60n), sizeSectors: S(150n), uuid: null, typeId: "0x5" }] };
    assert.equal(tableMismatch(ext, disk("loop0", 0, [ext], table)), null);
  });
});

test("a dev- id of a partition whose PARTUUID another partition shares is ambiguous", () => {
  const uuid = "0fc63daf-8483-4772-8e79-3d69d8477de4";
  const a = disk("loop0", 0, [part(1, 0, 1n, 100n, uuid)]);
  const b = disk("loop1", 1, [{ ...part(1, 1, 1n, 100n, uuid), name: "loop1p1", devPath: "/dev/loop1p1" }]);
  assert.throws(() => findVolume(snap([a, b], []), "\\\\?\\Volume{dev-259-1}\\"), { code: Code.FailedPrecondition, message: /ambiguous/ });
  assert.equal(findVolume(snap([a], []), "\\\\?\\Volume{dev-259-0}\\").devPath, "/dev/loop0p1");
});
