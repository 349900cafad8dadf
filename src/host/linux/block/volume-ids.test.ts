/** Volume ids: `\\?\Volume{<PARTUUID>}\` or `\\?\Volume{dev-<major>-<minor>}\`; anything else InvalidArgument. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseVolumeId, volumeIdOf, volumeOfPartition, volumeOfWholeDisk } from "./volume-ids.ts";
import { Code } from "../../../errors.ts";
import { disk, part } from "../../../../test/doubles/block-disk-fixtures.ts";

test("parses GPT and MBR PARTUUIDs (lower-cased) and dev- ids, trailing backslash optional", () => {
  assert.deepEqual(parseVolumeId("\\\\?\\Volume{0FC63DAF-8483-4772-8E79-3D69D8477DE4}\\"), { kind: "uuid", uuid: "0fc63daf-8483-4772-8e79-3d69d8477de4" });
  assert.deepEqual(parseVolumeId("\\\\?\\volume{1234abcd-02}"), { kind: "uuid", uuid: "1234abcd-02" });
  assert.deepEqual(parseVolumeId("\\\\?\\Volume{DEV-259-3}\\"), { kind: "dev", dev: { major: 259, minor: 3 } });
});

test("anything else is InvalidArgument", () => {
  for (const id of ["", "C:\\", "\\\\?\\Volume{}\\", "\\\\?\\Volume{dev-1-2-3}\\", "\\\\?\\Volume{1234abcd-02}\\\\", "\\\\?\\Volume{xyz}\\"]) {
    assert.throws(() => parseVolumeId(id), { code: Code.InvalidArgument }, id);
  }
});

test("ids of partitions (PARTUUID, else dev-) and whole disks round-trip through the parser", () => {
  const d = disk("loop0", 4, []);
  const withUuid = part(1, 0, 1n, 10n, "1234abcd-01");
  assert.equal(volumeIdOf(withUuid), "\\\\?\\Volume{1234abcd-01}\\");
  assert.equal(volumeIdOf(part(2, 1, 11n, 10n)), "\\\\?\\Volume{dev-259-1}\\");
  assert.deepEqual(parseVolumeId(volumeOfWholeDisk(d).id), { kind: "dev", dev: { major: 7, minor: 4 } });
  assert.deepEqual(volumeOfPartition(d, withUuid).dev, { major: 259, minor: 0 });
});
