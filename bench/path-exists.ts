// Benchmark: csi-proxy against grpc-go doing the same filesystem v1 PathExists work (bench/go: path
// checks + lstat under the kubelet dir), both loaded by the same grpc-go 1.33 client (one connection,
// C concurrent callers), alternately in several rounds; then our server's footprint: RSS idle after
// start, at the end of 100 000 calls, 1.5 s later (once the server has given the burst back) and after
// 60 s idle, anonymous memory apart; the load client's CPU beside the servers'; and the time from spawn until all 23 endpoints accept.
//   node bench/path-exists.ts [--calls N] [--rounds R] [--idle-seconds S] [--load-calls N] [--profile | --no-profile]
// When a throughput, latency or memory target is not met (or with --profile), our server runs once
// more under --cpu-prof/--heap-prof with the same loads, and the summaries say where time and memory go.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { spawn } from "node:child_process";
import { allEndpoints } from "../src/api/catalog.ts";
import { buildProduction, formatResident, residentMB, spawnServer, stop } from "./production-server.ts";
import { buildGoBench, goBenchBinary, runLoad, type LoadResult } from "./go-bench.ts";
import { summariseCpuProfile, summariseHeapProfile } from "./profile-summary.ts";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = arg("calls", 20_000);
const rounds = arg("rounds", 3);
const idleSeconds = arg("idle-seconds", 60);
const loadCalls = arg("load-calls", 100_000);
const forceProfile = process.argv.includes("--profile");
const noProfile = process.argv.includes("--no-profile");

const TARGETS = { c32Throughput: 1.2, c1P50: 0.8, rssIdle: 60, rssLoaded: 64, startMs: 300 };
/** After the load, the server gives back the burst's memory once no call has run for 200 ms (src/boot/quiet-footprint.ts); RSS is read again this much later. */
const QUIET_READ_MS = 1500;

buildProduction();
buildGoBench();
const work = mkdtempSync(path.join(tmpdir(), "csi-proxy-bench-"));
const kubelet = path.join(work, "kubelet");
mkdirSync(path.join(kubelet, "exists"), { recursive: true });
const requestPath = path.join(kubelet, "exists");
const endpointSockets = (dir: string) => allEndpoints().map(({ group, version }) => path.join(dir, `csi-proxy-${group}-${version}.sock`));

const canConnect = (socket: string) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(socket);
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });

/** Starts timed per reading (and as many bare `node -e 0` runs beside them). */
const START_RUNS = 7;

/** Milliseconds from spawning `node -e 0` (the binary that runs the server) until it exited. */
async function bareNodeMs(): Promise<number> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("exit", resolve);
    child.once("error", reject);
  });
  if (code !== 0) throw new Error(`node -e 0 exited ${code}`);
  return performance.now() - t0;
}

/** Spawns our server and resolves with the milliseconds until every endpoint accepts a connection. */
async function startOurs(socketDir: string, nodeFlags: string[] = []) {
  const t0 = performance.now();
  const server = spawnServer(["-socket-dir", socketDir, "-kubelet-path", kubelet], nodeFlags);
  const pending = new Set(endpointSockets(socketDir));
  while (pending.size) {
    if (server.child.exitCode !== null) throw new Error(`server exited: ${server.log()}`);
    for (const s of [...pending]) if (await canConnect(s)) pending.delete(s);
    if (pending.size) await new Promise((r) => setTimeout(r, 2));
  }
  return { ...server, startMs: performance.now() - t0 };
}

async function startGo(socket: string) {
  const child = spawn(goBenchBinary, ["server", "-socket", socket, "-kubelet", kubelet], { stdio: ["ignore", "ignore", "pipe"] });
  await new Promise<void>((resolve, reject) => {
    child.stderr!.once("data", () => resolve());
    child.once("exit", () => reject(new Error("grpc-go server exited")));
  });
  return child;
}

/** CPU time (user + system, all threads) a process used so far, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
/** CPU time of this process's reaped children (the load clients, run synchronously), in ms (cutime + cstime). */
const childrenCpuMs = () => {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
  return (Number(fields[13]) + Number(fields[14])) * 10;
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const f0 = (x: number) => x.toFixed(0);
const verdict = (ok: boolean) => (ok ? "met" : "NOT met");

try {
  // 1. Throughput and latency, alternating servers.
  const ours = await startOurs(path.join(work, "s"));
  const goServer = await startGo(path.join(work, "go.sock"));
  const oursSocket = path.join(work, "s", "csi-proxy-filesystem-v1.sock");
  const goSocket = path.join(work, "go.sock");
  const results: Record<string, { ours: LoadResult[]; go: LoadResult[] }> = { "1": { ours: [], go: [] }, "32": { ours: [], go: [] } };
  /** Server CPU per call (µs) in each run, by concurrency: at c=1 each call also pays for waking the server from idle. */
  const cpuPerCall: Record<string, { ours: number[]; go: number[] }> = { "1": { ours: [], go: [] }, "32": { ours: [], go: [] } };
  /** The load client's CPU per call (µs) and its share of the run's wall time, in each c=32 run: a client near 100 % of a core, or using more CPU per call than the server, would be the bottleneck. */
  const clientCpu = { ours: [] as number[], go: [] as number[] };
  const clientBusy = { ours: [] as number[], go: [] as number[] };
  let client = "";
  for (let round = 0; round < rounds; round++) {
    for (const c of [1, 32]) {
      // Alternate who goes first, so neither always runs on a machine the other just warmed.
      const order = round % 2 ? (["go", "ours"] as const) : (["ours", "go"] as const);
      for (const who of order) {
        const pid = who === "ours" ? ours.child.pid! : goServer.pid!;
        const cpu0 = cpuMs(pid), client0 = childrenCpuMs(), t0 = performance.now();
        const r = runLoad(who === "ours" ? oursSocket : goSocket, requestPath, calls, c);
        cpuPerCall[String(c)][who].push(((cpuMs(pid) - cpu0) * 1000) / (calls + 500));
        if (c === 32) {
          const client = childrenCpuMs() - client0;
          clientCpu[who].push((client * 1000) / (calls + 500));
          clientBusy[who].push(client / (performance.now() - t0));
        }
        results[String(c)][who].push(r);
        client = r.client;
      }
    }
  }
  await stop(ours.child);
  goServer.kill("SIGTERM");

  console.log(`filesystem v1 PathExists, ${calls} calls after 500 warm-up per run, ${rounds} rounds; client ${client}, one connection; server node ${process.version} (production build)`);
  console.log("        |           csi-proxy             |            grpc-go              | ratio ours/grpc-go");
  console.log("        |    rps     p50 µs     p99 µs    |    rps     p50 µs     p99 µs    |  rps    p50    p99");
  const ratio = { c1P50: 0, c32Rps: 0 };
  for (const c of ["1", "32"]) {
    for (let round = 0; round < rounds; round++) {
      const o = results[c].ours[round], g = results[c].go[round];
      console.log(`c=${c.padEnd(3)} r${round + 1} | ${f0(o.rps).padStart(6)} ${f0(o.p50_us).padStart(9)} ${f0(o.p99_us).padStart(10)}    | ${f0(g.rps).padStart(6)} ${f0(g.p50_us).padStart(9)} ${f0(g.p99_us).padStart(10)}    | ${(o.rps / g.rps).toFixed(2)}  ${(o.p50_us / g.p50_us).toFixed(2)}  ${(o.p99_us / g.p99_us).toFixed(2)}`);
    }
    const m = (who: "ours" | "go", k: keyof LoadResult) => median(results[c][who].map((r) => r[k] as number));
    console.log(`c=${c.padEnd(3)} med | ${f0(m("ours", "rps")).padStart(6)} ${f0(m("ours", "p50_us")).padStart(9)} ${f0(m("ours", "p99_us")).padStart(10)}    | ${f0(m("go", "rps")).padStart(6)} ${f0(m("go", "p50_us")).padStart(9)} ${f0(m("go", "p99_us")).padStart(10)}    | ${(m("ours", "rps") / m("go", "rps")).toFixed(2)}  ${(m("ours", "p50_us") / m("go", "p50_us")).toFixed(2)}  ${(m("ours", "p99_us") / m("go", "p99_us")).toFixed(2)}`);
    if (c === "1") ratio.c1P50 = m("ours", "p50_us") / m("go", "p50_us");
    else ratio.c32Rps = m("ours", "rps") / m("go", "rps");
  }

  for (const c of ["1", "32"]) {
    const { ours: o, go: g } = cpuPerCall[c];
    console.log(`server CPU per call at c=${c} (user+system, all threads): csi-proxy ${median(o).toFixed(0)} µs, grpc-go ${median(g).toFixed(0)} µs (ratio ${(median(o) / median(g)).toFixed(2)})${c === "1" ? "; each call also wakes the server from idle" : "; the load client shares the same 2 cores"}`);
  }
  console.log(`load client at c=32 (Go, one connection): CPU per call ${median(clientCpu.ours).toFixed(0)} µs against csi-proxy, ${median(clientCpu.go).toFixed(0)} µs against grpc-go; busy ${(100 * median(clientBusy.ours)).toFixed(0)} % / ${(100 * median(clientBusy.go)).toFixed(0)} % of one core over the run's wall time`);
  console.log(`load average at the end: ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);

  // 2. Start time: spawn → all 23 endpoints accept (several starts, median), each beside a bare
  // `node -e 0` of the same binary (spawn → exit): the machine's speed changes over hours, the
  // difference and the ratio say what the program itself adds.
  const starts: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < START_RUNS; i++) {
    bare.push(await bareNodeMs());
    const s = await startOurs(path.join(work, `start-${i}`));
    starts.push(s.startMs);
    await stop(s.child);
  }

  // 3. RSS of a fresh server: idle after start, after the load, after idle.
  const fresh = await startOurs(path.join(work, "rss"));
  await new Promise((r) => setTimeout(r, 1000));
  const idle = residentMB(fresh.child.pid!);
  const load = runLoad(path.join(work, "rss", "csi-proxy-filesystem-v1.sock"), requestPath, loadCalls, 32, 0);
  const loaded = residentMB(fresh.child.pid!);
  await new Promise((r) => setTimeout(r, QUIET_READ_MS));
  const quiet = residentMB(fresh.child.pid!);
  await new Promise((r) => setTimeout(r, Math.max(0, idleSeconds * 1000 - QUIET_READ_MS)));
  const rested = residentMB(fresh.child.pid!);
  const [rssIdle, rssLoaded] = [idle.rss, quiet.rss];
  await stop(fresh.child);

  const [startMedian, bareMedian] = [median(starts), median(bare)];
  console.log(`start → all 23 endpoints accept: median ${f0(startMedian)} ms   runs ${starts.map(f0).join(" ")}`);
  console.log(`bare \`node -e 0\` (same binary, spawn → exit): median ${f0(bareMedian)} ms   runs ${bare.map(f0).join(" ")}; start − bare ${f0(startMedian - bareMedian)} ms, start / bare ${(startMedian / bareMedian).toFixed(2)}×`);
  console.log(`RSS: idle after start ${formatResident(idle)}; after ${loadCalls} calls (c=32, ${f0(load.rps)} rps): at the end ${formatResident(loaded)}, ${QUIET_READ_MS} ms later ${formatResident(quiet)}; after ${idleSeconds} s idle ${formatResident(rested)}`);
  console.log("  (anon: heap, stacks, malloc; file: pages of the node binary and libraries, shared with other processes mapping them)");
  console.log("targets:");
  console.log(`  PathExists c=32 throughput ≥ ${TARGETS.c32Throughput}× grpc-go: ${ratio.c32Rps.toFixed(2)}× ${verdict(ratio.c32Rps >= TARGETS.c32Throughput)}`);
  console.log(`  PathExists c=1 p50 ≤ ${TARGETS.c1P50}× grpc-go: ${ratio.c1P50.toFixed(2)}× ${verdict(ratio.c1P50 <= TARGETS.c1P50)}`);
  console.log(`  RSS idle ≤ ${TARGETS.rssIdle} MB: ${rssIdle.toFixed(1)} MB ${verdict(rssIdle <= TARGETS.rssIdle)}`);
  console.log(`  RSS after ${loadCalls} calls (${QUIET_READ_MS} ms after the last) ≤ ${TARGETS.rssLoaded} MB: ${rssLoaded.toFixed(1)} MB (anon ${quiet.anon.toFixed(1)}) ${verdict(rssLoaded <= TARGETS.rssLoaded)}; at the last call ${loaded.rss.toFixed(1)} MB (anon ${loaded.anon.toFixed(1)})`);
  console.log(`  start → 23 endpoints ≤ ${TARGETS.startMs} ms: ${f0(startMedian)} ms ${verdict(startMedian <= TARGETS.startMs)} (bare node ${f0(bareMedian)} ms: start − bare ${f0(startMedian - bareMedian)} ms, ${(startMedian / bareMedian).toFixed(2)}×)`);

  // 4. Profiles of our server under the same loads, when a target is missed (or asked for).
  const missed = ratio.c32Rps < TARGETS.c32Throughput || ratio.c1P50 > TARGETS.c1P50 || rssIdle > TARGETS.rssIdle || rssLoaded > TARGETS.rssLoaded;
  if ((missed && !noProfile) || forceProfile) {
    const dir = path.join(work, "prof");
    const p = await startOurs(path.join(work, "p"), ["--cpu-prof", "--cpu-prof-dir", dir, "--heap-prof", "--heap-prof-dir", dir]);
    runLoad(path.join(work, "p", "csi-proxy-filesystem-v1.sock"), requestPath, calls, 32);
    runLoad(path.join(work, "p", "csi-proxy-filesystem-v1.sock"), requestPath, calls / 4, 1);
    await stop(p.child);
    const file = (ext: string) => readdirSync(dir).find((f) => f.endsWith(ext));
    const cpu = file(".cpuprofile"), heap = file(".heapprofile");
    if (cpu) {
      console.log(`\nCPU profile of our server (start, ${calls} calls at c=32, ${calls / 4} at c=1): self time, top entries.`);
      console.log("Native entries named after an fs call (lstat, realpath) are that call's main-thread side (request + completion);");
      console.log("(idle) is the event loop waiting (for the thread pool or the client).");
      console.log(summariseCpuProfile(JSON.parse(readFileSync(path.join(dir, cpu), "utf8")), 25));
    }
    if (heap) {
      console.log("\nHeap profile (sampled allocations still live at exit), top allocating functions:");
      console.log(summariseHeapProfile(JSON.parse(readFileSync(path.join(dir, heap), "utf8")), 12));
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
