/** Pure parts of scripts/build-exe.ts (the full build runs in the Wine suites). */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vm from "node:vm";
import * as esbuild from "esbuild";
import { spawn, execFileSync } from "node:child_process";
import { asciiSource, esbuildOptions, exeNodeVersion, seaConfigFor, stripAuthenticode } from "../../scripts/build-exe.ts";

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

test("the exe's embedded options: a blob made from seaConfigFor runs with --disable-sigusr1 only, refuses NODE_OPTIONS' --inspect, and SIGUSR1 opens no port", async (t) => {
  // The exe's Node line supports execArgv in the configuration (22.20+) and the flag (22.14+).
  const [major, minor] = exeNodeVersion.split(".").map(Number);
  assert.ok(major > 22 || (major === 22 && minor >= 20), `exe Node ${exeNodeVersion}`);
  // Not signalling a Wine process: the same configuration, injected into this Linux Node.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sea-config-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const main = path.join(dir, "main.cjs");
  fs.writeFileSync(main, 'process.stdout.write(JSON.stringify(process.execArgv) + "\\n"); setTimeout(() => {}, 20000);\n');
  const blob = path.join(dir, "sea.blob");
  fs.writeFileSync(path.join(dir, "sea-config.json"), JSON.stringify(seaConfigFor(main, blob)));
  execFileSync(process.execPath, ["--experimental-sea-config", path.join(dir, "sea-config.json")], { stdio: "ignore" });
  const exe = path.join(dir, "sea");
  fs.copyFileSync(process.execPath, exe);
  const postject = "postject";
  const { inject } = (await import(postject)) as { inject: (f: string, n: string, d: Buffer, o: object) => Promise<void> };
  const origLog = console.log, origWarn = console.warn;
  console.log = console.warn = () => {};
  try {
    await inject(exe, "NODE_SEA_BLOB", fs.readFileSync(blob), { sentinelFuse: "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2" });
  } finally {
    console.log = origLog;
    console.warn = origWarn;
  }
  const child = spawn(exe, [], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_OPTIONS: "--inspect=127.0.0.1:0" } });
  let out = "", err = "";
  child.stderr!.setEncoding("utf8").on("data", (c: string) => (err += c));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.setEncoding("utf8").on("data", (c: string) => {
      out += c;
      if (out.includes("\n")) resolve();
    });
    child.once("exit", () => reject(new Error(`exited: ${out} ${err}`)));
  });
  try {
    assert.deepEqual(JSON.parse(out), ["--disable-sigusr1"]);
    process.kill(child.pid!, "SIGUSR1");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(child.exitCode, null, "SIGUSR1 ignored, still running");
    assert.doesNotMatch(err, /Debugger listening/);
    const sockets = fs.readdirSync(`/proc/${child.pid}/fd`).map((fd) => { try { return fs.readlinkSync(`/proc/${child.pid}/fd/${fd}`); } catch { return ""; } }).filter((l) => l.startsWith("socket:"));
    const listening = ["/proc/net/tcp", "/proc/net/tcp6"].flatMap((f) => fs.readFileSync(f, "utf8").split("\n").slice(1).map((l) => l.trim().split(/\s+/)).filter((c) => c[3] === "0A").map((c) => `socket:[${c[9]}]`));
    assert.deepEqual(sockets.filter((s) => listening.includes(s)), [], "no listening TCP socket");
  } finally {
    child.kill("SIGKILL");
  }
});
