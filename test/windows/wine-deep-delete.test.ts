/**
 * Under Wine: the built csi-proxy.exe removes a deep chain and a wide directory (Rmdir force,
 * RmdirContents) holding a bounded number of handles, and a deadline or a cancellation stops it.
 *
 * Handles are counted from Linux: Wine backs every open file or directory handle with a Unix
 * descriptor, held by the wineserver and cached by the process that uses it, so the descriptors of
 * the exe's process and of the prefix's wineserver (/proc/<pid>/fd) are sampled every 25 ms while
 * the call runs. The chain is 300 levels deep: under Wine every open by path costs time that grows
 * with the path's depth (Rmdir(force) of a 400-deep chain took 18-19 s with this walker and with the
 * previous one alike, 200 levels 2-8 s), and Wine turns every path into a Unix path, which Linux
 * limits to PATH_MAX (4 096 bytes, about 2 000 levels here). Deeper chains are covered by the
 * unit test with the handle double (windows-remove-tree.test.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { execFileSync } from "node:child_process";
import { clientReport, startWine, wineSuite, type Background, type Wine } from "./wine-harness.ts";

const DEPTH = 300;
const WIDTH = 5_000;
/** Descriptor growth allowed while a delete runs: the walk's 16 directories, the entry and listing handles, the ancestors, slack for the daemon's own work. */
const FD_GROWTH = 64;

let server: Background | undefined;
const { w, skip } = await wineSuite("deep-delete", {
  async before(w) {
    server = startWine(w, [w.exeWin, `-kubelet-path=${w.work.win}\\kubelet`, "-v=2"]);
    await server.waitFor(/Serving 23 endpoints/, 90_000);
  },
  after: () => server?.kill(),
});

/** A chain of `depth` directories "d" below `base` (a file every 10th level), made by relative paths (the full path exceeds PATH_MAX). */
function makeChain(base: string, depth: number): void {
  fs.mkdirSync(base, { recursive: true });
  const cwd = process.cwd();
  try {
    process.chdir(base);
    for (let i = 0; i < depth; i++) {
      fs.mkdirSync("d");
      process.chdir("d");
      if (i % 10 === 0) fs.writeFileSync("f", "x");
    }
  } finally {
    process.chdir(cwd);
  }
}

/** Entries below `dir` (find(1) walks trees deeper than PATH_MAX). */
const countBelow = (dir: string): number => !fs.existsSync(dir) ? 0 : execFileSync("find", [dir, "-mindepth", "1", "-printf", "."], { maxBuffer: 64 << 20 }).length;

/** Pids of this prefix's processes whose command line contains `needle`. */
function pidsOf(w: Wine, needle: string): number[] {
  const pids: number[] = [];
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${e}/cmdline`, "utf8");
      const env = fs.readFileSync(`/proc/${e}/environ`, "utf8").split("\0");
      if (cmd.includes(needle) && env.includes(`WINEPREFIX=${w.prefix}`)) pids.push(Number(e));
    } catch {
      // gone, or not ours
    }
  }
  return pids;
}

const fdCount = (pid: number) => {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
};

/** Runs `call` while sampling the descriptors of the exe and the wineserver; returns its result and the growth of each over the baseline. */
async function sampled<T>(w: Wine, call: () => Promise<T>): Promise<{ result: T; exeGrowth: number; serverGrowth: number; exeMax: number }> {
  const exe = pidsOf(w, "csi-proxy.exe").filter((p) => fdCount(p) > 0);
  const srv = pidsOf(w, "wineserver");
  assert.ok(exe.length >= 1, "the exe's process found");
  assert.ok(srv.length >= 1, "the prefix's wineserver found");
  const sum = (pids: number[]) => pids.reduce((n, p) => n + fdCount(p), 0);
  const base = { exe: sum(exe), srv: sum(srv) };
  const max = { ...base };
  const timer = setInterval(() => {
    max.exe = Math.max(max.exe, sum(exe));
    max.srv = Math.max(max.srv, sum(srv));
  }, 25);
  try {
    const result = await call();
    return { result, exeGrowth: max.exe - base.exe, serverGrowth: max.srv - base.srv, exeMax: max.exe };
  } finally {
    clearInterval(timer);
  }
}

const pods = () => path.join(w.work.linux, "kubelet", "pods");
const podsWin = () => `${w.work.win}\\kubelet\\pods`;

test(`Rmdir(force) of a ${DEPTH}-deep chain under Wine: removed, descriptors of the exe and the wineserver grow by at most ${FD_GROWTH}`, { skip, timeout: 900_000 }, async (t) => {
  const deep = path.join(pods(), "deep");
  t.after(() => execFileSync("rm", ["-rf", deep]));
  makeChain(deep, DEPTH);
  const { result, exeGrowth, serverGrowth, exeMax } = await sampled(w, () => clientReport(w, "remove", { path: `${podsWin()}\\deep` }, 900_000));
  t.diagnostic(`depth ${DEPTH}: ${result.ms} ms; descriptors: exe +${exeGrowth} (max ${exeMax}), wineserver +${serverGrowth}`);
  assert.deepEqual(result.result, { ok: {} }, JSON.stringify(result));
  assert.ok(!fs.existsSync(deep), "the chain is gone");
  assert.ok(exeGrowth <= FD_GROWTH, `exe descriptors grew by ${exeGrowth}`);
  assert.ok(serverGrowth <= FD_GROWTH, `wineserver descriptors grew by ${serverGrowth}`);
});

test(`RmdirContents of a ${WIDTH}-entry directory under Wine: emptied, descriptors bounded`, { skip, timeout: 900_000 }, async (t) => {
  const wide = path.join(pods(), "wide");
  t.after(() => execFileSync("rm", ["-rf", wide]));
  fs.mkdirSync(wide, { recursive: true });
  for (let i = 0; i < WIDTH; i++) fs.writeFileSync(path.join(wide, `f${i}`), "");
  for (let i = 0; i < 20; i++) fs.mkdirSync(path.join(wide, `sub${i}`, "x"), { recursive: true });
  const { result, exeGrowth, serverGrowth } = await sampled(w, () => clientReport(w, "remove", { path: `${podsWin()}\\wide`, contents: true }, 900_000));
  t.diagnostic(`width ${WIDTH}: ${result.ms} ms; descriptors: exe +${exeGrowth}, wineserver +${serverGrowth}`);
  assert.deepEqual(result.result, { ok: {} }, JSON.stringify(result));
  assert.deepEqual(fs.readdirSync(wide), [], "emptied, the directory kept");
  assert.ok(exeGrowth <= FD_GROWTH, `exe descriptors grew by ${exeGrowth}`);
  assert.ok(serverGrowth <= FD_GROWTH, `wineserver descriptors grew by ${serverGrowth}`);
});

for (const stop of ["deadline", "cancel"] as const) {
  test(`a ${stop} 1 s into Rmdir(force) of a ${DEPTH}-deep chain under Wine: ${stop === "deadline" ? "DeadlineExceeded" : "Cancelled"}, and the chain does not change from 1 s after the answer`, { skip, timeout: 900_000 }, async (t) => {
    const deep = path.join(pods(), `stop-${stop}`);
    t.after(() => execFileSync("rm", ["-rf", deep]));
    makeChain(deep, DEPTH);
    const before = countBelow(deep);
    const r = await clientReport(w, "remove", { path: `${podsWin()}\\stop-${stop}`, ...(stop === "deadline" ? { timeoutMs: 1000 } : { cancelAfterMs: 1000 }) }, 300_000);
    await new Promise((res) => setTimeout(res, 1000));
    const at1s = countBelow(deep);
    // longer than the whole walk takes here: a walk that went on would have removed everything
    await new Promise((res) => setTimeout(res, 15_000));
    const later = countBelow(deep);
    t.diagnostic(`${stop}: answer after ${r.ms} ms: ${JSON.stringify(r.result)}; entries ${before} → ${at1s} (1 s after) → ${later} (16 s after)`);
    assert.equal(r.result.code, stop === "deadline" ? 4 : 1, JSON.stringify(r.result));
    assert.ok(r.ms < 1000 + 5000, `answered ${r.ms} ms after the call`);
    assert.ok(at1s > 0, "stopped before the end");
    assert.equal(later, at1s, "nothing removed from 1 s after the answer");
  });
}
