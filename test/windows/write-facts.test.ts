/**
 * Windows writes decide nothing on their own: the disk and volume hosts read the facts right before
 * a write and hand them to the service's check (policy/block-policy.ts), and the worker script gets
 * those facts as data (host/windows/expected-facts.ts) and refuses only when they changed. Checked
 * here: the script's only FailedPrecondition is `Unchanged`, every write op runs it on the same
 * facts the TypeScript side sends, and those carry every fact the service's rule is given; the hosts
 * obey whatever the check says; a FormatVolume is 2 worker calls (the call's one read, the Format).
 * The worker's own refusal of a changed fact runs on the real engine
 * (test/windows-engine/storage-ops.test.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, CsiProxyError } from "../../src/errors.ts";
import { WORKER_SCRIPT } from "../../src/host/windows/powershell/scripts/worker-script.ts";
import { expectedDiskFacts, expectedVolumeFacts } from "../../src/host/windows/powershell/expected-facts.ts";
import { parseDisk, parsePartition, parseVolume } from "../../src/host/windows/powershell/cim-output.ts";
import { WindowsVolumeHost } from "../../src/host/windows/volume.ts";
import type { VolumeWin32 } from "../../src/host/windows/powershell/volume-cim.ts";
import { WindowsDiskHost } from "../../src/host/windows/disk.ts";
import type { DiskIoctls } from "../../src/host/windows/powershell/disk-cim.ts";
import { createVolumeService } from "../../src/groups/volume/volume-service.ts";
import { createDiskService } from "../../src/groups/disk/disk-service.ts";
import type { VolumeFacts, WriteCheck } from "../../src/groups/volume/host-api.ts";
import type { DiskFacts, DiskWriteCheck } from "../../src/groups/disk/host-api.ts";
import { GPT_BASIC_DATA } from "../../src/host/windows/powershell/cim-types.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";
import { runInCall } from "../../src/util/call-scope.ts";
import { fakePoolsClosedAfter, type FakePool } from "./fake-pool.ts";
import { volumeFactsAnswer } from "./volume-facts-answer.ts";

const pool = fakePoolsClosedAfter();
const ops = (p: FakePool) => p.recorded().requests.map((r) => r.op);

const DATA = { diskNumber: 1, partitionNumber: 2, gptType: GPT_BASIC_DATA, mbrType: null, size: "10720641024", offset: "16794624", driveLetter: "\u0000", accessPaths: [] as string[] };
const VOL = { uniqueId: "\\\\?\\Volume{3b9b4f61-1d2e-4c1b-9a3f-2d5c0b1f4c2a}\\", fileSystemType: 14, fileSystem: "NTFS", size: "10720636928", sizeRemaining: "10654351360" };
const FACTS = (volume: typeof VOL = VOL, partition: typeof DATA = DATA, isOffline = false) => volumeFactsAnswer(volume, partition, isOffline);
const DISK = { number: 1, location: "", path: "\\\\?\\scsi#disk&ven_google#1", serialNumber: null, size: "10737418240", isOffline: false, partitionStyle: 0 };

// ---- the worker script ------------------------------------------------------------------------

/** The body of one `function Name(...) { ... }` or one op `'name' = { ... }` of the script, braces matched. */
function block(startMarker: string): string {
  const start = WORKER_SCRIPT.indexOf(startMarker);
  assert.ok(start >= 0, startMarker);
  let depth = 0;
  for (let i = WORKER_SCRIPT.indexOf("{", start); i < WORKER_SCRIPT.length; i++) {
    if (WORKER_SCRIPT[i] === "{") depth++;
    else if (WORKER_SCRIPT[i] === "}" && --depth === 0) return WORKER_SCRIPT.slice(start, i + 1);
  }
  assert.fail(`unbalanced ${startMarker}`);
}
/** The keys of the hashtable a facts function of the script returns. */
const keysOf = (fn: string) => [...new Set([...block(`function ${fn}(`).matchAll(/(\w+) = /g)].map((m) => m[1]))].sort();

test("the worker refuses only facts that changed: its one FailedPrecondition is Unchanged's, run by every write op before its CIM call", () => {
  const unchanged = block("function Unchanged(");
  const refusals = [...WORKER_SCRIPT.matchAll(/Fail 'FailedPrecondition'/g)].map((m) => m.index);
  assert.ok(refusals.length > 0);
  for (const at of refusals) assert.ok(at! > WORKER_SCRIPT.indexOf(unchanged) && at! < WORKER_SCRIPT.indexOf(unchanged) + unchanged.length, `a refusal outside Unchanged at ${at}`);
  const writes: [string, string, string][] = [
    ["volume.format", "VolumeFacts", "'Format'"],
    ["volume.resize", "VolumeFacts", "'Resize'"],
    ["disk.initialize", "DiskFacts", "'Initialize'"],
    ["disk.createPartition", "DiskFacts", "'CreatePartition'"],
    ["disk.setOnline", "DiskFacts", "Call $d $m"],
  ];
  for (const [op, facts, call] of writes) {
    const body = block(`'${op}' = {`);
    const check = body.search(new RegExp(`Unchanged \\(.*\\) \\$a\\.expect \\(${facts} `));
    assert.ok(check > 0, `${op} runs Unchanged on $a.expect and ${facts}`);
    assert.ok(body.indexOf(call) > check, `${op}: Unchanged before ${call}`);
  }
});

test("the facts the worker compares are the ones the hosts send, spelled the same", () => {
  const partition = parsePartition("t", { ...DATA, driveLetter: "E", accessPaths: ["E:\\", "C:\\mnt\\x\\"] });
  const volume = expectedVolumeFacts(partition, parseVolume("t", VOL), true);
  assert.deepEqual(Object.keys(volume).sort(), keysOf("VolumeFacts"));
  assert.deepEqual(volume, { fileSystemType: "14", accessPaths: "E:\\, C:\\mnt\\x\\", diskNumber: "1", partitionNumber: "2", offset: "16794624", size: "10720641024", isOffline: "True" });
  const disk = expectedDiskFacts(parseDisk("t", { ...DISK, isOffline: true }));
  assert.deepEqual(Object.keys(disk).sort(), keysOf("DiskFacts"));
  assert.deepEqual(disk, { path: DISK.path, size: "10737418240", isOffline: "True", partitionStyle: "0" }); // [string][bool] is True/False in PowerShell
});

// ---- the hosts --------------------------------------------------------------------------------

test("volume host: the check gets the facts read right before the write; what it lets through is written with those facts as expect", async () => {
  const p = pool({ "volume.facts": FACTS({ ...VOL, fileSystemType: 15, fileSystem: "ReFS" }, { ...DATA, driveLetter: "E", accessPaths: ["E:\\"] }) });
  const host = new WindowsVolumeHost(p.pool, {} as VolumeWin32);
  const seen: VolumeFacts[] = [];
  const passAll: WriteCheck = async (facts) => void seen.push(facts);
  await host.formatVolume(VOL.uniqueId, passAll); // a drive letter and ReFS: the service's rule refuses both, the host nothing
  assert.equal(seen.length, 1);
  assert.deepEqual(seen[0].location.accessPaths, ["E:\\"]);
  assert.equal(seen[0].content?.fileSystem, "ReFS");
  const format = p.recorded().requests.find((r) => r.op === "volume.format");
  assert.deepEqual(format?.args, { volumeId: VOL.uniqueId, expect: { fileSystemType: "15", accessPaths: "E:\\", diskNumber: "1", partitionNumber: "2", offset: DATA.offset, size: DATA.size, isOffline: "False" } });

  const no: WriteCheck = async () => {
    throw new CsiProxyError(Code.FailedPrecondition, "the service says no");
  };
  const before = ops(p).length;
  await rejectsWithCode(host.formatVolume(VOL.uniqueId, no), Code.FailedPrecondition, /^the service says no$/);
  await rejectsWithCode(host.resizePartition(VOL.uniqueId, 20n << 30n, no), Code.FailedPrecondition, /^the service says no$/);
  assert.ok(!ops(p).slice(before).some((op) => op === "volume.format" || op === "volume.resize"), "nothing written");
});

test("FormatVolume is 2 worker calls: the call's one read of the volume, its partition and its disk, then the Format carrying those facts", async () => {
  const p = pool({ "volume.facts": FACTS({ ...VOL, fileSystemType: 0, fileSystem: "" }) });
  const svc = createVolumeService({ host: new WindowsVolumeHost(p.pool, {} as VolumeWin32) });
  await svc.formatVolume({ volumeId: VOL.uniqueId });
  assert.deepEqual(ops(p), ["volume.facts", "volume.format"]);
  assert.deepEqual(p.recorded().requests[1].args.expect, { fileSystemType: "0", accessPaths: "", diskNumber: "1", partitionNumber: "2", offset: DATA.offset, size: DATA.size, isOffline: "False" });
  // each call reads again: a second FormatVolume does not reuse the first one's read
  await svc.formatVolume({ volumeId: VOL.uniqueId });
  assert.deepEqual(ops(p), ["volume.facts", "volume.format", "volume.facts", "volume.format"]);
});

test("FormatVolume keeps every refusal on the call's one read: a drive letter, an access path, foreign data, an offline disk; nothing written", async () => {
  const cases: [ReturnType<typeof FACTS>, RegExp][] = [
    [FACTS(VOL, { ...DATA, driveLetter: "E", accessPaths: ["E:\\"] }), /refusing to format volume .*: it is in use at E:\\/],
    [FACTS(VOL, { ...DATA, accessPaths: ["C:\\mnt\\x\\"] }), /refusing to format volume .*: it is in use at C:\\mnt\\x\\/],
    [FACTS({ ...VOL, fileSystemType: 15, fileSystem: "ReFS" }), /already holds ReFS/],
    [FACTS(VOL, DATA, true), /offline/],
  ];
  for (const [read, message] of cases) {
    const p = pool({ "volume.facts": read });
    const svc = createVolumeService({ host: new WindowsVolumeHost(p.pool, {} as VolumeWin32) });
    await rejectsWithCode(svc.formatVolume({ volumeId: VOL.uniqueId }), Code.FailedPrecondition, message);
    assert.deepEqual(ops(p), ["volume.facts"], String(message));
  }
});

test("disk host: the check gets the disk and its partitions read right before the write; the worker gets the disk's facts as expect", async () => {
  const p = pool({ "disk.get": { result: { ...DISK, isOffline: true } }, "disk.partitions": { result: [] } });
  const host = new WindowsDiskHost(p.pool, {} as DiskIoctls);
  const seen: DiskFacts[] = [];
  const passAll: DiskWriteCheck = async (facts) => void seen.push(facts);
  await host.initializeDisk(1, passAll); // offline: the service's rule refuses it, the host nothing
  assert.equal(seen[0].disk.online, false);
  assert.deepEqual(p.recorded().requests.find((r) => r.op === "disk.initialize")?.args, { diskNumber: 1, partitionStyle: 2, expect: { path: DISK.path, size: DISK.size, isOffline: "True", partitionStyle: "0" } });
});

test("PartitionDisk: another disk behind the number at the write is refused before the write's worker call, nothing written", async () => {
  const p = pool({ "disk.get": [{ result: DISK }, { result: { ...DISK, path: "\\\\?\\scsi#disk&ven_other#2" } }], "disk.partitions": { result: [] } });
  const svc = createDiskService({ host: new WindowsDiskHost(p.pool, {} as DiskIoctls) });
  await rejectsWithCode(svc.partitionDisk({ diskNumber: 1 }), Code.FailedPrecondition, /the disk changed since it was looked up \(.*ven_google#1 size 10737418240 → .*ven_other#2 size 10737418240\)/);
  assert.deepEqual(ops(p), ["disk.get", "disk.get"]);
});

test("a call aborted between a write's checks and its worker call: the write is never sent; the signal's code, saying nothing was changed", async () => {
  const p = pool({ "volume.facts": FACTS(), "disk.get": { result: DISK }, "disk.partitions": { result: [] } });
  const volumes = new WindowsVolumeHost(p.pool, {} as VolumeWin32);
  const disks = new WindowsDiskHost(p.pool, {} as DiskIoctls);
  const writes = ["volume.format", "volume.resize", "disk.initialize", "disk.createPartition", "disk.setOnline"];
  const cases: [string, (c: AbortController) => Promise<unknown>, RegExp][] = [
    ["format", (c) => volumes.formatVolume(VOL.uniqueId, async () => c.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded"))), /^deadline exceeded: stopped before formatting volume .*; nothing was changed$/],
    ["resize", (c) => volumes.resizePartition(VOL.uniqueId, 20n << 30n, async () => c.abort()), /^cancelled: stopped before resizing the partition of volume .*; nothing was changed$/],
    ["initialize", (c) => disks.initializeDisk(1, async () => c.abort()), /^cancelled: stopped before initialising disk 1 with GPT; nothing was changed$/],
    ["partition", (c) => disks.createDataPartition(1, "gpt", async () => c.abort()), /^cancelled: stopped before adding a partition to disk 1; nothing was changed$/],
    ["offline", (c) => disks.setDiskOnline(1, false, async () => c.abort()), /^cancelled: stopped before setting disk 1 offline; nothing was changed$/],
  ];
  for (const [name, write, message] of cases) {
    const c = new AbortController();
    const err = await runInCall({ signal: c.signal }, () => write(c)).then(() => assert.fail(`${name} succeeded`), (e: unknown) => e as CsiProxyError);
    assert.match(err.message, message, name);
    assert.equal(err.code, message.source.startsWith("^deadline") ? Code.DeadlineExceeded : Code.Canceled, name);
  }
  assert.deepEqual(ops(p).filter((op) => writes.includes(op)), [], "no write sent");
});
