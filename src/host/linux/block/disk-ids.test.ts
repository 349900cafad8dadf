/** ListDiskIDs / ListDiskLocations from VPD pages, wwids, serials and SCSI addresses. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { diskIds, diskLocation, page83FromVpd, page83FromWwid, serialFromVpd } from "./disk-ids.ts";
import { disk } from "../../../../test/doubles/block-disk-fixtures.ts";

/** A VPD 0x83 page with designators [codeSet, association, body]. */
function page83(...designators: [number, number, number[]][]): Uint8Array {
  const body = designators.flatMap(([codeSet, association, bytes]) => [codeSet, association << 4, 0, bytes.length, ...bytes]);
  return Uint8Array.from([0, 0x83, body.length >> 8, body.length & 0xff, ...body]);
}

test("page 0x83: the first logical-unit designator, binary as hex, ASCII verbatim", () => {
  assert.equal(page83FromVpd(page83([1, 1, [0xaa]], [1, 0, [0x60, 0x0a, 0xff]])), "600aff");
  assert.equal(page83FromVpd(page83([2, 0, [...Buffer.from("ATA disk")]])), "ATA disk");
  assert.equal(page83FromVpd(page83([2, 0, [...Buffer.from("AB ")]])), "AB ", "ASCII kept untrimmed");
  assert.equal(page83FromVpd(page83([3, 0, [0x41]])), "");
  assert.equal(page83FromVpd(Uint8Array.from([0, 0x80, 0, 0])), "");
  assert.equal(page83FromVpd(Uint8Array.from([0, 0x83])), "");
});

test("page 0x80: the serial untrimmed; null when malformed", () => {
  assert.equal(serialFromVpd(Uint8Array.from([0, 0x80, 0, 4, ...Buffer.from(" S1 ")])), " S1 ");
  assert.equal(serialFromVpd(Uint8Array.from([0, 0x83, 0, 0])), null);
});

test("wwid: naa/eui lower-cased, t10 verbatim, others none", () => {
  assert.equal(page83FromWwid("naa.600A0B80\n"), "600a0b80");
  assert.equal(page83FromWwid("t10.ATA QEMU"), "ATA QEMU");
  assert.equal(page83FromWwid("nvme.1234"), "");
});

test("diskIds prefers the loop backing file, then VPD, then sysfs; diskLocation needs a SCSI address", () => {
  const d = disk("sda", 0, []);
  assert.deepEqual(diskIds(d), { page83: "", serialNumber: "" });
  assert.deepEqual(diskIds({ ...d, serial: "S", wwid: "naa.AB" }), { page83: "ab", serialNumber: "S" });
  assert.deepEqual(diskIds({ ...d, serial: "S", vpdPage80: Uint8Array.from([0, 0x80, 0, 1, 0x56]), vpdPage83: page83([1, 0, [0x01]]), wwid: "naa.AB" }), { page83: "01", serialNumber: "V" });
  assert.equal(diskIds({ ...d, loopBackingFile: "/img", serial: "S" }).serialNumber, "/img");
  assert.equal(diskLocation(d), null);
  assert.deepEqual(diskLocation({ ...d, scsiAddress: { host: 2, channel: 0, target: 1, lun: 3 } }), { adapter: "2", bus: "0", target: "1", lunId: "3" });
});
