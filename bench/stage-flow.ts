// Benchmark: the driver stage flow on loop devices (needs root; prints the reason and exits 0 otherwise).
//  1. through the daemon (v1 typed client) vs the same tools run directly, in the same invocation:
//     ListDiskIDs → PartitionDisk → ListVolumesOnDisk → IsVolumeFormatted → FormatVolume → MountVolume
//     → GetVolumeStats → GetVolumeIDFromTargetPath → GetDiskNumberFromVolumeID → WriteVolumeCache → UnmountVolume,
//     against sfdisk, partx, blkid, mkfs.ext4, mount, statfs, blockdev, umount; prints mean times and the ratio;
//  2. N flows in parallel on N loop devices vs the same N flows one after another, through the daemon:
//     prints the throughput ratio and the error count.
//   node bench/stage-flow.ts [--flows N] [--rounds R] [--size-mib M]
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { connectGroup } from "../src/client/connect-group.ts";
import { startDaemonProcess } from "../test/helpers/daemon-process.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../test/helpers/loop-device.ts";

const arg = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1] || 0) || fallback;
const flows = arg("flows", 4);
const rounds = arg("rounds", 3);
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
const daemon = await startDaemonProcess();
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

/** The stage flow through the daemon; returns milliseconds. */
async function serverFlow(loop: LoopDevice): Promise<number> {
  const t0 = performance.now();
  const { diskIDs } = await disk.listDiskIDs({});
  const entry = Object.entries(diskIDs).find(([, ids]) => ids.serialNumber === loop.file);
  if (!entry) throw new Error(`disk ${loop.file} not listed`);
  const diskNumber = Number(entry[0]);
  await disk.partitionDisk({ diskNumber });
  const [volumeId] = (await volume.listVolumesOnDisk({ diskNumber, partitionNumber: 0 })).volumeIds;
  if ((await volume.isVolumeFormatted({ volumeId })).formatted) throw new Error("fresh volume reported formatted");
  await volume.formatVolume({ volumeId });
  const target = path.join(daemon.kubeletDir, `stage-${seq++}`);
  mkdirSync(target);
  await volume.mountVolume({ volumeId, targetPath: target });
  await volume.getVolumeStats({ volumeId });
  if ((await volume.getVolumeIDFromTargetPath({ targetPath: target })).volumeId !== volumeId) throw new Error("volume id mismatch");
  if ((await volume.getDiskNumberFromVolumeID({ volumeId })).diskNumber !== diskNumber) throw new Error("disk number mismatch");
  await volume.writeVolumeCache({ volumeId });
  await volume.unmountVolume({ volumeId, targetPath: target });
  return performance.now() - t0;
}

/** The same host work with the tools run directly (what a hand-written script would do); milliseconds. */
function directFlow(loop: LoopDevice): number {
  const run = (file: string, args: string[], input?: string) => execFileSync(file, args, { input, stdio: ["pipe", "pipe", "pipe"] });
  const t0 = performance.now();
  run("sfdisk", ["--quiet", "--wipe", "never", loop.device], "label: gpt\n");
  run("sfdisk", ["--quiet", "--wipe", "never", "--wipe-partitions", "never", "--append", loop.device], "type=0fc63daf-8483-4772-8e79-3d69d8477de4\n");
  run("partx", ["--update", loop.device]);
  const part = `${loop.device}p1`;
  try {
    run("blkid", ["-p", "-o", "export", part]);
  } catch {
    // exit 2: nothing found, as expected
  }
  run("mkfs.ext4", ["-q", part]);
  const target = path.join(targets, `t-${seq++}`);
  mkdirSync(target);
  run("mount", ["--types", "ext4", "--source", part, "--target", target]);
  statfsSync(target);
  run("blockdev", ["--flushbufs", part]);
  run("umount", [target]);
  return performance.now() - t0;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

try {
  // 1. server vs direct, alternating so both see the same machine state.
  const server: number[] = [];
  const direct: number[] = [];
  await serverFlow(newLoop()); // warm-up (module loading, first connection)
  for (let i = 0; i < rounds; i++) {
    server.push(await serverFlow(newLoop()));
    direct.push(directFlow(newLoop()));
  }
  console.log(`stage flow on ${sizeMiB} MiB loop devices, ${rounds} rounds, node ${process.version}`);
  console.log(`  through csi-proxy (11 RPCs): mean ${mean(server).toFixed(1)} ms   runs ${server.map((x) => x.toFixed(0)).join(" ")}`);
  console.log(`  tools run directly         : mean ${mean(direct).toFixed(1)} ms   runs ${direct.map((x) => x.toFixed(0)).join(" ")}`);
  console.log(`  ratio csi-proxy/direct: ${(mean(server) / mean(direct)).toFixed(2)}`);

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
  await daemon.stop();
  rmSync(work, { recursive: true, force: true });
}
