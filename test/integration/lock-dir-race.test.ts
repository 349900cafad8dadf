// Two csi-proxy library users on one node, each given a state directory of its own, share the one
// lock directory (src/state/lock-dir.ts, node-locks-for.ts): their device-writing tools on one disk
// never overlap. Each process runs under strace -f, which records when each mkfs started (execve)
// and ended (exit), per pid; 2 × ROUNDS racing FormatVolume calls on one loop disk's volume.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { repoRoot } from "../helpers/daemon-process.ts";
import { createLoopDevice, loopDeviceSkipReason } from "../helpers/loop-device.ts";

const ROUNDS = 50;
const child = path.join(repoRoot, "test/helpers/lock-race-child.ts");

function straceSkipReason(): string | null {
  try {
    execFileSync("strace", ["-V"], { stdio: "ignore" });
    return null;
  } catch {
    return "strace missing (apt-get install strace)";
  }
}

function run(trace: string, args: object): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn("strace", ["-f", "-q", "-ttt", "-e", "trace=execve", "-o", trace, process.execPath, child, JSON.stringify(args)], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
    p.stderr.setEncoding("utf8").on("data", (s: string) => (err += s));
    p.on("exit", (code) => resolve({ code, out, err }));
  });
}

/** The mkfs runs of a strace -f -ttt log: [start, end] seconds per pid. */
function mkfsRuns(trace: string): { pid: number; start: number; end: number }[] {
  const starts = new Map<number, number>(), runs: { pid: number; start: number; end: number }[] = [];
  for (const line of readFileSync(trace, "utf8").split("\n")) {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const pid = Number(m[1]), t = Number(m[2]), rest = m[3];
    const exec = /^execve\("([^"]+)"/.exec(rest);
    if (exec && path.basename(exec[1]).startsWith("mkfs") && !/= -1 /.test(rest) && !starts.has(pid)) starts.set(pid, t);
    if (/^\+\+\+ (exited|killed)/.test(rest) && starts.has(pid)) {
      runs.push({ pid, start: starts.get(pid)!, end: t });
      starts.delete(pid);
    }
  }
  return runs;
}

test(`two library users with different state dirs: ${ROUNDS} rounds of racing FormatVolume on one disk, 0 overlapping mkfs`, { skip: loopDeviceSkipReason() ?? straceSkipReason() ?? false, timeout: 300_000 }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-lock-race-"));
  const loop = createLoopDevice(dir, 64 * 1024 * 1024, "lockrace");
  try {
    const kubelet = path.join(dir, "kubelet"), lockDir = path.join(dir, "locks"), go = path.join(dir, "go");
    mkdirSync(kubelet);
    const common = { kubelet, lockDir, loopFile: loop.file, rounds: ROUNDS, go };
    // The first partitions the disk before the race starts.
    const first = run(path.join(dir, "trace-a"), { ...common, stateDir: path.join(dir, "state-a"), partition: true });
    for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 50))) {
      if (readFileSync("/proc/partitions", "utf8").includes(`${loop.name}p1`)) break;
    }
    const second = run(path.join(dir, "trace-b"), { ...common, stateDir: path.join(dir, "state-b"), partition: false });
    await new Promise((r) => setTimeout(r, 3000)); // both loaded and at the barrier (if not, the race is only smaller)
    writeFileSync(go, "");
    const errors: string[] = [];
    for (const r of await Promise.all([first, second])) {
      assert.equal(r.code, 0, r.err);
      errors.push(...(JSON.parse(r.out.trim().split("\n").pop()!) as { errors: string[] }).errors);
    }
    const runs = [...mkfsRuns(path.join(dir, "trace-a")), ...mkfsRuns(path.join(dir, "trace-b"))].sort((a, b) => a.start - b.start);
    // An mkfs that starts before the latest end so far overlaps a running one.
    let latestEnd = 0, overlapping = 0;
    for (const r of runs) {
      if (r.start < latestEnd) overlapping++;
      latestEnd = Math.max(latestEnd, r.end);
    }
    assert.deepEqual({ overlapping, errors }, { overlapping: 0, errors: [] }, `${runs.length} mkfs runs seen, ${overlapping} started while another ran`);
    assert.equal(runs.length, 2 * ROUNDS, "every FormatVolume ran one mkfs, seen by strace");
  } finally {
    loop.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
});
