import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeDev, numberField, parseBlkidExport } from "./block-parsers.ts";
import { unescapeOctal } from "../kernel/mountinfo.ts";
import { Code } from "../../../errors.ts";

test("dev_t decoding (glibc encoding)", () => {
  assert.deepEqual(decodeDev(0x0703n), { major: 7, minor: 3 });
  assert.deepEqual(decodeDev((259n << 8n) | 0n), { major: 259, minor: 0 });
  assert.deepEqual(decodeDev(0x10300n | (0x1n << 20n)), { major: 259, minor: 256 });
});

test("blkid export output: KEY=value lines, values may hold '='", () => {
  assert.deepEqual(parseBlkidExport("DEVNAME=/dev/x\nTYPE=ext4\nUSAGE=filesystem\n"), { DEVNAME: "/dev/x", TYPE: "ext4", USAGE: "filesystem" });
  assert.deepEqual(parseBlkidExport("LABEL=a=b\n=nokey\nnoequals\n"), { LABEL: "a=b" });
});

test("procfs octal escapes are undone", () => {
  assert.equal(unescapeOctal("/swap\\040file\\011x"), "/swap file\tx");
  assert.equal(unescapeOctal("/dev/sda2"), "/dev/sda2");
});

test("a number after a label in tool output; a missing one is Internal naming it", () => {
  const dumpe2fs = "Block count:              523244\nBlock size:               4096\n";
  assert.equal(numberField(dumpe2fs, /^Block count:\s+(\d+)/m, "Block count"), 523244n);
  assert.throws(() => numberField(dumpe2fs, /^Free blocks:\s+(\d+)/m, "Free blocks"), { code: Code.Internal, message: /Free blocks/ });
});
