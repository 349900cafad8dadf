// Memory after a burst of calls (quiet-footprint.ts), in child processes (a process's RSS is
// measured): a burst leaves old-space garbage and freed malloc blocks; once no call runs, the
// watcher gives them back; without it they stay (V8's own memory reducer waits ~8 s).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

const watchUrl = new URL("./quiet-footprint.ts", import.meta.url).href;
const activityUrl = new URL("../rpc/call-activity.ts", import.meta.url).href;
const MB = 1024 * 1024;

/**
 * Runs `body` as an ES module in a child Node (no NODE_OPTIONS) with `watchQuietFootprint`, `activity`
 * (call-activity.ts) and an empty `settled` array in scope; returns the JSON of its last output line.
 */
function runChild<T>(body: string): T {
  const dir = mkdtempSync(path.join(tmpdir(), "quiet-footprint-"));
  try {
    const file = path.join(dir, "child.mjs");
    writeFileSync(file, `
      const { watchQuietFootprint } = await import(${JSON.stringify(watchUrl)});
      const activity = await import(${JSON.stringify(activityUrl)});
      const settled = [];
      ${body}
    `);
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NODE_OPTIONS;
    const r = spawnSync(process.execPath, [file], { encoding: "utf8", env, timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout.trim().split("\n").at(-1)!) as T;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A child that (optionally) watches, then runs one "call" that holds 1.2 million small objects (promoted to
 * old space) and ~25 MB of 64 KiB Buffers (malloc'd), 90–120 MB resident in all, and drops them when it ends; prints RSS before,
 * at the end of the call and `waitMs` later, and the settle reports.
 */
function burst(watch: boolean, waitMs: number): { base: number; peak: number; after: number; settled: { rssBefore: number; rssAfter: number; ms: number }[]; running: number } {
  return runChild(`
      await new Promise((r) => setTimeout(r, 100));
      if (${watch}) watchQuietFootprint({ quietMs: 100, growthBytes: 8 * 1024 * 1024, settled: (r) => settled.push(r) });
      await new Promise((r) => setTimeout(r, 200)); // the trim function is loaded
      const base = process.memoryUsage.rss();
      activity.callStarted();
      let held = [];
      for (let i = 0; i < 400; i++) {
        held.push(Array.from({ length: 3000 }, (_, j) => ({ i, j })));
        held.push(Buffer.alloc(65536, i));
        if (i % 50 === 0) await new Promise((r) => setImmediate(r));
      }
      held = null;
      const peak = process.memoryUsage.rss();
      activity.callEnded();
      await new Promise((r) => setTimeout(r, ${waitMs}));
      console.log(JSON.stringify({ base, peak, after: process.memoryUsage.rss(), settled, running: activity.runningCalls() }));
  `);
}

describe("quiet footprint", () => {
  it("gives back a burst's garbage and freed malloc blocks once no call runs", () => {
    const out = burst(true, 2500);
    const grown = out.peak - out.base;
    assert.ok(grown > 40 * MB, `the burst grew RSS by ${(grown / MB).toFixed(1)} MB only`);
    assert.equal(out.settled.length, 1, "one settling for one quiet period");
    assert.ok(out.after - out.base < grown / 4, `RSS ${(out.base / MB).toFixed(1)} → ${(out.peak / MB).toFixed(1)} → ${(out.after / MB).toFixed(1)} MB: not given back`);
    assert.equal(out.running, 0);
  });

  it("without it the same burst's memory stays (the baseline the watcher is measured against)", () => {
    const out = burst(false, 2500);
    const grown = out.peak - out.base;
    assert.ok(out.after - out.base > grown / 2, `RSS ${(out.base / MB).toFixed(1)} → ${(out.peak / MB).toFixed(1)} → ${(out.after / MB).toFixed(1)} MB`);
  });

  it("does nothing while a call runs", () => {
    const out = runChild<{ during: number; after: number }>(`
        watchQuietFootprint({ quietMs: 50, growthBytes: -Infinity /* any size */, settled: (r) => settled.push(r) });
        activity.callStarted(); activity.callStarted();
        activity.callEnded(); // one still runs
        await new Promise((r) => setTimeout(r, 400));
        const during = settled.length;
        activity.callEnded();
        await new Promise((r) => setTimeout(r, 400));
        console.log(JSON.stringify({ during, after: settled.length }));
    `);
    assert.deepEqual(out, { during: 0, after: 1 });
  });
});
