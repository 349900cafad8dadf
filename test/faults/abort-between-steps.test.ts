/**
 * A call aborted between two steps of a destructive host operation starts no later step and answers
 * what was and was not changed, with the signal's code; the disk's lock is free afterwards.
 *
 * Real loop devices (images under /var/tmp), the real Linux block tools and hosts, the disk and
 * volume services as the daemon composes them (one lock set). One tool step is wrapped with a hold
 * point: once the step has done its work, the test aborts the call and lets the step return, so the
 * abort always falls between that step and the next — never a matter of timing. Every tool method
 * called after the abort is recorded: none may be (SetDiskState: only the mark's undo).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as path from "node:path";
import { createLinuxBlockTools, type LinuxBlockTools } from "../../src/host/linux/block/linux-block-tools.ts";
import { LinuxVolumeHost } from "../../src/host/linux/volume.ts";
import { LinuxDiskHost } from "../../src/host/linux/disk.ts";
import { createVolumeService } from "../../src/groups/volume/volume-service.ts";
import { createDiskService } from "../../src/groups/disk/disk-service.ts";
import { createKeyedMutex } from "../../src/util/keyed-mutex.ts";
import { Code, CsiProxyError } from "../../src/errors.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../helpers/loop-device.ts";
import { holdPoint } from "../helpers/hold-point.ts";

const skip = loopDeviceSkipReason() ?? false;
const MiB = 1024 * 1024;

/** What the DeadlineExceeded of the RPC layer aborts a call with (grpc-connection.ts). */
const DEADLINE = () => new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded");

let dir = "";
const loops: LoopDevice[] = [];

before(() => {
  if (skip) return;
  mkdirSync("/var/tmp", { recursive: true });
  dir = mkdtempSync("/var/tmp/csi-abort-steps-");
});

after(() => {
  for (const l of loops) l.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function newLoop(bytes: number, label: string): LoopDevice {
  const l = createLoopDevice(dir, bytes, label);
  loops.push(l);
  return l;
}

/** Runs a test tool on a device this test created; its output. */
const run = (file: string, args: string[], stdin?: string) => execFileSync(file, args, { encoding: "utf8", input: stdin });

/** blkid -p's verdict on `dev`: "" when it finds no signature (exit 2). */
function blkidType(dev: string): string {
  const r = spawnSync("blkid", ["-p", "-o", "value", "-s", "TYPE", dev], { encoding: "utf8" });
  return r.status === 2 ? "" : r.stdout.trim();
}

/**
 * The real block tools, with `holdAfter`'s first call held (after it did its work) while the test
 * aborts the call, and every method called after the abort recorded in `afterAbort`.
 */
function tracedTools(holdAfter: keyof LinuxBlockTools, abort: () => void) {
  const tools = createLinuxBlockTools({ stateFile: path.join(dir, `marks-${Math.random().toString(36).slice(2)}.json`) });
  const hold = holdPoint();
  let aborted = false;
  const afterAbort: string[] = [];
  let held = false;
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(tools) as [string, (...a: unknown[]) => unknown][]) {
    wrapped[name] = (...args: unknown[]) => {
      if (aborted) afterAbort.push(name);
      const out = fn.apply(tools, args);
      if (name !== holdAfter || held) return out;
      held = true;
      return (async () => {
        const value = await out;
        await hold.arrive();
        return value;
      })();
    };
  }
  void hold.entered.then(() => {
    aborted = true;
    abort();
    hold.pass();
  });
  return { tools: wrapped as unknown as LinuxBlockTools, afterAbort, entered: hold.entered, stateFile: "" };
}

function services(tools: LinuxBlockTools) {
  const locks = createKeyedMutex();
  return {
    volume: createVolumeService({ host: new LinuxVolumeHost(tools, { defaultFileSystem: "ext4" }), locks }),
    disk: createDiskService({ host: new LinuxDiskHost(tools), locks }),
  };
}

async function rejection(p: Promise<unknown>): Promise<CsiProxyError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof CsiProxyError, `a coded error, got ${String(e)}`);
    return e;
  }
  assert.fail("the call succeeded");
}

/** A loop disk with one GPT partition of `partMiB` MiB starting at 1 MiB. */
function partitionedLoop(diskMiB: number, partMiB: number, label: string): LoopDevice {
  const l = newLoop(diskMiB * MiB, label);
  run("sfdisk", ["--quiet", "--wipe", "always", l.device], `label: gpt\nstart=2048, size=${partMiB * 2048}, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4\n`);
  run("partx", ["--update", l.device]);
  return l;
}

/** The block count in an ext4 superblock (dumpe2fs -h). */
const ext4Blocks = (dev: string) => Number(/^Block count:\s+(\d+)/m.exec(run("dumpe2fs", ["-h", dev]))?.[1]);

const sysfsSectors = (l: LoopDevice, n: number) => Number(readFileSync(`/sys/block/${l.name}/${l.name}p${n}/size`, "utf8").trim());

/** ResizeVolume of partition 1 of `l` to `target` bytes, its call aborted (deadline) once the partition step has run. */
async function resizeAbortedAfterPartition(l: LoopDevice, target: bigint) {
  const blocks = () => ext4Blocks(`${l.device}p1`);
  const fsBefore = blocks();
  const controller = new AbortController();
  const t = tracedTools("resizePartition", () => controller.abort(DEADLINE()));
  const { volume } = services(t.tools);
  const [id] = (await volume.listVolumesOnDisk({ diskNumber: l.diskNumber, partitionNumber: 1 })).volumeIds;
  const err = await rejection(volume.resizeVolume({ volumeId: id, sizeBytes: target }, { signal: controller.signal }));
  return { blocks, fsBefore, t, volume, id, err };
}

describe("a call aborted between two steps of a host operation", { skip, timeout: 600_000 }, () => {
  test("FormatVolume: aborted after the exclusive-claim check, mkfs is never started; DeadlineExceeded saying nothing was changed", async () => {
    const l = partitionedLoop(64, 32, "fmt");
    const controller = new AbortController();
    const t = tracedTools("claimExclusive", () => controller.abort(DEADLINE()));
    const { volume } = services(t.tools);
    const [id] = (await volume.listVolumesOnDisk({ diskNumber: l.diskNumber, partitionNumber: 1 })).volumeIds;
    const err = await rejection(volume.formatVolume({ volumeId: id }, { signal: controller.signal }));
    assert.equal(err.code, Code.DeadlineExceeded, err.message);
    assert.match(err.message, new RegExp(`deadline exceeded: stopped before creating the ext4 filesystem on ${l.device}p1; nothing was changed$`));
    assert.deepEqual(t.afterAbort, [], "no host step after the abort");
    assert.equal(blkidType(`${l.device}p1`), "", "no signature written");
    // The disk's lock and the device's claim are free: the same call without a deadline formats.
    await volume.formatVolume({ volumeId: id });
    assert.equal(blkidType(`${l.device}p1`), "ext4");
  });

  test("PartitionDisk: cancelled after the GPT table was written, no partition is added; Canceled saying what was written", async () => {
    const l = newLoop(64 * MiB, "part");
    const controller = new AbortController();
    const t = tracedTools("createGptTable", () => controller.abort());
    const { disk } = services(t.tools);
    const err = await rejection(disk.partitionDisk({ diskNumber: l.diskNumber }, { signal: controller.signal }));
    assert.equal(err.code, Code.Canceled, err.message);
    assert.equal(
      err.message,
      `cancelled: stopped before adding the data partition to ${l.device}; ${l.device} was given an empty GPT partition table; no partition was created (a retry of PartitionDisk adds it)`,
    );
    assert.deepEqual(t.afterAbort, [], "no host step after the abort");
    const table = JSON.parse(run("sfdisk", ["--json", l.device])) as { partitiontable: { label: string; partitions?: unknown[] } };
    assert.equal(table.partitiontable.label, "gpt");
    assert.deepEqual(table.partitiontable.partitions ?? [], [], "no partition in the table");
    // Lock free; the retry adds the partition, as the answer said.
    await disk.partitionDisk({ diskNumber: l.diskNumber });
    assert.equal((JSON.parse(run("sfdisk", ["--json", l.device])) as { partitiontable: { partitions: unknown[] } }).partitiontable.partitions.length, 1);
  });

  test("ResizeVolume: aborted after the partition grew, the filesystem is not grown; DeadlineExceeded saying the partition was grown", async () => {
    const l = partitionedLoop(256, 32, "grow");
    run("mkfs.ext4", ["-q", `${l.device}p1`]);
    const target = 160n * BigInt(MiB); // more than the 100 MiB below which a resize changes nothing (upstream)
    const { blocks, fsBefore, t, volume, id, err } = await resizeAbortedAfterPartition(l, target);
    assert.equal(err.code, Code.DeadlineExceeded, err.message);
    assert.equal(
      err.message,
      `deadline exceeded: stopped before growing the filesystem of volume ${id}; partition 1 of disk ${l.diskNumber} was grown to ${target} bytes; the filesystem was not grown (a retry of ResizeVolume grows it)`,
    );
    assert.deepEqual(t.afterAbort, [], "no host step after the abort");
    assert.equal(sysfsSectors(l, 1), 160 * 2048, "the partition grew (the kernel knows)");
    assert.equal(blocks(), fsBefore, "the filesystem did not");
    // Lock free; the retry (same size) grows the filesystem to its partition.
    await volume.resizeVolume({ volumeId: id, sizeBytes: target });
    assert.ok(blocks() > fsBefore, `filesystem grown: ${blocks()} > ${fsBefore} blocks`);
  });

  test("ResizeVolume: aborted after finishing an interrupted resize, the resize itself is not started; the answer says what the kernel was told", async () => {
    const l = partitionedLoop(256, 32, "sync");
    run("mkfs.ext4", ["-q", `${l.device}p1`]);
    // An earlier resize interrupted between sfdisk and partx: the table says 160 MiB, the kernel 32 MiB.
    run("sfdisk", ["--quiet", "--no-reread", "--no-tell-kernel", "-N", "1", l.device], `, ${160 * 2048}\n`);
    assert.equal(sysfsSectors(l, 1), 32 * 2048);
    const target = 200n * BigInt(MiB);
    const { blocks, fsBefore, t, volume, id, err } = await resizeAbortedAfterPartition(l, target);
    assert.equal(err.code, Code.DeadlineExceeded, err.message);
    assert.equal(
      err.message,
      `deadline exceeded: stopped before resizing volume ${id}; finishing an earlier interrupted resize, the kernel was given the size partition 1 of disk ${l.diskNumber} already had in the partition table; nothing more was changed`,
    );
    assert.deepEqual(t.afterAbort, [], "no host step after the abort");
    assert.equal(sysfsSectors(l, 1), 160 * 2048, "the kernel shows the table's size");
    assert.equal(blocks(), fsBefore, "the filesystem was not grown");
    // The retry: 40 MiB more is below the 100 MiB threshold, so the partition stays; the filesystem grows to it.
    await volume.resizeVolume({ volumeId: id, sizeBytes: target });
    assert.equal(sysfsSectors(l, 1), 160 * 2048);
    assert.ok(blocks() > fsBefore, `filesystem grown: ${blocks()} > ${fsBefore} blocks`);
  });

  test("SetDiskState(offline): aborted after the offline mark was recorded, the device is not set read-only and the mark is taken back", async () => {
    const l = partitionedLoop(64, 32, "offl");
    const controller = new AbortController();
    const t = tracedTools("writeOfflineMarks", () => controller.abort(DEADLINE()));
    const { disk } = services(t.tools);
    const err = await rejection(disk.setDiskState({ diskNumber: l.diskNumber, isOnline: false }, { signal: controller.signal }));
    assert.equal(err.code, Code.DeadlineExceeded, err.message);
    assert.match(err.message, new RegExp(`deadline exceeded: stopped before setting ${l.device} read-only; ${l.device} stays online: its offline mark was recorded and removed again$`));
    assert.deepEqual(t.afterAbort, ["writeOfflineMarks"], "only the mark's undo after the abort");
    assert.equal(run("blockdev", ["--getro", l.device]).trim(), "0", "not read-only");
    assert.equal((await disk.getDiskState({ diskNumber: l.diskNumber })).isOnline, true);
    // Lock free; the retry takes it offline.
    await disk.setDiskState({ diskNumber: l.diskNumber, isOnline: false });
    assert.equal(run("blockdev", ["--getro", l.device]).trim(), "1");
    await disk.setDiskState({ diskNumber: l.diskNumber, isOnline: true });
  });
});
