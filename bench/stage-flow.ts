// Benchmark: the driver stage flow on loop devices (needs root; prints the reason and exits 0 otherwise),
// the server being the production build (bench/production-server.ts).
//  1. through the daemon (v1 typed client) vs the raw tools doing the same work, alternating, in the
//     same invocation: PartitionDisk alone against one `sfdisk` writing the GPT label and the
//     partition (as an administrator would, kernel re-read included) plus `partx --update`, and the whole flow
//     ListDiskIDs → PartitionDisk → ListVolumesOnDisk → IsVolumeFormatted → FormatVolume → MountVolume
//     → GetVolumeStats → GetVolumeIDFromTargetPath → GetDiskNumberFromVolumeID → WriteVolumeCache → UnmountVolume
//     against sfdisk, blkid, mkfs.ext4, mount, statfs, blockdev, umount; prints medians and ratios;
//  2. N flows in parallel on N loop devices vs the same N flows one after another, through the daemon:
//     prints the throughput ratio and the error count.
//   node bench/stage-flow.ts [--flows N] [--rounds R] [--size-mib M]
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import * as net from "node:net";
import { connectGroup } from "../src/client/connect-group.ts";
import { spawnServer, stop } from "./production-server.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../test/helpers/loop-device.ts";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const flows = arg("flows", 4);
const rounds = arg("rounds", 5);
const sizeMiB = arg("size-mib", 128);

const skip = loopDeviceSkipReason();
if (skip) {
  console.log(`stage-flow benchmark skipped: ${skip}`);
  process.exit(0);
}
execFileSync("bash", [path.join(import.meta.dirname, "..", "scripts", "install-linux-tools.sh")], { stdio: "inherit" });

const work = mkdtempSync(path.join(tmpdir(), "csi-proxy-bench-flow-"));
const images = path.join(work, "images");
const targets = path.join(work, "direct-targets");
mkdirSync(images);
mkdirSync(targets);
const daemon = { socketDir: path.join(work, "sockets"), kubeletDir: path.join(work, "kubelet") };
mkdirSync(daemon.kubeletDir);
const server = spawnServer(["-socket-dir", daemon.socketDir, "-kubelet-path", daemon.kubeletDir]);
for (const endpoint of ["disk-v1", "volume-v1"]) {
  const socket = path.join(daemon.socketDir, `csi-proxy-${endpoint}.sock`);
  for (let t0 = Date.now(); ; await new Promise((r) => setTimeout(r, 20))) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(socket).once("connect", () => (s.destroy(), resolve(true))).once("error", () => resolve(false));
    });
    if (up) break;
    if (Date.now() - t0 > 20_000 || server.child.exitCode !== null) throw new Error(`server did not start: ${server.log()}`);
  }
}
const loops: LoopDevice[] = [];
const newLoop = () => {
  const l = createLoopDevice(images, sizeMiB * 1024 * 1024, "bench");
  loops.push(l);
  return l;
};

const diskC = await connectGroup("disk", { socketDir: daemon.socketDir, versions: ["v1"] });
const volC = await connectGroup("volume", { socketDir: daemon.socketDir, versions: ["v1"] });
if (diskC.version !== "v1" || volC.version !== "v1") throw new Error("unexpected versions");
const disk = diskC.client;
const volume = volC.client;
let seq = 0;

interface Timing { flowMs: number; partitionMs: number; steps?: Record<string, number> }

/** The stage flow through the daemon; returns milliseconds (whole flow, PartitionDisk alone, each RPC). */
async function serverFlow(loop: LoopDevice): Promise<Timing> {
  const steps: Record<string, number> = {};
  let last = performance.now();
  const t0 = last;
  const step = <T>(name: string, value: T): T => {
    const now = performance.now();
    steps[name] = now - last;
    last = now;
    return value;
  };
  const { diskIDs } = step("ListDiskIDs", await disk.listDiskIDs({}));
  const entry = Object.entries(diskIDs).find(([, ids]) => ids.serialNumber === loop.file);
  if (!entry) throw new Error(`disk ${loop.file} not listed`);
  const diskNumber = Number(entry[0]);
  last = performance.now();
  step("PartitionDisk", await disk.partitionDisk({ diskNumber }));
  const [volumeId] = step("ListVolumesOnDisk", await volume.listVolumesOnDisk({ diskNumber, partitionNumber: 0 })).volumeIds;
  if (step("IsVolumeFormatted", await volume.isVolumeFormatted({ volumeId })).formatted) throw new Error("fresh volume reported formatted");
  step("FormatVolume", await volume.formatVolume({ volumeId }));
  const target = path.join(daemon.kubeletDir, `stage-${seq++}`);
  mkdirSync(target);
  last = performance.now();
  step("MountVolume", await volume.mountVolume({ volumeId, targetPath: target }));
  step("GetVolumeStats", await volume.getVolumeStats({ volumeId }));
  if (step("GetVolumeIDFromTargetPath", await volume.getVolumeIDFromTargetPath({ targetPath: target })).volumeId !== volumeId) throw new Error("volume id mismatch");
  if (step("GetDiskNumberFromVolumeID", await volume.getDiskNumberFromVolumeID({ volumeId })).diskNumber !== diskNumber) throw new Error("disk number mismatch");
  step("WriteVolumeCache", await volume.writeVolumeCache({ volumeId }));
  step("UnmountVolume", await volume.unmountVolume({ volumeId, targetPath: target }));
  return { flowMs: performance.now() - t0, partitionMs: steps.PartitionDisk, steps };
}

/** The same host work with the tools run directly (what a hand-written script would do); milliseconds. */
function directFlow(loop: LoopDevice): Timing {
  const steps: Record<string, number> = {};
  const run = (name: string, file: string, args: string[], input?: string) => {
    const s0 = performance.now();
    try {
      return execFileSync(file, args, { input, stdio: ["pipe", "pipe", "pipe"] });
    } finally {
      steps[name] = (steps[name] ?? 0) + performance.now() - s0;
    }
  };
  const t0 = performance.now();
  // One sfdisk: GPT label and one Linux partition, then its re-read of the table; that re-read fails
  // whenever something (udev's blkid) holds the device open, so partx makes sure the kernel shows p1.
  run("sfdisk", "sfdisk", ["--quiet", loop.device], "label: gpt\ntype=0fc63daf-8483-4772-8e79-3d69d8477de4\n");
  run("partx", "partx", ["--update", loop.device]);
  const partitionMs = performance.now() - t0;
  const part = `${loop.device}p1`;
  try {
    run("blkid", "blkid", ["-p", "-o", "export", part]);
  } catch {
    // exit 2: nothing found, as expected
  }
  run("mkfs.ext4", "mkfs.ext4", ["-q", part]);
  const target = path.join(targets, `t-${seq++}`);
  mkdirSync(target);
  run("mount", "mount", ["--types", "ext4", "--source", part, "--target", target]);
  statfsSync(target);
  run("blockdev --flushbufs", "blockdev", ["--flushbufs", part]);
  run("umount", "umount", [target]);
  return { flowMs: performance.now() - t0, partitionMs, steps };
}

/** Median of each step over the runs, one line. */
function stepMedians(timings: Timing[]): string {
  const names = Object.keys(timings[0].steps ?? {});
  return names.map((n) => `${n} ${median(timings.map((t) => t.steps![n])).toFixed(0)}`).join(", ");
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

try {
  // 1. server vs direct, alternating so both see the same machine state.
  const server: Timing[] = [];
  const direct: Timing[] = [];
  await serverFlow(newLoop()); // warm-up (module loading, first connection)
  directFlow(newLoop());
  for (let i = 0; i < rounds; i++) {
    server.push(await serverFlow(newLoop()));
    direct.push(directFlow(newLoop()));
  }
  const row = (label: string, xs: number[]) => `${label}: median ${median(xs).toFixed(1)} ms   runs ${xs.map((x) => x.toFixed(0)).join(" ")}`;
  const partitionRatio = median(server.map((t) => t.partitionMs)) / median(direct.map((t) => t.partitionMs));
  const flowRatio = median(server.map((t) => t.flowMs)) / median(direct.map((t) => t.flowMs));
  console.log(`stage flow on ${sizeMiB} MiB loop devices, ${rounds} rounds, node ${process.version}`);
  console.log(row("  PartitionDisk through csi-proxy     ", server.map((t) => t.partitionMs)));
  console.log(row("  sfdisk (label + partition) + partx  ", direct.map((t) => t.partitionMs)));
  console.log(`  ratio csi-proxy/raw: ${partitionRatio.toFixed(2)}   target ≤ 1.1: ${partitionRatio <= 1.1 ? "met" : "NOT met"}`);
  console.log(row("  stage flow through csi-proxy (11 RPCs)", server.map((t) => t.flowMs)));
  console.log(row("  raw tools run directly               ", direct.map((t) => t.flowMs)));
  console.log(`  ratio csi-proxy/raw: ${flowRatio.toFixed(2)}   target ≤ 1.1: ${flowRatio <= 1.1 ? "met" : "NOT met"}`);
  console.log(`  per RPC, median ms: ${stepMedians(server)}`);
  console.log(`  per tool, median ms: ${stepMedians(direct)}`);

  // 2. N parallel flows on N devices vs N serial flows.
  let errors = 0;
  const serialLoops = Array.from({ length: flows }, newLoop);
  const tSerial0 = performance.now();
  for (const l of serialLoops) await serverFlow(l).catch(() => errors++);
  const serialMs = performance.now() - tSerial0;
  const parallelLoops = Array.from({ length: flows }, newLoop);
  const tPar0 = performance.now();
  const results = await Promise.allSettled(parallelLoops.map((l) => serverFlow(l)));
  const parallelMs = performance.now() - tPar0;
  const parallelErrors = results.filter((r) => r.status === "rejected");
  errors += parallelErrors.length;
  for (const r of parallelErrors) console.log(`  error: ${(r as PromiseRejectedResult).reason}`);
  console.log(`${flows} flows through csi-proxy: serial ${serialMs.toFixed(0)} ms (${((flows / serialMs) * 1000).toFixed(2)} flows/s), parallel ${parallelMs.toFixed(0)} ms (${((flows / parallelMs) * 1000).toFixed(2)} flows/s)`);
  console.log(`  throughput ratio parallel/serial: ${(serialMs / parallelMs).toFixed(2)}   errors: ${errors}`);
  if (errors) process.exitCode = 1;
} finally {
  diskC.close();
  volC.close();
  for (const l of loops.reverse()) l.cleanup();
  await stop(server.child);
  rmSync(work, { recursive: true, force: true });
}
