// The start-up settle step (start-up-footprint.ts), in child processes (V8 flags are per process):
// compilers really held and really released, the full GC really runs, user choices respected.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { compilerChosenByUser } from "./start-up-footprint.ts";

const moduleUrl = new URL("./start-up-footprint.ts", import.meta.url).href;

// V8 %GetOptimizationStatus bits (src/runtime/runtime.h, OptimizationStatus).
const MAGLEVVED = 1 << 5, TURBOFANNED = 1 << 6, BASELINE = 1 << 15;

/** Runs `body` (an ES module body; `m` is the module under test) in a child node and returns its JSON output. */
function runChild(body: string, nodeFlags: string[] = []): Record<string, unknown> {
  const dir = mkdtempSync(path.join(tmpdir(), "start-up-footprint-"));
  try {
    const file = path.join(dir, "child.mjs");
    writeFileSync(file, `const m = await import(${JSON.stringify(moduleUrl)});\n${body}\n`);
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NODE_OPTIONS;
    const r = spawnSync(process.execPath, ["--allow-natives-syntax", ...nodeFlags, file], { encoding: "utf8", env, timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout.trim().split("\n").at(-1)!);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// A hot function, run enough to be compiled by every tier when the compilers run.
const HOT = `
function hot(s) { let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return h; }
const warm = async () => { for (let round = 0; round < 20; round++) { for (let i = 0; i < 20000; i++) hot("abcdefgh" + (i & 15)); await new Promise((r) => setTimeout(r, 5)); } };
const status = () => %GetOptimizationStatus(hot);
`;

describe("start-up footprint", () => {
  it("leaves the compilers named in leaveOff off after settleAfterStart (Maglev as the top tier)", () => {
    const out = runChild(`${HOT}
      const held = m.holdOptimizingCompilers({ leaveOff: ["turbofan"] });
      await m.settleAfterStart();
      await warm();
      console.log(JSON.stringify({ held, after: status() }));`);
    assert.equal(out.held, true);
    const after = out.after as number;
    assert.notEqual(after & MAGLEVVED, 0, `not compiled by Maglev after release: status ${after.toString(2)}`);
    assert.equal(after & TURBOFANNED, 0, `compiled by Turbofan though left off: status ${after.toString(2)}`);
  });

  it("holds Sparkplug, Maglev and Turbofan until settleAfterStart, which releases them", () => {
    const out = runChild(`${HOT}
      const { cachedDataVersionTag } = await import("node:v8");
      const flagsBefore = cachedDataVersionTag(); // a hash of every V8 flag's value
      const held = m.holdOptimizingCompilers();
      await warm();
      const during = status();
      const report = await m.settleAfterStart();
      await warm();
      const flagsRestored = cachedDataVersionTag() === flagsBefore;
      console.log(JSON.stringify({ held, during, after: status(), report, again: (await m.settleAfterStart()) === report, flagsRestored }));`);
    assert.equal(out.held, true);
    const during = out.during as number, after = out.after as number;
    assert.equal(during & (BASELINE | MAGLEVVED | TURBOFANNED), 0, `compiled while held: status ${during.toString(2)}`);
    assert.notEqual(after & (MAGLEVVED | TURBOFANNED), 0, `not optimized after release: status ${after.toString(2)}`);
    const report = out.report as Record<string, unknown>;
    assert.equal(report.compilersResumed, true);
    assert.equal(report.collected, true);
    assert.match(String(report.summary), /^RSS [\d.]+ → [\d.]+ MB in [\d.]+ ms \(compilers resumed, full GC done\)$/);
    assert.equal(out.again, true, "settleAfterStart is idempotent (the same report)");
    assert.equal(out.flagsRestored, true, "every V8 flag (implied ones included) is back to its value before the hold");
  });

  it("runs a full garbage collection: an object reachable only weakly is gone right after", () => {
    const out = runChild(`
      let big = { payload: new Array(100000).fill(7) };
      const ref = new WeakRef(big);
      big = undefined;
      const tick = () => new Promise((r) => setTimeout(r, 10)); // WeakRef targets are kept until the end of the job that created or dereferenced them
      await tick();
      const before = ref.deref() !== undefined;
      await tick();
      await m.settleAfterStart();
      console.log(JSON.stringify({ before, after: ref.deref() !== undefined }));`);
    assert.equal(out.before, true);
    assert.equal(out.after, false);
  });

  it("holds nothing when the command line chose a compiler setting", () => {
    const viaArgv = runChild(`${HOT}
      const held = m.holdOptimizingCompilers(); await warm(); const report = await m.settleAfterStart();
      console.log(JSON.stringify({ held, report, status: status() }));`, ["--no-turbofan"]);
    assert.equal(viaArgv.held, false);
    assert.equal((viaArgv.report as Record<string, unknown>).compilersResumed, false);
    assert.equal((viaArgv.status as number) & TURBOFANNED, 0, "the user's --no-turbofan stands after settling");
  });

  it("tells compiler choices from other flags", () => {
    for (const a of ["--jitless", "--no-opt", "--no-turbofan", "--turbofan", "--no-maglev", "--max-opt=2", "--no-sparkplug", "--lite-mode"]) assert.equal(compilerChosenByUser([a], ""), true, a);
    for (const a of ["--trace-opt", "--optimize-for-size", "--max-old-space-size=100", "--expose-gc", "--enable-source-maps"]) assert.equal(compilerChosenByUser([a], ""), false, a);
    // NODE_OPTIONS admits --jitless among the compiler flags
    assert.equal(compilerChosenByUser([], "--enable-source-maps --jitless"), true);
    assert.equal(compilerChosenByUser([], "--max-old-space-size=64"), false);
  });
});

