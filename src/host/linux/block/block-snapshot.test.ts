/** The block snapshot: what it reads, and finding disks and volumes in it (codes of the errors). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { findVolume, requireDisk, takeSnapshot, volumeOfDevice, type SnapshotSources } from "./block-snapshot.ts";
import { Code } from "../../../errors.ts";
import { disk, part, snap } from "../../../../test/doubles/block-disk-fixtures.ts";

const uuid = "0fc63daf-8483-4772-8e79-3d69d8477de4";

test("a dev- id of a partition whose PARTUUID another partition shares is ambiguous", () => {
  const a = disk("loop0", 0, [part(1, 0, 1n, 100n, uuid)]);
  const b = disk("loop1", 1, [{ ...part(1, 1, 1n, 100n, uuid), name: "loop1p1", devPath: "/dev/loop1p1" }]);
  assert.throws(() => findVolume(snap([a, b]), "\\\\?\\Volume{dev-259-1}\\"), { code: Code.FailedPrecondition, message: /ambiguous/ });
  assert.equal(findVolume(snap([a]), "\\\\?\\Volume{dev-259-0}\\").devPath, "/dev/loop0p1");
});

test("volumes by PARTUUID (any case) and whole-disk dev- ids; NotFound otherwise", () => {
  const a = disk("loop0", 0, [part(1, 0, 1n, 100n, uuid)]);
  assert.equal(findVolume(snap([a]), `\\\\?\\Volume{${uuid.toUpperCase()}}\\`).partition?.number, 1);
  const whole = findVolume(snap([a]), "\\\\?\\Volume{dev-7-0}");
  assert.deepEqual([whole.partition, whole.devPath], [null, "/dev/loop0"]);
  assert.throws(() => findVolume(snap([a]), "\\\\?\\Volume{dev-7-9}\\"), { code: Code.NotFound });
  assert.throws(() => findVolume(snap([a]), "C:\\"), { code: Code.InvalidArgument });
});

test("requireDisk and volumeOfDevice", () => {
  const a = disk("loop0", 5, [part(1, 0, 1n, 100n)]);
  assert.equal(requireDisk(snap([a]), 7 * 2 ** 20 + 5), a);
  assert.throws(() => requireDisk(snap([a]), 7 * 2 ** 20 + 6), { code: Code.NotFound, message: /disk 7340038 not found/ });
  assert.equal(volumeOfDevice(snap([a]), { major: 259, minor: 0 })?.devPath, "/dev/loop0p1");
  assert.equal(volumeOfDevice(snap([a]), { major: 7, minor: 5 })?.partition, null);
  assert.equal(volumeOfDevice(snap([a]), { major: 8, minor: 0 }), null);
});

test("takeSnapshot: every disk or only the one asked for, without media left out; openers only when asked", async () => {
  const shown = disk("loop0", 0, []);
  const empty = { ...disk("loop1", 1, []), sizeBytes: 0n };
  const asked: string[] = [];
  const sources: SnapshotSources = {
    listDisks: async () => (asked.push("list"), [shown, empty]),
    findDisk: async (dev) => (asked.push(`find ${dev.major}:${dev.minor}`), dev.minor === 0 ? shown : null),
    readMounts: async () => [],
    listLoops: async () => [],
    readSwapDevices: async () => [],
    readOfflineMarks: async () => [],
    deviceOpeners: async (devs) => (asked.push(`openers ${devs.length}`), []),
  };
  assert.deepEqual((await takeSnapshot(sources)).disks, [shown]);
  assert.deepEqual((await takeSnapshot(sources, { major: 7, minor: 3 })).disks, []);
  const withOpeners = await takeSnapshot(sources, { major: 7, minor: 0 }, { openers: true });
  assert.deepEqual(withOpeners.openers, []);
  assert.deepEqual(asked, ["list", "find 7:3", "find 7:0", "openers 1"]);
});
