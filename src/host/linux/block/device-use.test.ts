/**
 * The facts behind the write refusals, as pure functions of what sysfs and the table say: stacked loop
 * devices (regions, offsets, shared backing objects, the reverse stacking) and kernel partitions out
 * of step with the on-disk table, and the use a device is put to. The same facts on real loop devices: test/redteam/block-redteam.test.ts.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { deviceUse, noUse, stackedUses, tableMismatch } from "./device-use.ts";
import { disk, file, loop, part, S, snap } from "../../../../test/doubles/block-disk-fixtures.ts";

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

describe("deviceUse", () => {
  const p1 = part(1, 0, 1n, 100n);
  const d = disk("loop0", 0, [p1]);

  test("the root filesystem is reported as system, other mounts as mount points", () => {
    const mounts = [
      { major: 259, minor: 0, mountPoint: "/", fsType: "ext4", source: "/dev/loop0p1" },
      { major: 259, minor: 0, mountPoint: "/mnt/a", fsType: "ext4", source: "/dev/loop0p1" },
    ];
    const use = deviceUse(snap([d], [], mounts), p1, d);
    assert.equal(use.system, "the root filesystem /");
    assert.deepEqual(use.mountPoints, ["/mnt/a"]);
    assert.deepEqual(use.busy, []);
  });

  test("swap and holders make it busy; an idle device has no use", () => {
    const held = { ...p1, holders: ["dm-0"] };
    const use = deviceUse(snap([d], [], [], { swaps: [{ major: 259, minor: 0 }] }), held, d);
    assert.deepEqual(use.busy, ["in use as swap", "in use by /dev/dm-0 (holders)"]);
    assert.deepEqual(deviceUse(snap([d]), p1, d), noUse());
  });

  test("a disk with a stale kernel partition names it; openers are listed when scanned", () => {
    const stale = disk("loop0", 0, [p1], { type: "gpt", entries: [] });
    const opener = { pid: 7, command: "dd", dev: { major: 7, minor: 0 }, access: "read-write" as const };
    const use = deviceUse(snap([stale], [], [], { openers: [opener] }), stale, stale);
    assert.match(use.busy.join(), /out of step with its partition table: the kernel shows partition 1 /);
    assert.deepEqual(use.openers, [{ pid: 7, command: "dd", access: "read-write" }]);
  });
});
