// Red team: recursive deletes a pod can provoke inside its own volume.
// - A chain of directories DEEP_DELETE_DEPTHS deep (default 1 000 and 10 000) is removed by
//   Rmdir(force) inside the client's default 60 s deadline (or, on a machine too loaded for that,
//   in time linear in the depth against the shallower chain of the same run), while the daemon's resident memory
//   (/proc/PID/status VmRSS) grows by at most 64 MB and its open descriptors (/proc/PID/fd) by at most
//   64, and PathExists on another endpoint keeps answering (p99 ≤ 100 ms, or twice the same run's
//   idle p99 on a machine slower than that).
// - A deadline or a cancellation (1 s after the call) stops the delete of a 4 000-deep chain within
//   1 s: the chain no longer changes from then on. The daemon is held (SIGSTOP) from the moment its
//   walk has begun until the client has its answer, so the walk is in progress at the deadline on
//   any filesystem, however fast.
// Real daemon (test/helpers/daemon-process.ts), Linux. Figures are printed as "deep-figures {json}"
// lines (docs/reliability.md, "Recursive delete bounds").
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { closeSync, constants, mkdirSync, openSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync, existsSync } from "node:fs";
import * as path from "node:path";
import { startDaemonProcess, type DaemonProcess } from "../helpers/daemon-process.ts";
import { connectGroup } from "../../src/client/connect-group.ts";

const DEPTHS = (process.env.DEEP_DELETE_DEPTHS ?? "1000,10000").split(",").map(Number);
const O_PATH = 0o10000000;
const skip = process.platform !== "linux" ? "Linux only" : undefined;

/** A chain `depth` directories deep below `base` (names "d", a file "f" every 10th level), built by descriptor: no path grows. */
function buildChain(base: string, depth: number) {
  mkdirSync(base, { recursive: true });
  let fd = openSync(base, O_PATH | constants.O_DIRECTORY);
  try {
    for (let i = 0; i < depth; i++) {
      mkdirSync(`/proc/self/fd/${fd}/d`);
      if (i % 10 === 0) writeFileSync(`/proc/self/fd/${fd}/f`, "x");
      const next = openSync(`/proc/self/fd/${fd}/d`, O_PATH | constants.O_DIRECTORY);
      closeSync(fd);
      fd = next;
    }
  } finally {
    closeSync(fd);
  }
}

/** Whether process `pid` holds a descriptor on `base` or below it (the daemon's walk holds the directories it is in). */
function holdsBelow(pid: number, base: string): boolean {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    let target = "";
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {}
    if (target === base || target.startsWith(`${base}/`)) return true;
  }
  return false;
}

/** Removes what a failed test left (deep chains need descriptor-relative removal too). */
function dropChain(base: string) {
  if (!existsSync(base)) return;
  const fds: number[] = [openSync(base, O_PATH | constants.O_DIRECTORY)];
  const names: string[] = [];
  // descend as far as "d" goes, then rmdir bottom-up
  for (;;) {
    const at = `/proc/self/fd/${fds[fds.length - 1]}`;
    for (const e of readdirSync(at)) if (e !== "d") rmSync(`${at}/${e}`, { recursive: true, force: true });
    if (!existsSync(`${at}/d`)) break;
    fds.push(openSync(`${at}/d`, O_PATH | constants.O_DIRECTORY));
    names.push("d");
  }
  while (fds.length > 1) {
    closeSync(fds.pop()!);
    rmSync(`/proc/self/fd/${fds[fds.length - 1]}/${names.pop()}`, { recursive: true, force: true });
  }
  closeSync(fds[0]);
  rmSync(base, { recursive: true, force: true });
}

/** Rmdir(force) time per depth in this run: a deeper chain must scale linearly with a shallower one. */
const timeByDepth = new Map<number, number>();

/** Entries of a chain built by buildChain (counted by descriptor: no path grows); 0 when it is gone. */
function chainEntries(base: string): number {
  if (!existsSync(base)) return 0;
  let n = 0;
  let fd = openSync(base, O_PATH | constants.O_DIRECTORY);
  try {
    for (;;) {
      const names = readdirSync(`/proc/self/fd/${fd}`);
      n += names.length;
      if (!names.includes("d")) return n;
      const next = openSync(`/proc/self/fd/${fd}/d`, O_PATH | constants.O_DIRECTORY);
      closeSync(fd);
      fd = next;
    }
  } finally {
    closeSync(fd);
  }
}

const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
const fdCount = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))] ?? 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("recursive delete bounds", { skip: skip ?? false }, () => {
  let daemon: DaemonProcess;
  let fsV1: Awaited<ReturnType<typeof connectGroup<"filesystem", "v1">>>;
  let fsOther: Awaited<ReturnType<typeof connectGroup<"filesystem", "v1beta2">>>;

  before(async () => {
    daemon = await startDaemonProcess();
    fsV1 = await connectGroup("filesystem", { socketDir: daemon.socketDir, versions: ["v1"] });
    fsOther = await connectGroup("filesystem", { socketDir: daemon.socketDir, versions: ["v1beta2"] });
    mkdirSync(path.join(daemon.kubeletDir, "pods", "probe"), { recursive: true });
  });

  after(async () => {
    fsV1?.close();
    fsOther?.close();
    if (daemon) {
      for (const d of DEPTHS) dropChain(path.join(daemon.kubeletDir, "pods", `deep-${d}`));
      for (const how of ["deadline", "cancel"]) dropChain(path.join(daemon.kubeletDir, "pods", `chain-${how}`));
      const log = daemon.stderr();
      await daemon.stop();
      assert.doesNotMatch(log, /Closing file descriptor \d+ on garbage collection/, "a handle was closed by GC");
    }
  });

  /** PathExists latencies (ms) on the other endpoint until `done` is true. */
  async function probe(done: () => boolean, max = Infinity): Promise<number[]> {
    const lat: number[] = [];
    const p = path.join(daemon.kubeletDir, "pods", "probe");
    while (!done() && lat.length < max) {
      const t = performance.now();
      assert.equal((await fsOther.client.pathExists({ path: p })).exists, true);
      lat.push(performance.now() - t);
      await sleep(5);
    }
    return lat;
  }

  for (const depth of DEPTHS) {
    it(`a chain ${depth} deep: removed inside the deadline, +64 MB RSS and +64 descriptors at most, PathExists answering`, async () => {
      const base = path.join(daemon.kubeletDir, "pods", `deep-${depth}`);
      buildChain(base, depth);
      const pid = daemon.child.pid!;
      const idle = await probe(() => false, 60);
      const rss0 = rssKb(pid);
      const fd0 = fdCount(pid);
      let rssMax = rss0;
      let fdMax = fd0;
      let done = false;
      const sampler = (async () => {
        while (!done) {
          rssMax = Math.max(rssMax, rssKb(pid));
          fdMax = Math.max(fdMax, fdCount(pid));
          await sleep(20);
        }
      })();
      const t0 = performance.now();
      const call = fsV1.client.rmdir({ path: base, force: true }, { timeoutMs: 300_000 }).then(() => null, (e: Error) => e).finally(() => (done = true));
      const busy = probe(() => done).catch((e: Error) => ((done = true), Promise.reject(e)));
      const failed = await call;
      const ms = performance.now() - t0;
      const lat = await busy;
      await sampler;
      const fig = {
        depth, ms: Math.round(ms), rssGrowthMb: Math.round((rssMax - rss0) / 1024), fdGrowth: fdMax - fd0, fdMax,
        pathExistsP99Ms: Math.round(p99(lat)), idleP99Ms: Math.round(p99(idle)), probes: lat.length,
      };
      process.stdout.write(`deep-figures ${JSON.stringify({ ...fig, error: failed?.message })}\n`);
      assert.equal(failed, null, "Rmdir(force) answered OK");
      assert.equal(existsSync(base), false, "the chain is gone");
      // Inside the default 60 s deadline, or (on a machine too loaded for that) linear in the depth
      // against a shallower chain of the same run: at most 1.5 × depth ratio × its time.
      const shallower = [...timeByDepth].filter(([d]) => d < depth).sort((a, b) => b[0] - a[0])[0];
      timeByDepth.set(depth, ms);
      const bound = Math.max(60_000, shallower ? 1.5 * (depth / shallower[0]) * shallower[1] : 0);
      assert.ok(ms < bound, `took ${Math.round(ms)} ms (bound ${Math.round(bound)} ms; same-run ${JSON.stringify(shallower ?? null)})`);
      assert.ok(fig.rssGrowthMb <= 64, `RSS grew by ${fig.rssGrowthMb} MB`);
      assert.ok(fig.fdGrowth <= 64, `descriptors grew by ${fig.fdGrowth}`);
      assert.ok(p99(lat) <= Math.max(100, 2 * p99(idle)), `PathExists p99 ${p99(lat)} ms (idle ${p99(idle)} ms)`);
    });
  }

  for (const how of ["deadline", "cancel"] as const) {
    it(`a ${how} stops a 4 000-deep delete within 1 s; the answer says ${how === "deadline" ? "DeadlineExceeded" : "Cancelled"}`, async () => {
      // Independent of the filesystem's speed (on tmpfs the whole chain goes in well under 1 s): once
      // the daemon holds a directory of the chain (the walk has begun), it is stopped (SIGSTOP) until
      // the client's deadline or cancellation has been answered, then continued (SIGCONT). Its
      // server-side deadline is overdue, or the cancellation is waiting in its socket: the walk must
      // stop within 1 s of the continue, with the chain not yet removed. A walk that finished before
      // it could be stopped (the test process descheduled for the whole walk) is tried again.
      const base = path.join(daemon.kubeletDir, "pods", `chain-${how}`);
      const pid = daemon.child.pid!;
      const count = () => chainEntries(base);
      for (let attempt = 1; ; attempt++) {
        buildChain(base, 4000);
        const total = count();
        const ac = new AbortController();
        const opts = how === "deadline" ? { timeoutMs: 1000 } : { signal: ac.signal };
        const t0 = performance.now();
        const call = fsV1.client.rmdir({ path: base, force: true }, opts).then(() => null, (e: { code?: number }) => e);
        let settled = false;
        void call.then(() => (settled = true));
        while (!settled && !holdsBelow(pid, base)) await new Promise((r) => setImmediate(r));
        let stopped = false;
        let err: { code?: number } | null;
        let at1s: number;
        try {
          if (!settled) {
            process.kill(pid, "SIGSTOP");
            stopped = true;
          }
          if (how === "cancel") setTimeout(() => ac.abort(), Math.max(0, 1000 - (performance.now() - t0)));
          err = await call;
        } finally {
          if (stopped) process.kill(pid, "SIGCONT");
        }
        if (err === null && attempt < 3) {
          process.stdout.write(`deep-figures ${JSON.stringify({ case: how, attempt, note: "finished before it could be stopped; again" })}\n`);
          continue;
        }
        assert.ok(err, "the delete was stopped before it finished");
        assert.equal(err!.code, how === "deadline" ? 4 : 1);
        await sleep(1000);
        at1s = count();
        await sleep(700);
        const later = count();
        process.stdout.write(`deep-figures ${JSON.stringify({ case: how, attempt, total, leftAt1s: at1s, leftLater: later })}\n`);
        assert.ok(at1s > 0, "the tree was not removed entirely (the walk went on after the answer)");
        assert.equal(later, at1s, "the delete kept going more than 1 s after the answer");
        dropChain(base);
        // the daemon still serves and its handles are back to normal
        assert.equal((await fsOther.client.pathExists({ path: base })).exists, false);
        return;
      }
    });
  }
});
