/**
 * PartitionDisk cut short, then retried to OK: a GPT write whose end nobody saw (its csi-proxy
 * process died mid-write, leaving only the backup GPT header at the end of the disk and its intent
 * record, state/intent-records.ts) is redone by the retry, which says so; a disk showing anything
 * else is refused as before, naming the record. Real loop devices, the real Linux tools and disk host,
 * the disk service as the daemon composes it.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import * as path from "node:path";
import { createLinuxBlockTools } from "../../src/host/linux/block/linux-block-tools.ts";
import { LinuxDiskHost } from "../../src/host/linux/disk.ts";
import { createDiskService } from "../../src/groups/disk/disk-service.ts";
import { createKeyedMutex } from "../../src/util/keyed-mutex.ts";
import { IntentRecords } from "../../src/state/intent-records.ts";
import { Code, CsiProxyError } from "../../src/errors.ts";
import { repoRoot } from "../helpers/daemon-process.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../helpers/loop-device.ts";

const skip = loopDeviceSkipReason() ?? false;
const MiB = 1024 * 1024;
const SIZE = 64 * MiB;
/** The backup GPT area of a 64 MiB disk: 32 sectors of entries and the header, the last 33 sectors. */
const BACKUP_SECTORS = 33;

let dir = "";
const loops: LoopDevice[] = [];
before(() => {
  if (skip) return;
  mkdirSync("/var/tmp", { recursive: true });
  dir = mkdtempSync("/var/tmp/csi-unfinished-table-");
});
after(() => {
  for (const l of loops) l.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const run = (file: string, args: string[], stdin?: string) => execFileSync(file, args, { encoding: "utf8", input: stdin });

/** A disk left as a cut-short sfdisk leaves it (backup GPT header only) with the dead writer's intent record. */
async function halfWritten(label: string, intentDir: string): Promise<LoopDevice> {
  const l = createLoopDevice(dir, SIZE, label);
  loops.push(l);
  // The backup area of a real GPT written by sfdisk to a scratch image of the same size.
  const scratch = path.join(dir, `${label}-scratch.img`);
  run("truncate", ["-s", String(SIZE), scratch]);
  run("sfdisk", ["--quiet", scratch], "label: gpt\n");
  const backup = path.join(dir, `${label}-backup.img`);
  const first = SIZE / 512 - BACKUP_SECTORS;
  run("dd", [`if=${scratch}`, `of=${backup}`, "bs=512", `skip=${first}`, `count=${BACKUP_SECTORS}`, "status=none"]);
  const writer = spawn(process.execPath, [path.join(repoRoot, "test/helpers/half-table-writer.ts"), intentDir, l.device, backup, String(first)], { stdio: "inherit" });
  const signal = await new Promise((r) => writer.once("exit", (_c, s) => r(s)));
  assert.equal(signal, "SIGKILL", "the writer died before it saw the tool's end");
  assert.equal(readdirSync(intentDir).filter((f) => f.endsWith(".json")).length, 1, "its intent record is left");
  return l;
}

function disk(intentDir: string, log: string[]) {
  const tools = createLinuxBlockTools({ stateFile: path.join(dir, `marks-${Math.random().toString(36).slice(2)}.json`) });
  return createDiskService({ host: new LinuxDiskHost(tools, { intents: new IntentRecords(intentDir), log: { warning: (m) => void log.push(m) } }), locks: createKeyedMutex() });
}

describe("PartitionDisk cut short during its table write, then retried", { skip }, () => {
  test("the retry redoes the write whose end nobody saw (saying so) and answers OK; the record is gone", async () => {
    const intentDir = path.join(dir, "intents-redo");
    const l = await halfWritten("redo", intentDir);
    assert.match(run("wipefs", ["--no-act", l.device]), /gpt/, "blkid sees the lone backup header");
    const log: string[] = [];
    await disk(intentDir, log).partitionDisk({ diskNumber: l.diskNumber });
    const table = JSON.parse(run("sfdisk", ["--json", l.device])).partitiontable;
    assert.equal(table.label, "gpt");
    assert.equal(table.partitions.length, 1, "the data partition was added");
    assert.equal(log.length, 1);
    assert.match(log[0], /redoing a GPT table write whose end nobody saw \(intent record .*write an empty GPT partition table on \/dev\/loop\d+ \[loop:.*\].*pid \d+/);
    assert.deepEqual(readdirSync(intentDir).filter((f) => f.endsWith(".json")), [], "the record is cleared once the redone write's end was seen");
  });

  test("anything but what that write leaves is refused as before, naming the record", async () => {
    const intentDir = path.join(dir, "intents-refuse");
    const l = await halfWritten("refuse", intentDir);
    // Someone else's data beside our half-written table: never overwritten.
    run("mkfs.ext4", ["-q", "-F", l.device, "16M"]);
    const err = await disk(intentDir, []).partitionDisk({ diskNumber: l.diskNumber }).catch((e: unknown) => e);
    assert.ok(err instanceof CsiProxyError, String(err));
    assert.equal(err.code, Code.FailedPrecondition);
    assert.match(err.message, /no partition table but holds .*initialising it would destroy that data; intent record .*write an empty GPT partition table/);
  });
});
