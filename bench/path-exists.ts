// Benchmark: filesystem PathExists latency (p50/p99) and throughput at concurrency 1 and 32,
// measured from the independent Python grpcio client, for the csi-proxy daemon and for a bare
// grpc-js baseline server run in the same invocation; prints both and their ratio.
//   node bench/path-exists.ts [--calls N]
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const calls = Number(process.argv[process.argv.indexOf("--calls") + 1] || 0) || 10_000;
const python = "/usr/bin/python3";
const stubs = path.join(root, ".cache/python-stubs");
execFileSync("bash", [path.join(root, "test/conformance/setup-python.sh"), stubs]);

interface Result { rps: number; p50_us: number; p99_us: number; errors: number; client: string }

function bench(socket: string, concurrency: number, kubelet: string): Result {
  const out = execFileSync(python, [
    path.join(root, "test/conformance/bench.py"), "--socket", socket, "--stubs", stubs, "--group", "filesystem", "--version", "v1",
    "--method", "PathExists", "--request", JSON.stringify({ path: path.join(kubelet, "exists") }),
    "--calls", String(calls), "--concurrency", String(concurrency), "--warmup", String(Math.min(1000, calls / 10)),
  ], { encoding: "utf8" });
  return JSON.parse(out.trim().split("\n").at(-1)!);
}

async function start(args: string[], ready: RegExp): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"] });
  await new Promise<void>((resolve, reject) => {
    let log = "";
    child.stderr!.on("data", (d) => {
      log += d;
      if (ready.test(log)) resolve();
    });
    child.once("exit", () => reject(new Error(`exited: ${log}`)));
  });
  return child;
}

const work = mkdtempSync(path.join(tmpdir(), "csi-proxy-bench-"));
const kubelet = path.join(work, "kubelet");
mkdirSync(path.join(kubelet, "exists"), { recursive: true });
const daemon = await start([path.join(root, "src/main.ts"), "-socket-dir", path.join(work, "s"), "-kubelet-path", kubelet], /Serving 23 endpoints/);
const baseline = await start([path.join(root, "bench/baseline-server.ts"), path.join(work, "baseline.sock")], /baseline ready/);
try {
  const grpcJs = JSON.parse(readFileSync(path.join(root, "node_modules/@grpc/grpc-js/package.json"), "utf8")).version;
  const rows: string[] = [];
  let client = "";
  for (const c of [1, 32]) {
    const ours = bench(path.join(work, "s/csi-proxy-filesystem-v1.sock"), c, kubelet);
    const base = bench(path.join(work, "baseline.sock"), c, kubelet);
    client = ours.client;
    rows.push(
      `c=${String(c).padEnd(3)} csi-proxy ${ours.rps.toFixed(0).padStart(6)} rps  p50 ${ours.p50_us.toFixed(0).padStart(6)} µs  p99 ${ours.p99_us.toFixed(0).padStart(6)} µs  errors ${ours.errors}`,
      `       baseline  ${base.rps.toFixed(0).padStart(6)} rps  p50 ${base.p50_us.toFixed(0).padStart(6)} µs  p99 ${base.p99_us.toFixed(0).padStart(6)} µs  errors ${base.errors}`,
      `       ratio csi-proxy/baseline: throughput ${(ours.rps / base.rps).toFixed(2)}  p50 ${(ours.p50_us / base.p50_us).toFixed(2)}  p99 ${(ours.p99_us / base.p99_us).toFixed(2)}`,
    );
  }
  console.log(`filesystem v1 PathExists, ${calls} calls per run; server node ${process.version}, @grpc/grpc-js ${grpcJs}; client ${client}; baseline = bare grpc-js server, same RPC`);
  for (const r of rows) console.log(r);
} finally {
  daemon.kill("SIGTERM");
  baseline.kill("SIGTERM");
  await new Promise((r) => setTimeout(r, 300));
  rmSync(work, { recursive: true, force: true });
}
