/** Pure parts of scripts/build-exe.ts (the full build runs in the Wine suites). */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vm from "node:vm";
import * as esbuild from "esbuild";
import { asciiSource, esbuildOptions, stripAuthenticode } from "../../scripts/build-exe.ts";

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

test("the exe's bundle is ASCII after asciiSource, with every string, template, identifier and regular expression unchanged", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ascii-source-"));
  try {
    const entry = path.join(dir, "entry.ts");
    const out = path.join(dir, "out.cjs");
    fs.writeFileSync(entry, [
      "/** a comment → with — non-ASCII … text */",
      "// another → one",
      "const café = 1;",
      "export const values = { s: 'a → b', t: `x — ${café} …`, raw: String.raw`r \\n`, re: /é+/.source, re2: /[→😀]/u.test('😀'), n: café };",
    ].join("\n"));
    await esbuild.build({ ...esbuildOptions(entry, out), sourcemap: false });
    const code = asciiSource(fs.readFileSync(out, "utf8"));
    assert.match(code, /^[\x00-\x7f]*$/);
    const mod = { exports: {} as { values?: Record<string, unknown> } };
    vm.compileFunction(code, ["module", "exports", "require"])(mod, mod.exports, () => ({}));
    assert.deepEqual(mod.exports.values, { s: "a → b", t: "x — 1 …", raw: "r \\n", re: "\\u00e9+", re2: true, n: 1 });
    assert.ok(new RegExp(mod.exports.values!.re as string).test("é"));
    // a raw template keeps its text as written: refused rather than changed
    fs.writeFileSync(entry, "export const raw = String.raw`a → b`;");
    await esbuild.build({ ...esbuildOptions(entry, out), sourcemap: false });
    assert.throws(() => asciiSource(fs.readFileSync(out, "utf8")), /String\.raw template holds non-ASCII/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
