/**
 * Injection proofs (CVE-2023-3893 class): for every Windows disk/volume operation, hostile strings
 * in every string field reach the PowerShell worker only as JSON data. The fake worker records what
 * it receives; each test asserts that
 *   - every worker ran the constant script, byte for byte (decoded from -EncodedCommand),
 *   - the request line is pure ASCII JSON whose `op` is the operation's constant op name,
 *   - the hostile value round-trips exactly (JSON.parse of the recorded line),
 * and, for the Win32 calls (koffi), that the strings reach the API verbatim.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { WindowsDiskHost } from "../../src/host/windows/disk.ts";
import { WindowsDiskCim, type DiskIoctls } from "../../src/host/windows/powershell/disk-cim.ts";
import { WindowsVolumeHost } from "../../src/host/windows/volume.ts";
import { WindowsVolumeCim, type VolumeWin32 } from "../../src/host/windows/powershell/volume-cim.ts";
import { createVolumeService } from "../../src/groups/volume/volume-service.ts";
import { createDiskService } from "../../src/groups/disk/disk-service.ts";
import { WORKER_SCRIPT } from "../../src/host/windows/powershell/scripts/worker-script.ts";
import { IO_REPARSE_TAG_MOUNT_POINT } from "../../src/win32/win32-constants.ts";
import { Code, CsiProxyError } from "../../src/errors.ts";
import { createFakePool } from "./fake-pool.ts";
import { volumeFactsAnswer } from "./volume-facts-answer.ts";
import { HOSTILE, requestRecorder, testHostileStringsReachWorkerAsData, type WorkerOperation } from "./injection-harness.ts";

const volumeRecord = { uniqueId: "\\\\?\\Volume{1}\\", fileSystemType: 14, fileSystem: "NTFS", size: "1000", sizeRemaining: "400" };
const partitionRecord = { diskNumber: 1, partitionNumber: 2, gptType: "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}", mbrType: null, size: "1000", offset: "0", driveLetter: "" };
const fixtures = {
  "disk.list": { result: [] },
  "disk.get": { result: { number: 1, location: "", path: "p", serialNumber: null, size: "1", isOffline: false, partitionStyle: 2 } },
  "disk.partitions": { result: [] },
  "volume.listOnDisk": { result: [] },
  "volume.get": { result: volumeRecord },
  "volume.facts": volumeFactsAnswer(volumeRecord, partitionRecord),
  "volume.supportedSize": { result: { sizeMin: "1", sizeMax: "1000000000000" } },
};

const fake = createFakePool(fixtures, { size: 2 });
after(() => fake.close());

const noIoctls: DiskIoctls = {
  openForQuery: () => 1,
  closeHandle: () => {},
  storageDeviceNumber: () => 0,
  storageDeviceIdDescriptor: () => Buffer.alloc(12),
};

/** Runs `fn` and returns the requests it added. */
const sent = requestRecorder(fake, WORKER_SCRIPT, "the constant script");

const disk = new WindowsDiskCim(fake.pool, noIoctls);
const volume = new WindowsVolumeCim(fake.pool, {} as VolumeWin32);

/** The facts a write was decided on travel as data too (expected-facts.ts): every field carries the hostile string. */
const volumeFacts = (s: string) => ({ fileSystemType: s, accessPaths: s, diskNumber: s, partitionNumber: s, offset: s, size: s, isOffline: s });
const diskFacts = (s: string) => ({ path: s, size: s, isOffline: s, partitionStyle: s });

/** Every worker operation of the Windows hosts: how to call it with `s` in each string field, and the args expected on the wire. */
const operations: WorkerOperation[] = [
  { name: "disk.listDisks", op: "disk.list", call: () => disk.listDisks(), args: () => ({}) },
  { name: "disk.getDisk", op: "disk.get", call: () => disk.getDisk(7), args: () => ({ diskNumber: 7 }) },
  { name: "disk.initializeDisk", op: "disk.initialize", call: (s) => disk.initializeDisk(7, 2, diskFacts(s)), args: (s) => ({ diskNumber: 7, partitionStyle: 2, expect: diskFacts(s) }) },
  { name: "disk.listPartitions", op: "disk.partitions", call: () => disk.listPartitions(7), args: () => ({ diskNumber: 7 }) },
  { name: "disk.createPartition", op: "disk.createPartition", call: (s) => disk.createPartition(7, s, diskFacts(s)), args: (s) => ({ diskNumber: 7, gptType: s, expect: diskFacts(s) }) },
  { name: "disk.refreshDisk", op: "disk.refresh", call: () => disk.refreshDisk(7), args: () => ({ diskNumber: 7 }) },
  { name: "disk.onlinePartition", op: "partition.online", call: () => disk.onlinePartition(7, 3), args: () => ({ diskNumber: 7, partitionNumber: 3 }) },
  { name: "disk.rescan", op: "disk.rescan", call: () => disk.rescan(), args: () => ({}) },
  { name: "disk.setDiskOnline", op: "disk.setOnline", call: (s) => disk.setDiskOnline(7, false, diskFacts(s)), args: (s) => ({ diskNumber: 7, online: false, expect: diskFacts(s) }) },
  { name: "volume.listVolumesOnDisk", op: "volume.listOnDisk", call: () => volume.listVolumesOnDisk(7, 0), args: () => ({ diskNumber: 7, partitionNumber: 0 }) },
  { name: "volume.getVolume", op: "volume.get", call: (s) => volume.getVolume(s), args: (s) => ({ volumeId: s }) },
  { name: "volume.getVolumeFacts", op: "volume.facts", call: (s) => volume.getVolumeFacts(s), args: (s) => ({ volumeId: s }) },
  { name: "volume.formatVolume", op: "volume.format", call: (s) => volume.formatVolume(s, volumeFacts(s)), args: (s) => ({ volumeId: s, expect: volumeFacts(s) }) },
  { name: "volume.flushVolume", op: "volume.flush", call: (s) => volume.flushVolume(s), args: (s) => ({ volumeId: s }) },
  { name: "volume.getPartitionSupportedSize", op: "volume.supportedSize", call: (s) => volume.getPartitionSupportedSize(s), args: (s) => ({ volumeId: s }) },
  { name: "volume.storageBusy", op: "volume.busy", call: (s) => volume.storageBusy(s), args: (s) => ({ volumeId: s }) },
  { name: "volume.resizePartition", op: "volume.resize", call: (s) => volume.resizePartition(s, 123456789012345678n, volumeFacts(s)), args: (s) => ({ volumeId: s, size: "123456789012345678", expect: volumeFacts(s) }) },
];

testHostileStringsReachWorkerAsData(operations, sent);

test("every worker op of the script is covered above", async () => {
  const { WORKER_OPS } = await import("../../src/host/windows/powershell/scripts/worker-script.ts");
  assert.deepEqual(new Set(operations.map((o) => o.op)), new Set(WORKER_OPS.filter((op) => op !== "ping")));
});

/** A Win32 stand-in that records every call with its string arguments. */
function recordingWin32() {
  const calls: [string, ...unknown[]][] = [];
  const w: VolumeWin32 = {
    setVolumeMountPoint: (mp, id) => void calls.push(["SetVolumeMountPointW", mp, id]),
    deleteVolumeMountPoint: (mp) => void calls.push(["DeleteVolumeMountPointW", mp]),
    getVolumePathName: (p) => (calls.push(["GetVolumePathNameW", p]), "C:\\"),
    getVolumeNameForVolumeMountPoint: (mp) => (calls.push(["GetVolumeNameForVolumeMountPointW", mp]), volumeRecord.uniqueId),
    // only the unmount targets (C:\k\…) are volume mount points; mount targets are plain directories
    reparseTag: (p) => (calls.push(["reparseTag", p]), p.startsWith("C:\\k\\") ? IO_REPARSE_TAG_MOUNT_POINT : null),
  };
  return { w, calls };
}

test("volume service RPCs: hostile volume ids reach the worker as data and Win32 verbatim; hostile paths reach Win32 verbatim", async () => {
  for (const s of HOSTILE.filter((x) => !x.includes("\u0000")).slice(0, 20)) {
    const { w, calls } = recordingWin32();
    const host = new WindowsVolumeHost(fake.pool, w);
    host.inspectDirectory = async () => ({ isDirectory: true, empty: true });
    const svc = createVolumeService({ host });
    const reqs = await sent(async () => {
      await svc.isVolumeFormatted({ volumeId: s });
      await svc.getVolumeStats({ volumeId: s });
      await svc.writeVolumeCache({ volumeId: s });
      await svc.getDiskNumberFromVolumeId({ volumeId: s });
      await svc.resizeVolume({ volumeId: s, sizeBytes: 0n });
      await svc.mountVolume({ volumeId: s, targetPath: `C:\\var\\lib\\kubelet\\${s}` });
      await svc.unmountVolume({ volumeId: volumeRecord.uniqueId, targetPath: `C:\\k\\${s}` }).catch(() => {});
    });
    for (const r of reqs) if ("volumeId" in r.args && r.args.volumeId !== volumeRecord.uniqueId) assert.equal(r.args.volumeId, s);
    assert.ok(reqs.some((r) => r.op === "volume.resize" && r.args.volumeId === s && r.args.size === "1000000000000"));
    const mount = calls.find((c) => c[0] === "SetVolumeMountPointW")!;
    const slash = (x: string) => (x.endsWith("\\") ? x : `${x}\\`);
    assert.equal(mount[1], slash(`C:\\var\\lib\\kubelet\\${s}`));
    assert.equal(mount[2], slash(s));
    assert.ok(calls.some((c) => c[0] === "reparseTag" && c[1] === `C:\\k\\${s}`.replace(/\\+$/, "")));
  }
});

test("disk numbers are validated as uint32 before anything reaches the worker", async () => {
  const svc = createDiskService({ host: new WindowsDiskHost(fake.pool, noIoctls) });
  const before = fake.recorded().raw.length;
  for (const n of [-1, 1.5, 2 ** 32, Number.NaN, Infinity]) {
    const err = await svc.getDiskStats({ diskNumber: n }).catch((e) => e);
    assert.equal((err as CsiProxyError).code, Code.InvalidArgument, `disk number ${n}`);
  }
  assert.equal(fake.recorded().raw.length, before);
  const vol = createVolumeService({ host: new WindowsVolumeHost(fake.pool, {} as VolumeWin32) });
  const err = await vol.listVolumesOnDisk({ diskNumber: -3, partitionNumber: 0 }).catch((e) => e);
  assert.equal((err as CsiProxyError).code, Code.InvalidArgument);
});
