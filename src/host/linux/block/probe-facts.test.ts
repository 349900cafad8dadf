/** Probe results and signature lists as facts and message phrases. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { describeProbe, growableFamily, isFilesystem } from "./probe-facts.ts";
import { contentSignatures, describeSignatures } from "../../../policy/block-policy.ts";

test("content signatures leave out partition tables; descriptions name type and offset", () => {
  const sigs = [{ type: "exfat", offset: 3n }, { type: "DOS", offset: 510n }, { type: "gpt", offset: 512n }, { type: "PMBR", offset: 510n }];
  assert.deepEqual(contentSignatures(sigs), [{ type: "exfat", offset: 3n }]);
  assert.equal(describeSignatures(sigs.slice(0, 2)), "exfat at byte 3, DOS at byte 510");
});

test("describeProbe and isFilesystem", () => {
  const xfs = { kind: "found" as const, type: "xfs", usage: "filesystem", ptType: null };
  const lvm = { kind: "found" as const, type: "LVM2_member", usage: "raid", ptType: null };
  assert.equal(describeProbe({ kind: "empty" }), "no signature");
  assert.equal(describeProbe({ kind: "ambivalent", detail: "xfs, ext4" }), "conflicting signatures (xfs, ext4)");
  assert.equal(describeProbe({ kind: "found", type: null, usage: null, ptType: "gpt" }), "a gpt partition table");
  assert.equal(describeProbe(xfs), "xfs");
  assert.equal(describeProbe(lvm), "LVM2_member (raid)");
  assert.ok(isFilesystem(xfs) && !isFilesystem(lvm) && !isFilesystem({ kind: "empty" }));
});

test("growableFamily: the ext family and xfs", () => {
  assert.deepEqual(["ext2", "ext3", "ext4", "xfs", "btrfs", null].map(growableFamily), ["ext4", "ext4", "ext4", "xfs", null, null]);
});
