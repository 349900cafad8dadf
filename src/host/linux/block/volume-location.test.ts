// A volume's location (volume-location.ts): numbers, size, online state, device uses and the identity
// a write compares, from one snapshot.
import { test } from "node:test";
import assert from "node:assert/strict";
import { identityOf, volumeLocation } from "./volume-location.ts";
import { volumeOfPartition, volumeOfWholeDisk } from "./volume-ids.ts";
import { disk, MiB, part, S, snap } from "../../../../test/doubles/block-disk-fixtures.ts";

test("a partition: its number, its size in bytes, both devices, and an identity naming device, medium and extent", () => {
  const p = part(2, 5, 1n, 64n, "0c6f1a2e-0000-4000-8000-000000000002");
  const d = disk("loop0", 0, [part(1, 4, 65n, 8n), p]);
  const loc = volumeLocation(snap([d]), volumeOfPartition(d, p));
  assert.equal(loc.partitionNumber, 2);
  assert.equal(loc.sizeBytes, 64n * MiB);
  assert.equal(loc.name, "/dev/loop0p2");
  assert.equal(loc.diskOnline, true);
  assert.deepEqual(loc.devices.map((x) => x.name), ["/dev/loop0p2", "/dev/loop0"]);
  assert.equal(loc.identity, `259:5 diskseq 1 sectors ${S(1n)}+${S(64n)}`);
});

test("a whole-disk volume: no partition number, the disk's size, one device; identity changes with the medium", () => {
  const d = disk("loop1", 1, []);
  const vol = volumeOfWholeDisk(d);
  const loc = volumeLocation(snap([d]), vol);
  assert.equal(loc.partitionNumber, null);
  assert.equal(loc.sizeBytes, 256n * MiB);
  assert.deepEqual(loc.devices.map((x) => x.name), ["/dev/loop1"]);
  assert.notEqual(identityOf(vol), identityOf(volumeOfWholeDisk({ ...d, diskSeq: "2" })), "a new medium (diskseq) is another identity");
});
