#!/usr/bin/env node
// `npm run bench:windows`: the Windows exe measured as users run it, under Wine (this machine has no
// Windows). Builds csi-proxy.exe (scripts/build-exe.ts) and runs, in alternating rounds, in the
// repository's Wine prefix (scripts/install-wine.sh) with one persistent wineserver:
//
//   * the floor: the node.exe the exe is made from (same version): spawn → a bare script's first
//     statement ran (the start floor: the overhead target is measured against it), `node.exe -e 0`
//     spawn → exit (printed too: Wine's process exit makes it longer than a start), and that idle
//     node.exe's memory;
//   * ours: csi-proxy.exe;
//   * upstream's exe, when its path is given: `--upstream-exe PATH` or UPSTREAM_EXE. Its binary is
//     built outside this repository (never by it); without one, ours and the floor are printed and the
//     reason is said.
//
// Each server, each round: spawn → all 23 pipes accept (a waiting client polls them every 5 ms);
// VmRSS and anonymous RSS idle (after --settle-ms) with each PE image's pages apart (bench/wine-memory.ts:
// Wine copies image sections into anonymous memory); PathExists at c=1 then c=8 (one HTTP/2
// connection each, --calls measured after 500 warm-up calls; with the default 9 500 the two runs make
// 20 000 calls); CPU per call of the server process and of wineserver (all of wineserver's: it also
// serves the client); memory again after the calls. The client is node.exe 22 under Wine running
// bench/windows-client.ts (our own code), the same for every server; with `--client go` the load
// runs come from bench/go's grpc-go 1.33 client cross-built for Windows (bench/go/dial_windows.go),
// which under Wine adds milliseconds per call at c=1 (each goroutine hand-off is a wineserver
// round trip), so it is not the default.
//
// `--baseline-exe PATH` adds another build of ours (koffi/win32_x64/koffi.node beside it) to the same
// alternating rounds, for an A/B of a change: its figures and the median per-round ours/baseline
// ratios are printed after the table.
//
//   node bench/windows.ts [--rounds 5] [--calls 9500] [--settle-ms 3000] [--upstream-exe PATH] [--baseline-exe PATH] [--client node|go]
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as esbuild from "esbuild";
import { buildExe, esbuildOptions } from "../scripts/build-exe.ts";
import { allEndpoints } from "../src/api/catalog.ts";
import { pipePath } from "../src/api/endpoint.ts";
import { repoRoot } from "./production-server.ts";
import { processMemory, type MemoryBreakdown } from "./wine-memory.ts";
import { buildGoBench } from "./go-bench.ts";
import { cpuMs, report, runWine, startWine, startWineserver, wineEnv, winPath, type WineEnv } from "./wine-process.ts";

const argv = process.argv.slice(2);
const opt = (name: string, def?: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const rounds = Number(opt("rounds", "5"));
const calls = Number(opt("calls", "9500"));
const warmup = 500;
const settleMs = Number(opt("settle-ms", "3000"));
const upstreamExe = opt("upstream-exe", process.env.UPSTREAM_EXE || undefined);
const baselineExe = opt("baseline-exe");
if (baselineExe && !fs.existsSync(baselineExe)) throw new Error(`--baseline-exe ${baselineExe} does not exist`);
const clientKind = opt("client", "node");
if (clientKind !== "node" && clientKind !== "go") throw new Error(`--client must be node or go, not ${clientKind}`);

const median = (xs: number[]) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const MiB = (kib: number) => kib / 1024;
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "—");
const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : "—");
const loadavg = () => os.loadavg().map((x) => x.toFixed(2)).join(" ");

// --- set-up ---
let upstreamWhy = "";
if (!upstreamExe) upstreamWhy = "no upstream exe given (--upstream-exe PATH or UPSTREAM_EXE; it is built outside this repository)";
else if (!fs.existsSync(upstreamExe)) upstreamWhy = `upstream exe ${upstreamExe} does not exist`;
const withUpstream = !upstreamWhy;

console.log(`bench:windows — ${new Date().toISOString()}, load average ${loadavg()}, ${os.cpus().length} CPUs, client ${clientKind === "go" ? "grpc-go 1.33 (Windows build)" : "node.exe 22 (bench/windows-client.ts)"}`);
const built = await buildExe({ quiet: true });
const w: WineEnv = wineEnv();
const clientJs = path.join(w.driveC, "csi-bench", "windows-client.cjs");
await esbuild.build(esbuildOptions(path.join(repoRoot, "bench", "windows-client.ts"), clientJs));
const kubelet = path.join(w.driveC, "csi-bench", "kubelet");
fs.mkdirSync(path.join(kubelet, "pods", "a"), { recursive: true });
const kubeletWin = winPath(w, kubelet);
const probePath = `${kubeletWin}\\pods\\a`;
const pipes = allEndpoints().map(({ group, version }) => pipePath(group, version));
const nodeExeWin = winPath(w, built.nodeExe);
const goClientWin = clientKind === "go" ? winPath(w, buildGoBench("windows")) : "";
const wineserver = await startWineserver(w);

interface Server {
  name: string;
  exe: string;
  images: { label: string; file: string }[];
}
const servers: Server[] = [
  { name: "ours", exe: built.exe, images: [{ label: "exe", file: built.exe }, { label: "koffi.node", file: path.join(built.dir, "koffi", "win32_x64", "koffi.node") }] },
];
if (baselineExe) {
  const exe = path.resolve(baselineExe);
  servers.push({ name: "baseline", exe, images: [{ label: "exe", file: exe }, { label: "koffi.node", file: path.join(path.dirname(exe), "koffi", "win32_x64", "koffi.node") }] });
}
if (withUpstream) servers.push({ name: "upstream", exe: path.resolve(upstreamExe!), images: [{ label: "exe", file: path.resolve(upstreamExe!) }] });

let argSeq = 0;
async function client(mode: string, args: object) {
  const file = path.join(w.driveC, "csi-bench", `args-${process.pid}-${++argSeq}.json`);
  fs.writeFileSync(file, JSON.stringify(args));
  return { file, args: [nodeExeWin, winPath(w, clientJs), mode, winPath(w, file)] };
}

/** The go client's JSON line in the node client's report shape (it checks no answer: exists is taken as true when no call failed). */
function goReport(out: string): Record<string, any> {
  const line = out.split("\n").find((l) => l.startsWith("{"));
  if (!line) throw new Error(`no result line in:\n${out}`);
  const r = JSON.parse(line);
  return { rps: r.rps, p50Us: r.p50_us, p99Us: r.p99_us, errors: r.errors, firstError: r.firstError, exists: r.errors === 0 };
}

interface Load { rps: number; p50Us: number; p99Us: number; cpuUs: number; cpuWithWineserverUs: number }
interface RoundResult { startMs: number; missing: string[]; idle: MemoryBreakdown; after: MemoryBreakdown; c1: Load; c8: Load }

async function measureServer(s: Server): Promise<RoundResult> {
  const waiter = startWine(w, (await client("wait", { pipes, timeoutMs: 60_000 })).args);
  await waiter.waitFor(/^waiting$/m);
  const t0 = performance.timeOrigin + performance.now();
  const server = startWine(w, [winPath(w, s.exe), `-kubelet-path=${kubeletWin}`]);
  try {
    await waiter.exited;
    const waited = report(waiter.output());
    if (server.child.exitCode !== null) throw new Error(`${s.name} exited at start:\n${server.output()}`);
    const startMs = waited.unixMs - t0;
    await new Promise((r) => setTimeout(r, settleMs));
    const idle = processMemory(server.pid, s.images);
    const loads: Load[] = [];
    for (const concurrency of [1, 8]) {
      // A connection that ends before any call (seen once with upstream's exe under Wine) is retried once, and said.
      let rep: Record<string, any> | undefined, dc = 0, dw = 0;
      for (let attempt = 1; !rep; attempt++) {
        const c0 = cpuMs(server.pid), w0 = cpuMs(wineserver.pid!);
        const r = await runWine(w, clientKind === "go"
          ? [goClientWin, "load", "-socket", pipePath("filesystem", "v1"), "-path", probePath, "-calls", String(calls), "-warmup", String(warmup), "-concurrency", String(concurrency)]
          : (await client("load", { pipe: pipePath("filesystem", "v1"), path: probePath, calls, warmup, concurrency })).args);
        let got: Record<string, any>;
        try {
          got = clientKind === "go" ? goReport(r.out) : report(r.out);
        } catch (err) {
          throw new Error(`${s.name} c=${concurrency}: the client failed: ${(err as Error).message}\nserver output (tail):\n${server.output().slice(-2000)}`);
        }
        dc = cpuMs(server.pid) - c0;
        dw = cpuMs(wineserver.pid!) - w0;
        if (got.errors === calls && attempt === 1) {
          console.log(`  ${s.name} c=${concurrency}: every call failed (${got.firstError}); retrying once`);
          continue;
        }
        if (got.errors || got.exists !== true) throw new Error(`${s.name} c=${concurrency}: ${got.errors} errors (${got.firstError}), exists=${got.exists}\nserver output (tail):\n${server.output().slice(-2000)}`);
        rep = got;
      }
      loads.push({ rps: rep.rps, p50Us: rep.p50Us, p99Us: rep.p99Us, cpuUs: (dc * 1000) / (calls + warmup), cpuWithWineserverUs: ((dc + dw) * 1000) / (calls + warmup) });
    }
    const after = processMemory(server.pid, s.images);
    return { startMs, missing: waited.missing, idle, after, c1: loads[0], c8: loads[1] };
  } finally {
    await server.kill();
    await waiter.kill();
  }
}

const results: Record<string, RoundResult[]> = Object.fromEntries(servers.map((s) => [s.name, []]));
/** startMs: spawn → the script's first statement ran (its output seen, polled every 2 ms); exitMs: `node.exe -e 0` spawn → exit. */
const floor = { startMs: [] as number[], exitMs: [] as number[], idle: [] as MemoryBreakdown[] };
const nodeImages = [{ label: "exe", file: built.nodeExe }];

try {
  await runWine(w, [nodeExeWin, "-e", "0"]); // warm-up, not counted: the first Wine process of a prefix pays for its DLLs' first reads
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [...servers].reverse() : servers;
    const bare = await runWine(w, [nodeExeWin, "-e", "0"]);
    floor.exitMs.push(bare.ms);
    const t0 = performance.now();
    const idleNode = startWine(w, [nodeExeWin, "-e", "process.stdout.write('up\\n'); setInterval(() => {}, 1 << 30)"]);
    await idleNode.waitFor(/^up$/m);
    floor.startMs.push(performance.now() - t0);
    await new Promise((res) => setTimeout(res, settleMs));
    floor.idle.push(processMemory(idleNode.pid, nodeImages));
    await idleNode.kill();
    for (const s of order) results[s.name].push(await measureServer(s));
    const line = servers.map((s) => {
      const x = results[s.name][r];
      return `${s.name}: start ${f0(x.startMs)} ms, anon outside image ${f1(MiB(x.idle.anonOutsideExeKiB))} MiB, c=1 ${f0(x.c1.rps)} rps p50 ${f0(x.c1.p50Us)} µs, c=8 ${f0(x.c8.rps)} rps p50 ${f0(x.c8.p50Us)} µs`;
    });
    console.log(`round ${r + 1}/${rounds} (load ${loadavg()}): node.exe first statement ${f0(floor.startMs[r])} ms, -e 0 to exit ${f0(bare.ms)} ms; ${line.join("; ")}`);
  }
} finally {
  wineserver.kill("SIGKILL");
}

// --- report ---
const ours = results.ours, up = results.upstream ?? [];
const med = (rs: RoundResult[], f: (x: RoundResult) => number) => median(rs.map(f));
/** Median over rounds of ours/upstream's per-round ratio. */
const ratio = (f: (x: RoundResult) => number) => (withUpstream ? median(ours.map((x, i) => f(x) / f(up[i]))) : NaN);
const rx = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : "—");
const rows: string[][] = [];
const row = (label: string, f: (x: RoundResult) => number, fmt: (x: number) => string, floorValue = "") =>
  rows.push([label, fmt(med(ours, f)), withUpstream ? fmt(med(up, f)) : "—", rx(ratio(f)), floorValue]);

const fileMiB = (p: string) => MiB(fs.statSync(p).size / 1024);
const upstreamServer = servers.find((s) => s.name === "upstream");
rows.push(["exe size MiB", `${f1(fileMiB(built.exe))} + koffi.node ${f1(fileMiB(servers[0].images[1].file))}`, upstreamServer ? f1(fileMiB(upstreamServer.exe)) : "—",
  upstreamServer ? rx(fileMiB(built.exe) / fileMiB(upstreamServer.exe)) : "—", f1(fileMiB(built.nodeExe))]);
const floorStart = median(floor.startMs);
row("start → 23 pipes accept, ms", (x) => x.startMs, f0, `first statement ${f0(floorStart)}; -e 0 to exit ${f0(median(floor.exitMs))}`);
const m = (k: keyof MemoryBreakdown) => (x: MemoryBreakdown) => MiB(x[k] as number);
const fl = (f: (x: MemoryBreakdown) => number) => f1(median(floor.idle.map(f)));
row("idle VmRSS MiB", (x) => m("rssKiB")(x.idle), f1, fl(m("rssKiB")));
row("idle RssAnon MiB", (x) => m("anonKiB")(x.idle), f1, fl(m("anonKiB")));
row("  of which the exe image (anon)", (x) => MiB(x.idle.images[0].anonKiB), f1, fl((x) => MiB(x.images[0].anonKiB)));
row("  anon outside the exe image", (x) => m("anonOutsideExeKiB")(x.idle), f1, fl(m("anonOutsideExeKiB")));
row("  of which koffi.node image", (x) => MiB(x.idle.images[1]?.anonKiB ?? 0), f1);
row("idle RssFile MiB (Wine's DLLs, NLS)", (x) => m("fileKiB")(x.idle), f1, fl(m("fileKiB")));
row(`VmRSS after ${2 * (calls + warmup)} calls`, (x) => m("rssKiB")(x.after), f1);
row("  anon outside the exe image", (x) => m("anonOutsideExeKiB")(x.after), f1);
row("  growth over idle, MiB", (x) => MiB(x.after.rssKiB - x.idle.rssKiB), f1);
for (const c of ["c1", "c8"] as const) {
  const n = c === "c1" ? 1 : 8;
  row(`PathExists c=${n} rps`, (x) => x[c].rps, f0);
  row(`PathExists c=${n} p50 µs`, (x) => x[c].p50Us, f0);
  row(`PathExists c=${n} p99 µs`, (x) => x[c].p99Us, f0);
  row(`CPU per call c=${n}, server µs`, (x) => x[c].cpuUs, f0);
  row(`CPU per call c=${n}, server + wineserver µs`, (x) => x[c].cpuWithWineserverUs, f0);
}
const widths = [0, 1, 2, 3, 4].map((i) => Math.max(...rows.map((r) => r[i].length), ["", "ours", "upstream", "ratio", "floor (bare node.exe)"][i].length));
const fmtRow = (r: string[]) => r.map((c, i) => c.padEnd(widths[i])).join("  ");
console.log(`\nmedians of ${rounds} rounds (ratios: median of per-round ours/upstream); load average now ${loadavg()}`);
console.log(fmtRow(["", "ours", "upstream", "ratio", "floor (bare node.exe)"]));
for (const r of rows) console.log(fmtRow(r));
if (baselineExe) {
  const base = results.baseline;
  const ab = (label: string, f: (x: RoundResult) => number, fmt: (x: number) => string) =>
    console.log(`  ${label}: ours ${fmt(med(ours, f))}, baseline ${fmt(med(base, f))}, ours/baseline ${rx(median(ours.map((x, i) => f(x) / f(base[i]))))}`);
  console.log(`\nA/B against the baseline build ${baselineExe} (medians; ratio: median of per-round ours/baseline):`);
  ab("start → 23 pipes accept, ms", (x) => x.startMs, f0);
  ab("anon outside the exe image, MiB", (x) => m("anonOutsideExeKiB")(x.idle), f1);
  for (const c of ["c1", "c8"] as const) {
    ab(`PathExists ${c} rps`, (x) => x[c].rps, f0);
    ab(`PathExists ${c} p50 µs`, (x) => x[c].p50Us, f0);
    ab(`CPU per call ${c}, server µs`, (x) => x[c].cpuUs, f0);
  }
}
if (!withUpstream) console.log(`\nupstream: not measured — ${upstreamWhy}.`);
const missing = [...new Set([...ours, ...up].flatMap((x) => x.missing))];
if (missing.length) console.log(`pipes that never accepted within 60 s (start figures exclude nothing; check): ${missing.join(", ")}`);

// --- targets ---
const startOver = med(ours, (x) => x.startMs) - floorStart;
const growth = med(ours, (x) => MiB(x.after.rssKiB - x.idle.rssKiB));
console.log("\ntargets:");
console.log(`  start overhead over a bare node.exe reaching its first statement: ${f0(startOver)} ms (≤ 300) — ${startOver <= 300 ? "met" : "NOT met"}`);
console.log(`  RSS growth after ${2 * (calls + warmup)} calls: ${f1(growth)} MiB (≤ 10) — ${growth <= 10 ? "met" : "NOT met"}`);
if (withUpstream) {
  const t = (label: string, x: number, ok: boolean, want: string) => console.log(`  ${label}: ${rx(x)} (${want}) — ${ok ? "met" : "NOT met"}`);
  const c8 = ratio((x) => x.c8.rps), c1 = ratio((x) => x.c1.rps), p8 = ratio((x) => x.c8.p50Us), p1 = ratio((x) => x.c1.p50Us);
  t("PathExists c=8 throughput", c8, c8 >= 1, "≥ 1.0× upstream");
  t("PathExists c=1 throughput", c1, c1 >= 1, "≥ 1.0× upstream");
  t("PathExists c=8 p50", p8, p8 <= 1, "≤ 1.0× upstream");
  t("PathExists c=1 p50", p1, p1 <= 1, "≤ 1.0× upstream");
  const mem = ratio((x) => x.idle.anonOutsideExeKiB);
  t("idle anon outside the exe image", mem, mem <= 1.5, "≤ 1.5× upstream's");
} else {
  console.log(`  throughput, p50 and memory against upstream: not measured (${upstreamWhy})`);
}
