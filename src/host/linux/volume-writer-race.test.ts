// FormatVolume is never OK while another process wrote to the volume during it (block/writer-watch.ts),
// on a loop device's partition, in three shapes: a plain writer, a writer in another mount namespace
// (unshare -m) and a writer through a loop device stacked on the partition. The writer loops
// open(O_RDWR) → write 4 KiB → fdatasync → close with 0–3 ms gaps; it starts writing only once the
// partition is claimed exclusively (the call's own claim check or mkfs: after the call's openers
// check), so every round races mkfs itself. Each write's time is reported, so a round counts only
// when a write fell inside the call. PartitionDisk: a writer of the whole disk during the GPT write.
import { after, describe, it, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createLinuxBlockTools } from "./block/linux-block-tools.ts";
import { LinuxVolumeHost } from "./volume.ts";
import { LinuxDiskHost } from "./disk.ts";
import { createDiskService } from "../../groups/disk/disk-service.ts";
import { createVolumeService } from "../../groups/volume/volume-service.ts";
import { createPathPolicy } from "../../policy/path-policy.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import { Code } from "../../errors.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../../../test/helpers/loop-device.ts";

const MiB = 1024 * 1024;
const ROUNDS = 10;
const skip = loopDeviceSkipReason();
if (skip) process.stderr.write(`writer race suite skipped: ${skip}\n`);

/**
 * The writer (argv: the node to probe for the exclusive claim, the node to write or "stack": a loop
 * device it sets up on the probed node once the claim is seen, printed as "loop <node>"). Prints the
 * wall time of each write (ms, fractional) on its own line; runs until killed.
 */
const WRITER = `
const fs = require("node:fs");
const { execFileSync } = require("node:child_process");
let [probe, target] = process.argv.slice(1);
process.stdout.write("ready\\n");
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
for (;;) {
  try { fs.closeSync(fs.openSync(probe, fs.constants.O_RDONLY | fs.constants.O_EXCL)); } catch (e) { if (e.code === "EBUSY") break; }
  pause(0.2);
}
if (target === "stack") {
  target = execFileSync("losetup", ["--find", "--show", probe], { encoding: "utf8" }).trim();
  process.stdout.write("loop " + target + "\\n");
}
const block = Buffer.alloc(4096, 0x5a);
for (;;) {
  const fd = fs.openSync(target, "r+");
  fs.writeSync(fd, block, 0, block.length, 2 * 1024 * 1024);
  fs.fdatasyncSync(fd);
  fs.closeSync(fd);
  process.stdout.write(String(performance.timeOrigin + performance.now()) + "\\n");
  pause(Math.random() * 3);
}
`;

interface Writer {
  child: ChildProcess;
  /** The pid the writes come from (unshare -m execs the writer in place). */
  pid: number;
  times: number[];
  /** Settled once the writer runs (it then waits for the claim). */
  ready: Promise<void>;
  stop(): Promise<void>;
}

const writers = new Set<Writer>();
/** Detaches every loop device backed by `node` (what a writer stacked on it, even if it was killed before saying so). */
function detachStackedOn(node: string): void {
  const list = execFileSync("losetup", ["--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE"], { encoding: "utf8" });
  for (const line of list.split("\n")) {
    const [name, back] = line.split(" ");
    if (name && back === node) execFileSync("losetup", ["--detach", name]);
  }
}

function startWriter(probe: string, target: string, inNewMountNs: boolean): Writer {
  const argv = [process.execPath, "-e", WRITER, probe, target];
  const child = inNewMountNs ? spawn("unshare", ["-m", ...argv], { stdio: ["ignore", "pipe", "inherit"] }) : spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "inherit"] });
  const times: number[] = [];
  let onReady!: () => void;
  const ready = new Promise<void>((r) => (onReady = r));
  let rest = "";
  child.stdout!.on("data", (b: Buffer) => {
    const lines = (rest + b.toString()).split("\n");
    rest = lines.pop() ?? "";
    for (const l of lines) {
      if (l === "ready") onReady();
      else if (!l.startsWith("loop ")) times.push(Number(l));
    }
  });
  const closed = new Promise<void>((r) => child.once("close", () => (onReady(), r()))); // a writer that died early: no round
  const w: Writer = {
    child,
    pid: child.pid!,
    times,
    ready,
    stop: async () => {
      child.kill("SIGKILL");
      await closed;
      writers.delete(w);
    },
  };
  writers.add(w);
  return w;
}

describe("FormatVolume (and PartitionDisk) is not OK when another process wrote to the device during it", { skip: skip ?? false }, () => {
  const dir = skip ? "" : mkdtempSync(path.join(tmpdir(), "csi-proxy-writer-race-"));
  const loops: LoopDevice[] = [];
  after(async () => {
    for (const w of [...writers]) await w.stop();
    for (const l of loops) detachStackedOn(`${l.device}p1`);
    for (const l of loops) l.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const setup = async () => {
    const loop = createLoopDevice(dir, 64 * MiB, `w${loops.length}`);
    loops.push(loop);
    execFileSync("sfdisk", ["--quiet", loop.device], { input: "label: gpt\n,48MiB\n" });
    execFileSync("partx", ["--update", loop.device]);
    const warnings: string[] = [];
    const log = { info: () => {}, warning: (m: string) => warnings.push(m) };
    const host = new LinuxVolumeHost(createLinuxBlockTools({ stateFile: path.join(dir, `marks-${loops.length}.json`), log }), { defaultFileSystem: "ext4" });
    const volume = createVolumeService({ host, policy: createPathPolicy({ platform: "linux", allowedDirs: [dir], resolve: async (p) => p }), locks: createKeyedMutex() });
    const [volumeId] = (await volume.listVolumesOnDisk({ diskNumber: loop.diskNumber, partitionNumber: 0 })).volumeIds;
    assert.ok(volumeId, "the partition is a volume");
    return { loop, part: `${loop.device}p1`, volume, volumeId, warnings };
  };

  /** ROUNDS FormatVolume calls, each with a fresh writer; every round whose writer wrote during the call must not be OK. */
  async function rounds(t: TestContext, shape: "plain" | "mount namespace" | "stacked loop", inNewMountNs: boolean) {
    const { part, volume, volumeId, warnings } = await setup();
    const target = shape === "stacked loop" ? "stack" : part;
    let raced = 0;
    let toolRefused = 0;
    for (let i = 0; i < ROUNDS; i++) {
      const w = startWriter(part, target, inNewMountNs);
      await w.ready;
      const start = performance.timeOrigin + performance.now();
      const answer = await volume.formatVolume({ volumeId }).then(
        () => null,
        (e: { code?: Code; message?: string }) => e,
      );
      const end = performance.timeOrigin + performance.now();
      await w.stop();
      detachStackedOn(part);
      const during = w.times.filter((t) => t >= start && t <= end).length;
      if (during === 0) continue;
      raced++;
      assert.ok(answer, `${shape}, round ${i}: FormatVolume answered OK though pid ${w.pid} wrote ${during} times during it`);
      if (shape === "stacked loop" && answer.code === Code.FailedPrecondition && /mkfs\.ext4 /.test(answer.message ?? "")) {
        toolRefused++; // mkfs itself saw the loop device set up on the partition and refused: not OK either
        continue;
      }
      assert.equal(answer.code, Code.Aborted, `${shape}, round ${i}: ${answer.message}`);
      const writer = shape === "stacked loop" ? /loop device \/dev\/loop\d+ was set up on it/ : new RegExp(`pid ${w.pid} \\(`);
      assert.match(answer.message ?? "", writer, "the answer names the writer");
      assert.match(answer.message ?? "", /the new filesystem may be damaged/);
    }
    t.diagnostic(`${shape}: the writer wrote during ${raced} of ${ROUNDS} FormatVolume calls, answered Aborted (${toolRefused} refused by mkfs itself)`);
    assert.ok(raced >= ROUNDS / 2, `${shape}: the writer wrote during FormatVolume in only ${raced} of ${ROUNDS} rounds`);
    assert.deepEqual(warnings, [], "fanotify was used");
  }

  it("without a writer: OK, the tool's own writes are not another writer's", async () => {
    const { volume, volumeId, warnings } = await setup();
    await volume.formatVolume({ volumeId });
    await volume.formatVolume({ volumeId }); // over an existing filesystem too
    assert.deepEqual(warnings, [], "fanotify was used");
  });

  it("a plain writer", async (t) => {
    await rounds(t, "plain", false);
  });

  it("a writer in another mount namespace (unshare -m)", async (t) => {
    await rounds(t, "mount namespace", true);
  });

  it("a writer through a loop device stacked on the partition", async (t) => {
    await rounds(t, "stacked loop", false);
  });

  it("PartitionDisk: a writer of the disk during the GPT write makes it Aborted, naming the writer and the table", async () => {
    let raced = 0;
    for (let i = 0; i < 3; i++) {
      const loop = createLoopDevice(dir, 64 * MiB, `p${loops.length}`);
      loops.push(loop);
      const warnings: string[] = [];
      const tools = createLinuxBlockTools({ stateFile: path.join(dir, `pmarks-${loops.length}.json`), log: { info: () => {}, warning: (m) => warnings.push(m) } });
      const disk = createDiskService({ host: new LinuxDiskHost(tools), policy: createPathPolicy({ platform: "linux", allowedDirs: [dir], resolve: async (p) => p }), locks: createKeyedMutex() });
      const w = startWriter(loop.device, loop.device, false);
      await w.ready;
      const start = performance.timeOrigin + performance.now();
      const answer = await disk.partitionDisk({ diskNumber: loop.diskNumber }).then(
        () => null,
        (e: { code?: Code; message?: string }) => e,
      );
      const end = performance.timeOrigin + performance.now();
      await w.stop();
      loop.cleanup();
      assert.deepEqual(warnings, [], "fanotify was used");
      if (!w.times.some((t) => t >= start && t <= end)) continue;
      raced++;
      assert.ok(answer, `round ${i}: PartitionDisk answered OK though pid ${w.pid} wrote during it`);
      assert.equal(answer.code, Code.Aborted, `round ${i}: ${answer.message}`);
      assert.match(answer.message ?? "", new RegExp(`pid ${w.pid} \\(`));
      assert.match(answer.message ?? "", /the partition table may be damaged/);
    }
    assert.ok(raced >= 2, `the writer wrote during PartitionDisk in only ${raced} of 3 rounds`);
  });
});
