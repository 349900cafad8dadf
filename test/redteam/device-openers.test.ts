// Every opener of a block device node counts as a use: a process holding a partition or its disk
// open (read-write without O_EXCL, not mounted: a backup agent, dd, a VM's raw disk) or only mapped
// stops FormatVolume, ResizeVolume, PartitionDisk and SetDiskState(offline), named by pid and command,
// with nothing written; a user of a file on the mounted filesystem does not stop an online resize; a
// read-only opener that lets go within the settle time (udev's blkid) does not count. Loop devices of
// this suite's own images only (block-lab.ts).
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { Lab, MiB, hasTool, hashRegion, labSkipReason, run, writeTable, type Loop } from "./block-lab.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";
import { Code } from "../../src/errors.ts";
import { createDeviceClaims, OPENER_SETTLE_MS } from "../../src/host/linux/block/device-claims.ts";

const skip = labSkipReason();
if (skip) process.stderr.write(`device opener suite skipped: ${skip}\n`);

const HOLDER = path.join(import.meta.dirname, "../helpers/device-holder.ts");
const holders = new Set<ChildProcess>();
after(() => {
  for (const h of holders) h.kill("SIGKILL");
});

/** Starts a holder of `file` (device-holder.ts) and resolves with it once it holds. */
function hold(mode: "read" | "read-write" | "mapped", file: string, holdMs?: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [HOLDER, mode, file, ...(holdMs ? [String(holdMs)] : [])], { stdio: ["ignore", "pipe", "inherit"] });
  holders.add(child);
  child.on("exit", () => holders.delete(child));
  return new Promise((resolve, reject) => {
    child.stdout!.once("data", (b: Buffer) => (String(b).startsWith("ready") ? resolve(child) : reject(new Error(String(b)))));
    child.once("exit", (code) => reject(new Error(`holder exited (${code}) before holding ${file}`)));
  });
}

async function release(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await gone;
}

const partitionSectors = (loop: Loop, n: number) => readFileSync(`/sys/block/${loop.name}/${loop.name}p${n}/size`, "utf8").trim();
const devOf = (devPath: string) => {
  const [major, minor] = readFileSync(`/sys/class/block/${path.basename(devPath)}/dev`, "utf8").trim().split(":").map(Number);
  return { major, minor };
};

/** Runs `fn` with a fresh lab, always cleaned up. */
async function withLab(fn: (lab: Lab) => Promise<void>, fsType: "ext4" | "xfs" = "ext4"): Promise<void> {
  const lab = await Lab.create(fsType);
  try {
    await fn(lab);
  } finally {
    for (const h of holders) await release(h);
    lab.cleanup();
  }
}

describe("every opener of a device node counts as a use", { skip: skip ?? false }, () => {
  it("a read-write opener of a partition (no O_EXCL, not mounted): FormatVolume, ResizeVolume and SetDiskState(offline) refused naming it, nothing written", () =>
    withLab(async (lab) => {
      const img = lab.image(200, "rw");
      writeTable(img, "gpt", ["start=1MiB,size=64MiB"]);
      const disk = lab.attach(img, { partscan: true });
      const p1 = `${disk.device}p1`;
      const [volumeId] = await lab.volumesOf(disk.diskNumber);
      const holder = await hold("read-write", p1);
      const before = hashRegion(img, 0, 200 * MiB);
      const sectors = partitionSectors(disk, 1);
      const named = new RegExp(`${p1} is open for writing by pid ${holder.pid} \\(node\\)`);

      await rejectsWithCode(lab.services.volume.formatVolume({ volumeId: lab.guardVolume(volumeId) }), Code.FailedPrecondition, named);
      await rejectsWithCode(lab.services.volume.resizeVolume({ volumeId: lab.guardVolume(volumeId), sizeBytes: 0n }), Code.FailedPrecondition, named);
      // The partition's opener blocks its disk.
      await rejectsWithCode(lab.services.disk.setDiskState({ diskNumber: lab.guardDisk(disk.diskNumber), isOnline: false }), Code.FailedPrecondition, named);
      assert.equal((await lab.services.disk.getDiskState({ diskNumber: disk.diskNumber })).isOnline, true);
      assert.equal(partitionSectors(disk, 1), sectors, "partition not resized");
      assert.equal(hashRegion(img, 0, 200 * MiB), before, "image unchanged");

      // Once it let go, the same calls go through.
      await release(holder);
      await lab.services.volume.formatVolume({ volumeId: lab.guardVolume(volumeId) });
      assert.match(run("blkid", ["-p", "-o", "value", "-s", "TYPE", p1]), /ext4/);
    }));

  it("an opener that appears after a first FormatVolume stops the second (the listing is kept, its walk is fresh per call)", () =>
    withLab(async (lab) => {
      const img = lab.image(100, "later");
      writeTable(img, "gpt", ["start=1MiB,size=64MiB"]);
      const disk = lab.attach(img, { partscan: true });
      const p1 = `${disk.device}p1`;
      const [volumeId] = await lab.volumesOf(disk.diskNumber);
      await lab.services.volume.formatVolume({ volumeId: lab.guardVolume(volumeId) });
      const holder = await hold("read-write", p1);
      const before = hashRegion(img, 0, 100 * MiB);
      await rejectsWithCode(lab.services.volume.formatVolume({ volumeId: lab.guardVolume(volumeId) }), Code.FailedPrecondition, new RegExp(`${p1} is open for writing by pid ${holder.pid} \\(node\\)`));
      assert.equal(hashRegion(img, 0, 100 * MiB), before, "image unchanged");
    }));

  it("a read-write opener of a raw disk: PartitionDisk refused, no partition table written", () =>
    withLab(async (lab) => {
      const img = lab.image(64, "raw");
      const disk = lab.attach(img, { partscan: true });
      const holder = await hold("read-write", disk.device);
      await rejectsWithCode(
        lab.services.disk.partitionDisk({ diskNumber: lab.guardDisk(disk.diskNumber) }),
        Code.FailedPrecondition,
        new RegExp(`${disk.device} is open for writing by pid ${holder.pid} \\(node\\)`),
      );
      assert.equal(hashRegion(img, 0, 64 * MiB), hashRegion(lab.image(64, "zero"), 0, 64 * MiB), "nothing written");
      await release(holder);
      await lab.services.disk.partitionDisk({ diskNumber: lab.guardDisk(disk.diskNumber) });
    }));

  it("a holder that only maps the partition (descriptor closed): FormatVolume refused", () =>
    withLab(async (lab) => {
      const img = lab.image(100, "mapped");
      writeTable(img, "gpt", ["start=1MiB,size=64MiB"]);
      const disk = lab.attach(img, { partscan: true });
      const p1 = `${disk.device}p1`;
      const [volumeId] = await lab.volumesOf(disk.diskNumber);
      const holder = await hold("mapped", p1);
      const before = hashRegion(img, 0, 100 * MiB);
      await rejectsWithCode(lab.services.volume.formatVolume({ volumeId: lab.guardVolume(volumeId) }), Code.FailedPrecondition, new RegExp(`${p1} is mapped into memory by pid ${holder.pid}`));
      assert.equal(hashRegion(img, 0, 100 * MiB), before, "image unchanged");
    }));

  it("a process writing a file on the mounted volume does not stop an online resize (xfs)", { skip: !hasTool("mkfs.xfs") && "mkfs.xfs missing" }, () =>
    withLab(async (lab) => {
      const img = lab.image(800, "online");
      writeTable(img, "gpt", ["start=1MiB,size=320MiB"]);
      const disk = lab.attach(img, { partscan: true });
      const [volumeId] = await lab.volumesOf(disk.diskNumber);
      await lab.services.volume.formatVolume({ volumeId: lab.guardVolume(volumeId) });
      const target = lab.target("kubelet", "online");
      await lab.services.volume.mountVolume({ volumeId: lab.guardVolume(volumeId), targetPath: target });
      lab.adoptMount(target);
      await hold("read-write", (run("touch", [path.join(target, "busy.log")]), path.join(target, "busy.log")));
      const before = Number(partitionSectors(disk, 1));
      await lab.services.volume.resizeVolume({ volumeId: lab.guardVolume(volumeId), sizeBytes: 0n });
      assert.ok(Number(partitionSectors(disk, 1)) > before + 400 * 2048, `partition grown: ${before} → ${partitionSectors(disk, 1)} sectors`);
    }, "xfs"));

  it("a read-only opener that lets go within the settle time does not count; one that stays does, after it", () =>
    withLab(async (lab) => {
      const img = lab.image(100, "transient");
      writeTable(img, "gpt", ["start=1MiB,size=64MiB"]);
      const disk = lab.attach(img, { partscan: true });
      const p1 = `${disk.device}p1`;
      const tools = createDeviceClaims();
      const dev = devOf(p1);

      // The fact: a reader gone after 300 ms is waited for and not reported; a writer is reported at once.
      await hold("read", p1, 300);
      assert.deepEqual(await tools.deviceOpeners([dev]), []);
      const writer = await hold("read-write", p1);
      const found = await tools.deviceOpeners([dev]);
      assert.deepEqual(found.map((o) => [o.pid, o.command, o.access]), [[writer.pid, "node", "read-write"]]);
      await release(writer);
      const stays = await hold("read", p1);
      const t = performance.now();
      assert.deepEqual((await tools.deviceOpeners([dev])).map((o) => [o.pid, o.access]), [[stays.pid, "read"]]);
      assert.ok(performance.now() - t >= OPENER_SETTLE_MS - 50, "a reader is given the settle time");
      await release(stays);

      // The call: FormatVolume with a reader that lets go after 300 ms goes through.
      const [volumeId] = await lab.volumesOf(disk.diskNumber);
      await hold("read", p1, 300);
      await lab.services.volume.formatVolume({ volumeId: lab.guardVolume(volumeId) });
      assert.match(run("blkid", ["-p", "-o", "value", "-s", "TYPE", p1]), /ext4/);
    }));
});
