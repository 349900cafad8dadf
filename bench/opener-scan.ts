/**
 * Cost of the opener scan (src/host/linux/block/device-openers.ts) and of FormatVolume's whole in-use
 * verdict on a node with many processes:
 * `node bench/opener-scan.ts [processes=2000] [descriptors=50] [mix=files|mixed] [via=both|kernel|procfs] [namespaces=0]` starts that many
 * `sleep` processes, each inheriting that many descriptors (mix "files": every one a regular file,
 * the worst case, each needs a stat; "mixed": half regular files, half pipes and sockets), then times
 * scans for a device nobody holds (Linux only): wall time, the scan's CPU time (user + system, the
 * figure the machine's load does not inflate much) and the event loop's largest stall during a scan
 * next to its largest stall while idle. One JSON line per way of scanning ("kernel": the kernel's task
 * listing, "procfs": the walk of /proc; the kernel's listing is opened before the timed scans, as a
 * daemon has it open after its first scan). With `namespaces` > 0 it also starts that many `sleep`
 * processes each in a mount namespace of its own (unshare, root). Each line also times the whole
 * in-use verdict the way FormatVolume takes it: the mounts of the device in every mount namespace
 * (namespace-mounts.ts, tables remembered after a first call) and then the opener scan — medians of
 * 5, wall and CPU, and the namespace half alone. Every process it started is killed before it exits.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir, loadavg } from "node:os";
import * as path from "node:path";
import { scanDeviceOpeners, type OpenerScanStats } from "../src/host/linux/block/device-openers.ts";
import { createNamespaceMounts } from "../src/host/linux/mounts/namespace-mounts.ts";
import { timedMedian } from "./timed-median.ts";

const processes = Number(process.argv[2] ?? 2000);
const descriptors = Number(process.argv[3] ?? 50);
const mix = process.argv[4] ?? "files";
const ways = (process.argv[5] ?? "both") === "both" ? (["kernel", "procfs"] as const) : ([process.argv[5]] as ["kernel" | "procfs"]);
const namespaces = Number(process.argv[6] ?? 0);

const dir = mkdtempSync(path.join(tmpdir(), "opener-scan-"));
const fds: number[] = [];
const children: ChildProcess[] = [];
try {
  const files = mix === "files" ? descriptors : Math.ceil(descriptors / 2);
  for (let i = 0; i < files; i++) fds.push(openSync(path.join(dir, `f${i}`), "w"));
  if (fds.length < descriptors) {
    // Sockets (one connected pair per two descriptors) for the rest.
    const server = createServer().listen(path.join(dir, "s"));
    await new Promise((r) => server.once("listening", r));
    while (fds.length < descriptors) {
      const c = connect(path.join(dir, "s"));
      await new Promise((r) => c.once("connect", r));
      fds.push((c as unknown as { _handle: { fd: number } })._handle.fd);
    }
  }
  for (let i = 0; i < processes; i++) {
    children.push(spawn("sleep", ["600"], { stdio: fds }));
    if (i % 100 === 99) await new Promise((r) => setTimeout(r, 10));
  }
  for (let i = 0; i < namespaces; i++) {
    children.push(spawn("unshare", ["--mount", "--propagation", "private", "sleep", "600"], { stdio: "ignore" }));
    if (i % 100 === 99) await new Promise((r) => setTimeout(r, 10));
  }
  await new Promise((r) => setTimeout(r, 500));
  /** Largest gap between 1 ms timer ticks over `ms` with nothing else running: the machine's own scheduling noise. */
  const idleLag = async (ms: number) => {
    let worst = 0;
    let last = performance.now();
    const lag = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last - 1);
      last = now;
    }, 1);
    await new Promise((r) => setTimeout(r, ms));
    clearInterval(lag);
    return Math.round(worst);
  };
  const baselineLagMs = await idleLag(2000);
  for (const via of ways) {
    await scanDeviceOpeners([{ major: 4095, minor: 1048575 }], { via });
    const runs: { ms: number; cpuMs: number; stats: OpenerScanStats }[] = [];
    let maxLagMs = 0;
    for (let i = 0; i < 5; i++) {
      const stats: OpenerScanStats = { processes: 0, descriptors: 0, stats: 0, skipped: 0 };
      let last = performance.now();
      const lag = setInterval(() => {
        const now = performance.now();
        maxLagMs = Math.max(maxLagMs, now - last - 1);
        last = now;
      }, 1);
      const t = performance.now();
      const cpu = process.cpuUsage();
      await scanDeviceOpeners([{ major: 4095, minor: 1048575 }], { via }, stats);
      const used = process.cpuUsage(cpu);
      runs.push({ ms: Math.round(performance.now() - t), cpuMs: Math.round((used.user + used.system) / 1000), stats });
      clearInterval(lag);
    }
    const ms = runs.map((r) => r.ms).sort((a, b) => a - b);
    const cpuMs = runs.map((r) => r.cpuMs).sort((a, b) => a - b);
    // The whole verdict as FormatVolume takes it: every namespace's mounts of the device, then the openers.
    const inUse = createNamespaceMounts(via === "procfs" ? { processNamespaces: async () => null } : {});
    await inUse.mountsOf(4095, 1048575); // the first call reads every namespace's table once
    const timed = (fn: () => Promise<unknown>) => timedMedian(fn);
    const namespacesHalf = await timed(() => inUse.mountsOf(4095, 1048575));
    const verdict = await timed(async () => {
      await inUse.mountsOf(4095, 1048575);
      await scanDeviceOpeners([{ major: 4095, minor: 1048575 }], { via });
    });
    process.stdout.write(
      `${JSON.stringify({ via, processes, descriptors, mix, namespaces: inUse.rememberedNamespaces(), medianMs: ms[2], minMs: ms[0], maxMs: ms[4], medianCpuMs: cpuMs[2], cpuUsPerDescriptor: +((cpuMs[2] * 1000) / Math.max(1, processes * descriptors)).toFixed(2), namespacesHalfMs: namespacesHalf.ms, namespacesHalfCpuMs: namespacesHalf.cpuMs, verdictMs: verdict.ms, verdictCpuMs: verdict.cpuMs, maxEventLoopLagMs: Math.round(maxLagMs), idleEventLoopLagMs: baselineLagMs, scanned: runs[2].stats, loadavg: loadavg().map((x) => x.toFixed(1)).join(" ") })}\n`,
    );
  }
} finally {
  for (const c of children) c.kill("SIGKILL");
  for (const fd of fds) {
    try {
      closeSync(fd);
    } catch {
      // a socket's descriptor is closed with its handle at exit
    }
  }
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
