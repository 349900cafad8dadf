/** Disk numbers are the kernel's dev_t, (major << 20) | minor; the API shows disks with a medium, in number order. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { devOfDiskNumber, devString, diskNumberOf, sameDev, visibleDisks } from "./disk-numbers.ts";
import { disk } from "../../../../test/doubles/block-disk-fixtures.ts";

test("a disk number and its device are each other's inverse", () => {
  assert.equal(diskNumberOf({ major: 8, minor: 16 }), 8 * 1048576 + 16);
  for (const dev of [{ major: 0, minor: 0 }, { major: 259, minor: 1048575 }, { major: 4095, minor: 7 }]) assert.deepEqual(devOfDiskNumber(diskNumberOf(dev)), dev);
  assert.ok(diskNumberOf({ major: 4095, minor: 1048575 }) < 2 ** 32);
});

test("disk numbers of common devices: (major << 20) | minor", () => {
  for (const [dev, n] of [[{ major: 7, minor: 0 }, 7340032], [{ major: 254, minor: 0 }, 266338304], [{ major: 4095, minor: 1048575 }, 0xffffffff]] as const) {
    assert.equal(diskNumberOf(dev), n);
    assert.deepEqual(devOfDiskNumber(n), dev);
  }
});

test("sameDev compares major and minor; devString renders major:minor", () => {
  assert.ok(sameDev({ major: 7, minor: 1 }, { major: 7, minor: 1 }));
  assert.ok(!sameDev({ major: 7, minor: 1 }, { major: 1, minor: 7 }));
  assert.equal(devString({ major: 259, minor: 3 }), "259:3");
});

test("visibleDisks leaves out disks without a medium and sorts by disk number", () => {
  const a = disk("loop2", 2, []);
  const b = { ...disk("sda", 0, []), major: 8 };
  const none = { ...disk("loop0", 0, []), sizeBytes: 0n };
  assert.deepEqual(visibleDisks([b, none, a]).map((d) => d.name), ["loop2", "sda"]);
});
