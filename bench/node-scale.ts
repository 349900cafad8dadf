// Benchmark: how the per-sync RPCs' cost moves as the node grows (needs root; prints the reason and
// exits 0 otherwise). The server is the production build (bench/production-server.ts), started
// afresh for each node state inside this benchmark's own private mount namespace (the script
// re-runs itself under `unshare --mount --propagation private`), which grows step by step:
//   mounts under the kubelet dir 0 / 1 000 / 5 000 / 20 000 (bind mounts, made with mount(2));
//   extra mount namespaces 0 / 300 (processes in namespaces of their own, each a copy of the small
//   table the benchmark's namespace has before the kubelet mounts: container-sized);
//   loop disks 3 / 64, each with a GPT partition; SMB mapping state 0 / 500 entries;
//   processes 0 / 2 000 holding 50 descriptors each; and a churn case (bind mounts made and removed
//   continuously by another process while the calls run).
// For PathExists, IsSymlink, GetVolumeIDFromTargetPath (a mounted target and a miss), GetVolumeStats,
// ListVolumesOnDisk, ListDiskIDs, GetDiskStats: p50/p99 of sequential calls and the p50's ratio to
// the base state; FormatVolume's time (a quick re-format of an unmounted partition, the in-use
// checks included); the in-use verdict over every namespace timed in this process with the
// daemon's own code (first call, then with the tables remembered); the server's RSS; the load average.
// Per RPC also the uevents the kernel sent during its calls (every one makes the reads kept until the
// next uevent read again: src/host/linux/block/uevent-keyed.ts).
//   node bench/node-scale.ts [--quick] [--calls N] [--formats N] [--disks N] [--cpu-prof DIR]
// --quick: smaller sizes (mounts 0/200/1 000/2 000, 30 namespaces, 3/16 disks, 50 SMB entries,
// 200 processes), a few minutes on a loaded 2-core machine. --disks: the loop disks of the "+ disks"
// state (default 64, 16 with --quick; `--quick --disks 64` measures the disk target in a quick run).
// Cleanup, even on failure: the mounts go with the private namespace; every process started here
// carries a marker in its environment and is killed by pid by the outer process; loop devices whose
// backing file is in this run's directory are detached; the directory is removed.
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import * as net from "node:net";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { connectGroup } from "../src/client/connect-group.ts";
import { buildProduction, residentMB, spawnServer, stop } from "./production-server.ts";
import { loopDeviceSkipReason } from "../test/helpers/loop-device.ts";
import { createNamespaceMounts } from "../src/host/linux/mounts/namespace-mounts.ts";
import { scanDeviceOpeners, type OpenerScanStats } from "../src/host/linux/block/device-openers.ts";
import { timedMedian } from "./timed-median.ts";

const MARK = "CSI_PROXY_NODE_SCALE_RUN";
const argv = process.argv.slice(2);
const arg = (name: string, fallback: number) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
};
const quick = argv.includes("--quick");
/** --cpu-prof DIR: each state's server writes a V8 CPU profile there when it stops (bench/profile-summary.ts reads them). */
const cpuProfDir = argv.includes("--cpu-prof") ? path.resolve(argv[argv.indexOf("--cpu-prof") + 1]) : null;

const skip = loopDeviceSkipReason() ?? (spawnSync("unshare", ["--version"]).status === 0 ? null : "unshare(1) missing");
if (skip) {
  console.log(`node-scale benchmark skipped: ${skip}`);
  process.exit(0);
}


/* ------------------------------------------------------------------------------------------ outer */

/** Pids of live processes whose environment carries this run's marker. */
function markedProcesses(runDir: string): number[] {
  const needle = Buffer.from(`${MARK}=${runDir}\0`);
  const out: number[] = [];
  for (const n of readdirSync("/proc")) {
    if (!/^\d+$/.test(n) || Number(n) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${n}/environ`).includes(needle)) out.push(Number(n));
    } catch {
      // exited, or not readable
    }
  }
  return out;
}

/** Loop devices whose backing file lies in `runDir` (only those this run created). */
function ourLoops(runDir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync("/sys/block").filter((n) => n.startsWith("loop"))) {
    try {
      const backing = readFileSync(`/sys/block/${name}/loop/backing_file`, "utf8").trim();
      if (backing.startsWith(runDir + "/")) out.push(`/dev/${name}`);
    } catch {
      // not attached
    }
  }
  return out;
}

async function outer() {
  buildProduction();
  const runDir = mkdtempSync(path.join(tmpdir(), "csi-proxy-node-scale-"));
  let code = 1;
  try {
    const child = spawn("unshare", ["--mount", "--propagation", "private", process.execPath, fileURLToPath(import.meta.url), ...argv], {
      stdio: "inherit",
      env: { ...process.env, [MARK]: runDir },
    });
    const stopChild = () => child.kill("SIGTERM");
    process.on("SIGINT", stopChild).on("SIGTERM", stopChild);
    code = await new Promise<number>((resolve) => child.once("exit", (c, s) => resolve(c ?? (s ? 1 : 0))));
  } finally {
    // Whatever the inner run left: its processes (namespace holders, descriptor holders, churn), then its loops.
    for (let round = 0; round < 20; round++) {
      const left = markedProcesses(runDir);
      if (!left.length) break;
      for (const pid of left) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {}
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const dev of ourLoops(runDir)) spawnSync("losetup", ["--detach", dev]);
    rmSync(runDir, { recursive: true, force: true });
    const still = ourLoops(runDir);
    if (still.length) console.log(`warning: loop devices still attached: ${still.join(" ")}`);
  }
  process.exit(code);
}

/* ------------------------------------------------------------------------------------------ inner */

interface Sizes {
  mounts: number[];
  namespaces: number;
  disks: [number, number];
  smb: number;
  processes: number;
  descriptors: number;
  calls: number;
  warm: number;
  formats: number;
}

async function inner(runDir: string) {
  const sizes: Sizes = quick
    ? { mounts: [200, 1000, 2000], namespaces: 30, disks: [3, arg("disks", 16)], smb: 50, processes: 200, descriptors: 50, calls: arg("calls", 60), warm: 30, formats: arg("formats", 3) }
    : { mounts: [1000, 5000, 20000], namespaces: 300, disks: [3, arg("disks", 64)], smb: 500, processes: 2000, descriptors: 50, calls: arg("calls", 200), warm: 100, formats: arg("formats", 5) };
  const koffi = (await import("koffi")).default;
  const libc = koffi.load("libc.so.6");
  const mount2 = libc.func("int mount(const char *source, const char *target, const char *fstype, unsigned long flags, const void *data)");
  const MS_BIND = 4096;

  const kubelet = path.join(runDir, "kubelet");
  const images = path.join(runDir, "images");
  const sockets = path.join(runDir, "sockets");
  const state = path.join(runDir, "state");
  const bindSource = path.join(runDir, "bind-source");
  for (const d of [kubelet, images, sockets, bindSource]) mkdirSync(d, { recursive: true });
  mkdirSync(state, { mode: 0o700 });
  const children: ChildProcess[] = [];
  const loops: string[] = [];
  let server: ReturnType<typeof spawnServer> | undefined;

  const sh = (file: string, args: string[], input?: string) => execFileSync(file, args, { input, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"] });

  /** A loop disk with a GPT and one Linux partition (its own random GUIDs), attached with partition scan. */
  const addDisk = () => {
    const file = path.join(images, `disk-${loops.length}.img`);
    writeFileSync(file, "");
    execFileSync("truncate", ["-s", "64M", file]);
    sh("sfdisk", ["--quiet", file], "label: gpt\ntype=0fc63daf-8483-4772-8e79-3d69d8477de4\n");
    const dev = sh("losetup", ["--find", "--show", "--partscan", file]).trim();
    loops.push(dev);
    // The scan at attach can miss the table (nothing re-reads it without udev): tell the kernel once more.
    if (!existsSync(`${dev}p1`)) sh("partx", ["--update", dev]);
    return { dev, file };
  };

  let mounted = 0;
  const mountsDir = path.join(kubelet, "pods");
  mkdirSync(mountsDir);
  /** Bind mounts of one directory under kubelet/pods/<n>/volumes/v (a pod volume's shape). */
  const growMounts = (to: number) => {
    for (; mounted < to; mounted++) {
      const dir = path.join(mountsDir, `p${mounted}`, "volumes", "v");
      mkdirSync(dir, { recursive: true });
      if (mount2(bindSource, dir, null, MS_BIND, null) !== 0) throw new Error(`mount ${dir} failed (fs.mount-max ${readFileSync("/proc/sys/fs/mount-max", "utf8").trim()})`);
    }
  };

  const spawnMarked = (file: string, args: string[]) => {
    const c = spawn(file, args, { stdio: "ignore" });
    children.push(c);
    return c;
  };
  let namespaces = 0;
  const addNamespaces = async (n: number) => {
    const own = readlinkSync("/proc/self/ns/mnt");
    const made = Array.from({ length: n }, () => spawnMarked("unshare", ["--mount", "--propagation", "private", "sleep", "1000000"]));
    for (const c of made) {
      for (let i = 0; i < 500; i++) {
        try {
          if (readlinkSync(`/proc/${c.pid}/ns/mnt`) !== own) break;
        } catch {}
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    namespaces += n;
  };
  let holders = 0;
  const addDescriptorHolders = async (n: number, perProcess: number) => {
    const target = path.join(runDir, "held-file");
    writeFileSync(target, "x");
    // Constant script: descriptors 3..(2+perProcess) on one file, then sleep; the file comes as $1.
    const redirects = Array.from({ length: perProcess }, (_, i) => `${i + 3}<"$1"`).join(" ");
    const script = `exec ${redirects}; exec sleep 1000000`;
    const made = Array.from({ length: n }, () => spawnMarked("bash", ["-c", script, "holder", target]));
    for (const c of made) {
      for (let i = 0; i < 500; i++) {
        try {
          if (readlinkSync(`/proc/${c.pid}/exe`).endsWith("/sleep")) break;
        } catch {}
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    holders += n;
  };
  let smbEntries = 0;
  const writeSmbState = (n: number) => {
    const roots: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      // Uses without a local link (as a call naming no path records them): the daemon keeps them at start.
      roots[`\\\\server${i}\\share`] = { users: [{ id: `call:00000000-0000-4000-8000-${String(i).padStart(12, "0")}`, remotePath: `\\\\server${i}\\share`, since: new Date(0).toISOString() }] };
    }
    writeFileSync(path.join(state, "smb-mappings.json"), JSON.stringify({ version: 1, roots }), { mode: 0o600 });
    smbEntries = n;
  };

  const waitUp = async () => {
    for (const endpoint of ["filesystem-v1", "disk-v1", "volume-v1"]) {
      const socket = path.join(sockets, `csi-proxy-${endpoint}.sock`);
      for (let t0 = Date.now(); ; await new Promise((r) => setTimeout(r, 20))) {
        const up = await new Promise<boolean>((resolve) => {
          const s = net.connect(socket).once("connect", () => (s.destroy(), resolve(true))).once("error", () => resolve(false));
        });
        if (up) break;
        if (Date.now() - t0 > 30_000 || server!.child.exitCode !== null) throw new Error(`server did not start: ${server!.log()}`);
      }
    }
  };

  interface Row {
    state: string;
    load: string;
    rpc: Record<string, { p50: number; p99: number; cpuUs: number; uevents: number }>;
    formatMs: number[];
    inUseColdMs: number;
    inUseWarmMs: number;
    inUseCpuMs: number;
    openerMs: number;
    openerCpuMs: number;
    openerVia: string;
    verdictMs: number;
    verdictCpuMs: number;
    rssMB: number;
    anonMB: number;
  }
  const rows: Row[] = [];
  /** CPU time (ns) of every thread of a process so far (/proc/<pid>/task/<tid>/schedstat, first field). */
  const cpuNs = (pid: number) => {
    let sum = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        sum += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      } catch {}
    }
    return sum;
  };
  const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];

  let churn: ChildProcess | undefined;
  try {
    // Setup: the base disks; the first disk's partition holds a mounted ext4 (the volume the stats
    // and target-path calls use), the second's an unmounted ext4 that FormatVolume re-formats.
    for (let i = 0; i < sizes.disks[0]; i++) addDisk();
    sh("mkfs.ext4", ["-q", `${loops[0]}p1`]);
    sh("mkfs.ext4", ["-q", `${loops[1]}p1`]);
    const volumeTarget = path.join(kubelet, "staged", "vol");
    mkdirSync(volumeTarget, { recursive: true });
    sh("mount", ["--types", "ext4", "--source", `${loops[0]}p1`, "--target", volumeTarget]);
    const missTarget = path.join(kubelet, "not-mounted");
    const existing = path.join(kubelet, "staged");
    mkdirSync(missTarget);
    const formatDev = readFileSync(`/sys/class/block/${path.basename(loops[1])}p1/dev`, "utf8").trim().split(":").map(Number);

    /** `budgetMs`: a time budget per RPC (warm-up and measured calls each stop at it; at least 3 measured calls), printed with the label. */
    const measure = async (label: string, budgetMs = Infinity) => {
      writeSmbState(smbEntries);
      server = spawnServer(["-socket-dir", sockets, "-kubelet-path", kubelet, "-state-dir", state], cpuProfDir ? ["--cpu-prof", "--cpu-prof-dir", cpuProfDir] : []);
      await waitUp();
      const fs = (await connectGroup("filesystem", { socketDir: sockets, versions: ["v1"] })) as Extract<Awaited<ReturnType<typeof connectGroup<"filesystem">>>, { version: "v1" }>;
      const dc = (await connectGroup("disk", { socketDir: sockets, versions: ["v1"] })) as Extract<Awaited<ReturnType<typeof connectGroup<"disk">>>, { version: "v1" }>;
      const vc = (await connectGroup("volume", { socketDir: sockets, versions: ["v1"] })) as Extract<Awaited<ReturnType<typeof connectGroup<"volume">>>, { version: "v1" }>;
      try {
        const { diskIDs } = await dc.client.listDiskIDs({});
        const number = (file: string) => Number(Object.entries(diskIDs).find(([, ids]) => ids.serialNumber === file)?.[0]);
        const disk0 = number(path.join(images, "disk-0.img"));
        const disk1 = number(path.join(images, "disk-1.img"));
        const [volumeId] = (await vc.client.listVolumesOnDisk({ diskNumber: disk0, partitionNumber: 0 })).volumeIds;
        const [formatId] = (await vc.client.listVolumesOnDisk({ diskNumber: disk1, partitionNumber: 0 })).volumeIds;
        const calls: [string, () => Promise<unknown>][] = [
          ["PathExists", () => fs.client.pathExists({ path: existing })],
          ["IsSymlink", () => fs.client.isSymlink({ path: volumeTarget })],
          ["GetVolumeIDFromTargetPath", () => vc.client.getVolumeIDFromTargetPath({ targetPath: volumeTarget })],
          ["GetVolumeIDFromTargetPath (miss)", () => vc.client.getVolumeIDFromTargetPath({ targetPath: missTarget }).catch(() => null)],
          ["GetVolumeStats", () => vc.client.getVolumeStats({ volumeId })],
          ["ListVolumesOnDisk", () => vc.client.listVolumesOnDisk({ diskNumber: disk0, partitionNumber: 0 })],
          ["ListDiskIDs", () => dc.client.listDiskIDs({})],
          ["GetDiskStats", () => dc.client.getDiskStats({ diskNumber: disk0 })],
        ];
        const rpc: Row["rpc"] = {};
        for (const [name, call] of calls) {
          const warm0 = performance.now();
          for (let i = 0; i < sizes.warm && performance.now() - warm0 < budgetMs / 4; i++) await call(); // warm: the compilers settle, caches fill
          const times: number[] = [];
          const cpu0 = cpuNs(server.child.pid!);
          const seq0 = ueventCount();
          const run0 = performance.now();
          for (let i = 0; i < sizes.calls && (i < 3 || performance.now() - run0 < budgetMs); i++) {
            const t0 = performance.now();
            await call();
            times.push(performance.now() - t0);
          }
          const cpuUs = (cpuNs(server.child.pid!) - cpu0) / times.length / 1000;
          rpc[name] = { p50: pct(times, 0.5), p99: pct(times, 0.99), cpuUs, uevents: ueventCount() - seq0 };
          if (times.length < sizes.calls) console.log(`  ${name}: ${times.length} calls within the budget (of ${sizes.calls})`);
        }
        const formatMs: number[] = [];
        for (let i = 0; i < sizes.formats; i++) {
          const t0 = performance.now();
          // Other processes on a shared machine (tests probing every loop device) can hold the node
          // read-only past the settle time: such a refusal is retried, and counted in the time.
          for (let attempt = 1; ; attempt++) {
            try {
              await vc.client.formatVolume({ volumeId: formatId });
              break;
            } catch (err) {
              if (attempt >= 5 || !/is open read-only by pid/.test(String(err))) throw err;
              console.log(`  (FormatVolume refused, retried: ${String(err).replace(/^.*refusing/, "refusing")})`);
              await new Promise((r) => setTimeout(r, 500));
            }
          }
          formatMs.push(performance.now() - t0);
        }
        const inUse = createNamespaceMounts();
        let t0 = performance.now();
        const found = await inUse.mountsOf(formatDev[0], formatDev[1]);
        const inUseColdMs = performance.now() - t0;
        if (found.length) throw new Error(`the FormatVolume target is mounted: ${JSON.stringify(found)}`);
        const warm: number[] = [];
        const warmCpu: number[] = [];
        for (let i = 0; i < 5; i++) {
          t0 = performance.now();
          const c0 = process.cpuUsage();
          await inUse.mountsOf(formatDev[0], formatDev[1]);
          const c = process.cpuUsage(c0);
          warm.push(performance.now() - t0);
          warmCpu.push((c.user + c.system) / 1000);
        }
        // The other half of FormatVolume's in-use verdict: processes holding the device nodes (partition and disk);
        // then the whole verdict (every namespace, every opener), each the median of 5 after a first call
        // (the first opens the kernel's task listing once per process).
        const diskDev = readFileSync(`/sys/class/block/${path.basename(loops[1])}/dev`, "utf8").trim().split(":").map(Number);
        const devs = [
          { major: formatDev[0], minor: formatDev[1] },
          { major: diskDev[0], minor: diskDev[1] },
        ];
        const scanStats: OpenerScanStats = { processes: 0, descriptors: 0, stats: 0, skipped: 0 };
        await scanDeviceOpeners(devs, {}, scanStats);
        const timed = (fn: () => Promise<unknown>) => timedMedian(fn);
        const opener = await timed(() => scanDeviceOpeners(devs));
        const verdict = await timed(async () => {
          await inUse.mountsOf(formatDev[0], formatDev[1]);
          await scanDeviceOpeners(devs);
        });
        const openerMs = opener.ms;
        const mem = residentMB(server.child.pid!);
        const row: Row = {
          state: label,
          load: loadavg().map((x) => x.toFixed(1)).join(" "),
          rpc,
          formatMs,
          inUseColdMs,
          inUseWarmMs: pct(warm, 0.5),
          inUseCpuMs: pct(warmCpu, 0.5),
          openerMs,
          openerCpuMs: opener.cpuMs,
          openerVia: scanStats.via ?? "procfs",
          verdictMs: verdict.ms,
          verdictCpuMs: verdict.cpuMs,
          rssMB: mem.rss,
          anonMB: mem.anon,
        };
        rows.push(row);
        printRow(row, rows[0]);
      } finally {
        fs.close();
        dc.close();
        vc.close();
        await stop(server.child);
        server = undefined;
      }
    };

    const tableMounts = () => readFileSync("/proc/self/mountinfo", "utf8").split("\n").length - 1;
    const describe = () => `${tableMounts()} mounts (${mounted} kubelet), ${namespaces} ns, ${loops.length} disks, ${smbEntries} smb, ${holders} procs`;
    console.log(`node-scale benchmark${quick ? " (quick)" : ""}: ${sizes.calls} sequential calls per RPC per state, node ${process.version}, ${readFileSync("/proc/cpuinfo", "utf8").split("\n").filter((l) => l.startsWith("processor")).length} CPUs`);
    console.log("p50 / p99 ms (p50 ratio to base); FormatVolume median ms; in-use verdict over every namespace: first / remembered ms; server RSS (anon) MB; load 1/5/15 min");

    await measure(`base: ${describe()}`);
    await addNamespaces(sizes.namespaces);
    await measure(`+ namespaces: ${describe()}`);
    for (const n of sizes.mounts.slice(0, 2)) {
      growMounts(n);
      await measure(`+ mounts: ${describe()}`);
    }
    for (let i = sizes.disks[0]; i < sizes.disks[1]; i++) addDisk();
    await measure(`+ disks: ${describe()}`);
    smbEntries = sizes.smb;
    await measure(`+ smb state: ${describe()}`);
    await addDescriptorHolders(sizes.processes, sizes.descriptors);
    await measure(`+ processes: ${describe()}`);
    growMounts(sizes.mounts[2]);
    await measure(`+ mounts: ${describe()}`);
    // Churn: another process binds and unbinds continuously while the calls run (constant script, paths as arguments).
    const churnDir = path.join(kubelet, "churn");
    mkdirSync(churnDir);
    churn = spawnMarked("bash", ["-c", 'while :; do mount --bind "$1" "$2"; umount "$2"; done', "churn", bindSource, churnDir]);
    // Bounded: each RPC gets 20 s (warm-up 5 s) at this size; the calls made are printed with the row.
    const churnBudgetMs = 20_000;
    await measure(`churn (mount/unmount loop, ≤ ${churnBudgetMs / 1000} s per RPC): ${describe()}`, churnBudgetMs);
    churn.kill("SIGKILL");
    printSummary(rows);
  } finally {
    if (server) await stop(server.child).catch(() => {});
    for (const c of children) c.kill("SIGKILL");
    spawnSync("umount", ["--lazy", path.join(kubelet, "staged", "vol")]);
    for (const dev of loops) spawnSync("losetup", ["--detach", dev]);
  }
}

/** The kernel's uevent count: the block reads kept until the next uevent (src/host/linux/block/uevent-keyed.ts) are read again after each one, from any process on the node. */
const ueventCount = () => Number(readFileSync("/sys/kernel/uevent_seqnum", "utf8"));

const f = (x: number) => (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0));

interface PrintedRow {
  state: string;
  load: string;
  rpc: Record<string, { p50: number; p99: number; cpuUs: number; uevents?: number }>;
  formatMs: number[];
  inUseColdMs: number;
  inUseWarmMs: number;
  inUseCpuMs: number;
  openerMs: number;
  openerCpuMs: number;
  openerVia: string;
  verdictMs: number;
  verdictCpuMs: number;
  rssMB: number;
  anonMB: number;
}

function printRow(row: PrintedRow, base: PrintedRow) {
  const med = [...row.formatMs].sort((a, b) => a - b)[Math.floor(row.formatMs.length / 2)];
  console.log(`\n${row.state}   [load ${row.load}]`);
  for (const [name, r] of Object.entries(row.rpc)) {
    console.log(`  ${name.padEnd(34)} ${f(r.p50).padStart(6)} / ${f(r.p99).padStart(6)} ms  ×${(r.p50 / base.rpc[name].p50).toFixed(2)}   server CPU ${r.cpuUs.toFixed(0).padStart(5)} µs/call  ×${(r.cpuUs / base.rpc[name].cpuUs).toFixed(2)}   uevents ${r.uevents ?? "-"}`);
  }
  console.log(`  FormatVolume ${f(med)} ms (runs ${row.formatMs.map(f).join(" ")}); namespaces' verdict ${f(row.inUseColdMs)} / ${f(row.inUseWarmMs)} ms (CPU ${f(row.inUseCpuMs)} ms); opener scan (${row.openerVia}) ${f(row.openerMs)} ms (CPU ${f(row.openerCpuMs)} ms); whole in-use verdict ${f(row.verdictMs)} ms (CPU ${f(row.verdictCpuMs)} ms); RSS ${row.rssMB.toFixed(1)} MB (anon ${row.anonMB.toFixed(1)})`);
}

function printSummary(rows: PrintedRow[]) {
  const names = Object.keys(rows[0].rpc);
  const short = (s: string) => s.replace("GetVolumeIDFromTargetPath", "GetVolumeID").replace(" (miss)", " miss");
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log("\nWall time, p50 / p99 ms (p50 ÷ base p50):");
  console.log("| state | " + names.map(short).join(" | ") + " | FormatVolume ms | namespaces' verdict ms: first / remembered (CPU) | opener scan ms (CPU) | whole in-use verdict ms (CPU) | RSS (anon) MB | load 1/5/15 |");
  console.log("|---".repeat(names.length + 7) + "|");
  for (const r of rows) {
    const cells = names.map((n) => `${f(r.rpc[n].p50)} / ${f(r.rpc[n].p99)} (×${(r.rpc[n].p50 / rows[0].rpc[n].p50).toFixed(2)})`);
    console.log(`| ${r.state} | ${cells.join(" | ")} | ${f(med(r.formatMs))} | ${f(r.inUseColdMs)} / ${f(r.inUseWarmMs)} (${f(r.inUseCpuMs)}) | ${f(r.openerMs)} (${f(r.openerCpuMs)}, ${r.openerVia}) | ${f(r.verdictMs)} (${f(r.verdictCpuMs)}) | ${r.rssMB.toFixed(0)} (${r.anonMB.toFixed(0)}) | ${r.load} |`);
  }
  console.log("\nServer CPU per call, all threads, µs (÷ base):");
  console.log("| state | " + names.map(short).join(" | ") + " |");
  console.log("|---".repeat(names.length + 1) + "|");
  for (const r of rows) {
    console.log(`| ${r.state} | ${names.map((n) => `${r.rpc[n].cpuUs.toFixed(0)} (×${(r.rpc[n].cpuUs / rows[0].rpc[n].cpuUs).toFixed(2)})`).join(" | ")} |`);
  }
}

// Last, so that every module-level constant above is initialised before it runs.
if (!process.env[MARK]) {
  await outer();
} else {
  await inner(process.env[MARK]);
}
