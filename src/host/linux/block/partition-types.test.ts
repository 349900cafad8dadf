/** Which partitions are volumes, by type id (case and MBR hex spelling do not matter). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { isMbrExtended, isReservedPartition, isVolumePartition, LINUX_DATA_GPT_TYPE, LINUX_DATA_MBR_TYPE, MSR_TYPE } from "./partition-types.ts";

test("MBR extended containers in any spelling", () => {
  for (const t of ["0x5", "0x05", "0xF", "0x0f", "0x85"]) assert.ok(isMbrExtended(t), t);
  for (const t of ["0x83", "0x7", null, ""]) assert.ok(!isMbrExtended(t), String(t));
});

test("volumes: all but MSR, BIOS boot and extended containers", () => {
  for (const typeId of [LINUX_DATA_GPT_TYPE, LINUX_DATA_MBR_TYPE, "0x83", null]) assert.ok(isVolumePartition({ typeId }), String(typeId));
  for (const typeId of [MSR_TYPE.toUpperCase(), "21686148-6449-6E6F-744E-656564454649", "0x05"]) assert.ok(!isVolumePartition({ typeId }), typeId);
  assert.ok(isReservedPartition({ typeId: MSR_TYPE.toUpperCase() }));
  assert.ok(!isReservedPartition({ typeId: LINUX_DATA_GPT_TYPE }) && !isReservedPartition({ typeId: null }));
});
