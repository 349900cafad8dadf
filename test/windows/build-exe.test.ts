/** Pure parts of scripts/build-exe.ts (the full build runs in the Wine suites). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { stripAuthenticode } from "../../scripts/build-exe.ts";

/** A minimal PE32+ image with a security directory pointing at a trailing "certificate". */
function pe(withCert: boolean): Buffer {
  const b = Buffer.alloc(0x200 + (withCert ? 0x40 : 0));
  b.write("MZ", 0, "latin1");
  b.writeUInt32LE(0x80, 0x3c);
  b.write("PE\0\0", 0x80, "latin1");
  b.writeUInt16LE(0x20b, 0x80 + 24);
  const secDir = 0x80 + 24 + 112 + 4 * 8;
  if (withCert) {
    b.writeUInt32LE(0x200, secDir);
    b.writeUInt32LE(0x40, secDir + 4);
    b.fill(0xcc, 0x200);
  }
  return b;
}

test("stripAuthenticode removes a trailing certificate table and clears the security directory", () => {
  const out = stripAuthenticode(pe(true));
  assert.equal(out.length, 0x200);
  const secDir = 0x80 + 24 + 112 + 4 * 8;
  assert.equal(out.readUInt32LE(secDir), 0);
  assert.equal(out.readUInt32LE(secDir + 4), 0);
  const unsigned = pe(false);
  assert.equal(stripAuthenticode(unsigned), unsigned);
  assert.throws(() => stripAuthenticode(Buffer.alloc(0x100)), /not a PE file/);
});
