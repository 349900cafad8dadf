/**
 * Windows output parsing and error mapping against fixtures shaped like real Windows output:
 * ConvertTo-Json of MSFT_* instances (PowerShell 5.1 quirks: unwrapped one-element arrays, null for
 * none), CimException / cmdlet ErrorRecords and failed CIM method return values as the worker
 * reports them, STORAGE_DEVICE_ID_DESCRIPTOR buffers, Win32 error codes — and the Windows disk and
 * volume services' decisions (upstream master's, docs/upstream-behaviour.md: Disk, Volume) over them.
 */
import { volumeFactsAnswer } from "./volume-facts-answer.ts";
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, CsiProxyError } from "../../src/errors.ts";
import { WindowsDiskHost, parseLocation } from "../../src/host/windows/disk.ts";
import { WindowsDiskCim, type DiskIoctls } from "../../src/host/windows/powershell/disk-cim.ts";
import { WindowsVolumeHost } from "../../src/host/windows/volume.ts";
import { WindowsVolumeCim, type VolumeWin32 } from "../../src/host/windows/powershell/volume-cim.ts";
import { createDiskService } from "../../src/groups/disk/disk-service.ts";
import { createVolumeService, RESIZE_THRESHOLD_BYTES as MIN_GROWTH } from "../../src/groups/volume/volume-service.ts";
import { mapWorkerError, codeForReturnValue } from "../../src/host/windows/powershell/worker-error-codes.ts";
import { page83FromDescriptor } from "../../src/host/windows/powershell/cim-output.ts";
import { IO_REPARSE_TAG_MOUNT_POINT, IO_REPARSE_TAG_SYMLINK } from "../../src/win32/win32-constants.ts";
import { Win32Error, codeForWin32 } from "../../src/win32/win32-errors.ts";
import { GPT_BASIC_DATA, GPT_MICROSOFT_RESERVED } from "../../src/host/windows/powershell/cim-types.ts";
import { fakePoolsClosedAfter } from "./fake-pool.ts";

const pool = fakePoolsClosedAfter();
const codeOf = (e: unknown) => (e as CsiProxyError).code;
const reject = (p: Promise<unknown>) => p.then(() => assert.fail("expected a rejection"), (e) => e as CsiProxyError);

// ---- fixtures shaped like the worker's output on Windows -------------------------------------

/** ConvertTo-Json of two MSFT_Disk rows (DiskInfo in the worker script). */
const DISKS = [
  { number: 0, location: "PCI Slot 3 : Adapter 0 : Port 0 : Target 0 : LUN 0", path: "\\\\?\\scsi#disk&ven_msft&prod_virtual_disk#5&1ec51bf7&0&000000#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}", serialNumber: "                    ", size: "136365211648", isOffline: false, partitionStyle: 2 },
  { number: 1, location: "Integrated : Adapter 1 : Port 0 : Target 3 : LUN 7", path: "\\\\?\\scsi#disk&ven_google&prod_persistentdisk#4&21cb0360&0&000100#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}", serialNumber: null, size: "18446744073709551615", isOffline: true, partitionStyle: 0 },
];
const MSR = { diskNumber: 1, partitionNumber: 1, gptType: GPT_MICROSOFT_RESERVED, mbrType: null, size: "16777216", offset: "17408", driveLetter: "\u0000" };
const DATA = { diskNumber: 1, partitionNumber: 2, gptType: GPT_BASIC_DATA, mbrType: null, size: "10720641024", offset: "16794624", driveLetter: "\u0000" };
const VOL = { uniqueId: "\\\\?\\Volume{3b9b4f61-1d2e-4c1b-9a3f-2d5c0b1f4c2a}\\", fileSystemType: 14, fileSystem: "NTFS", size: "10720636928", sizeRemaining: "10654351360" };

/** ErrorInfo of a Get-CimInstance / Invoke-CimMethod failure, as ErrorInfo() in the worker script reports it. */
const cimError = (native: string, category: string, message: string, statusCode: number) => ({
  message,
  type: "Microsoft.Management.Infrastructure.CimException",
  category,
  fqid: `HRESULT 0x8004100${statusCode},Microsoft.Management.Infrastructure.CimCmdlets.InvokeCimMethodCommand`,
  native,
  statusCode,
  hresult: -2146233088,
});
const methodError = (what: string, rv: number) => ({ message: `${what} failed: code=${rv}`, type: "System.Exception", category: "OperationStopped", fqid: `${what} failed: code=${rv}`, kind: "method", returnValue: rv, hresult: -2146233088 });

// ---- error mapping --------------------------------------------------------------------------

test("worker errors map to gRPC codes (CIM native code, method return value, script kind, category)", () => {
  const cases: [object, number][] = [
    [cimError("NotFound", "ObjectNotFound", "Not found ", 6), Code.NotFound],
    [cimError("AccessDenied", "PermissionDenied", "Access denied ", 2), Code.PermissionDenied],
    [cimError("InvalidParameter", "InvalidArgument", "Invalid parameter ", 4), Code.InvalidArgument],
    [cimError("NotSupported", "NotImplemented", "Not supported ", 7), Code.Unimplemented],
    [cimError("Failed", "NotSpecified", "General failure ", 1), Code.FailedPrecondition], // the provider's failure, not csi-proxy's
    [methodError("MSFT_Disk.CreatePartition", 42002), Code.AlreadyExists],
    [methodError("MSFT_Disk.Initialize", 41001), Code.AlreadyExists],
    [methodError("MSFT_Volume.Format", 40001), Code.PermissionDenied],
    [methodError("MSFT_Partition.Resize", 4), Code.FailedPrecondition],
    [methodError("MSFT_Disk.Initialize", 12345), Code.FailedPrecondition],
    [methodError("MSFT_Partition.Resize", 5), Code.InvalidArgument],
    [{ message: "volume \\\\?\\Volume{x}\\ not found", kind: "NotFound", category: "OperationStopped" }, Code.NotFound],
    [{ message: "unknown op x", kind: "UnknownOp" }, Code.Internal], // csi-proxy called an op its own script lacks: its bug
    // volume.format's own refusal at the moment of acting (a drive letter or access path, another file system)
    [{ message: "refusing to format volume \\\\?\\Volume{x}\\: it is in use at E:\\", kind: "FailedPrecondition", category: "OperationStopped" }, Code.FailedPrecondition],
    [{ message: "No MSFT_Disk objects found with property 'Number' equal to '9'.", category: "ObjectNotFound", fqid: "CmdletizationQuery_NotFound_Number,Get-Disk" }, Code.NotFound],
    [{ message: "The operation timed out", category: "OperationTimeout" }, Code.DeadlineExceeded],
    [{ ...cimError("Failed", "NotSpecified", "The requested access path is already in use.", 1), MessageId: "StorageWMI 42002" }, Code.AlreadyExists],
    [{ message: "Access denied", category: "PermissionDenied", fqid: "StorageWMI 40001,Microsoft.Management.Infrastructure.CimCmdlets.InvokeCimMethodCommand" }, Code.PermissionDenied],
    [{ message: "Cannot index into a null array.", category: "InvalidOperation" }, Code.Internal], // a runtime error in csi-proxy's script
    [{}, Code.Internal],
  ];
  for (const [info, code] of cases) assert.equal(mapWorkerError(info)[0], code, JSON.stringify(info));
  assert.equal(mapWorkerError(methodError("MSFT_Partition.Resize", 4))[1], "MSFT_Partition.Resize failed: code=4 (Failed)");
  assert.equal(mapWorkerError(methodError("MSFT_Disk.Initialize", 12345))[1], "MSFT_Disk.Initialize failed: code=12345");
  assert.equal(codeForReturnValue(0), Code.Internal);
});

test("errors reported by the worker reach callers as coded errors, with the op and message", async () => {
  const p = pool({
    "disk.get": { error: cimError("NotFound", "ObjectNotFound", "Not found ", 6) },
    "volume.format": { error: methodError("MSFT_Volume.Format", 40001) },
    "volume.get": { error: { message: "volume \\\\?\\Volume{nope}\\ not found", kind: "NotFound" } },
  });
  const disk = new WindowsDiskCim(p.pool, {} as DiskIoctls);
  const vol = new WindowsVolumeCim(p.pool, {} as VolumeWin32);
  const e1 = await reject(disk.getDisk(9));
  assert.equal(e1.code, Code.NotFound);
  assert.equal(e1.message, "disk.get: Not found");
  const e2 = await reject(vol.formatVolume("v", { fileSystemType: "0", accessPaths: "", diskNumber: "1", partitionNumber: "2", offset: "0", size: "0", isOffline: "False" }));
  assert.equal(e2.code, Code.PermissionDenied);
  assert.match(e2.message, /MSFT_Volume.Format failed: code=40001/);
  const e3 = await reject(vol.getVolume("\\\\?\\Volume{nope}\\"));
  assert.equal(e3.code, Code.NotFound);
});

test("Win32 error codes map to gRPC codes and Windows' messages", () => {
  assert.equal(codeForWin32(2), Code.NotFound);
  assert.equal(codeForWin32(3), Code.NotFound);
  assert.equal(codeForWin32(5), Code.PermissionDenied);
  assert.equal(codeForWin32(145), Code.FailedPrecondition);
  assert.equal(codeForWin32(183), Code.AlreadyExists);
  assert.equal(codeForWin32(87), Code.InvalidArgument);
  assert.equal(codeForWin32(4390), Code.NotFound);
  assert.equal(codeForWin32(1), Code.FailedPrecondition, "an unlisted Win32 error is the host's");
  assert.equal(new Win32Error("DeleteVolumeMountPoint C:\\x\\", 4390).message, "DeleteVolumeMountPoint C:\\x\\: The file or directory is not a reparse point. (win32 error 4390)");
  assert.equal(new Win32Error("IOCTL_STORAGE_QUERY_PROPERTY p", 1).message, "IOCTL_STORAGE_QUERY_PROPERTY p: Incorrect function. (win32 error 1)");
});

// ---- output parsing -------------------------------------------------------------------------

test("MSFT_Disk output: sizes beyond 2^53 stay exact, serials stay untrimmed, PS 5.1 array quirks", async () => {
  const p = pool({ "disk.list": [{ result: DISKS }, { result: DISKS[0] }, { result: null }, { result: [] }, { result: [{ ...DISKS[0], size: 12.5 }] }] });
  const host = new WindowsDiskCim(p.pool, {} as DiskIoctls);
  const disks = await host.listDisks();
  assert.equal(disks.length, 2);
  assert.equal(disks[1].size, 18446744073709551615n);
  assert.equal(disks[0].serialNumber, "                    ");
  assert.equal(disks[1].serialNumber, null);
  assert.equal(disks[1].isOffline, true);
  assert.equal((await host.listDisks()).length, 1, "a one-element array unwrapped by ConvertTo-Json");
  assert.deepEqual(await host.listDisks(), [], "null for no disks");
  assert.deepEqual(await host.listDisks(), []);
  const bad = await reject(host.listDisks());
  assert.equal(bad.code, Code.Internal);
  assert.match(bad.message, /disk.list: unexpected PowerShell output: size is not an unsigned integer: 12.5/);
});

test("MSFT_Partition / MSFT_Volume output: NUL drive letters cleared, volume lists of any PS shape", async () => {
  const p = pool({
    "disk.partitions": { result: [MSR, DATA] },
    "volume.listOnDisk": [{ result: [VOL.uniqueId, "\\\\?\\Volume{b}\\"] }, { result: VOL.uniqueId }, { result: null }, { result: [42] }],
    "volume.get": { result: VOL },
  });
  const disk = new WindowsDiskCim(p.pool, {} as DiskIoctls);
  const vol = new WindowsVolumeCim(p.pool, {} as VolumeWin32);
  const parts = await disk.listPartitions(1);
  assert.equal(parts[1].driveLetter, "");
  assert.equal(parts[1].size, 10720641024n);
  assert.deepEqual(await vol.listVolumesOnDisk(1, 0), [VOL.uniqueId, "\\\\?\\Volume{b}\\"]);
  assert.deepEqual(await vol.listVolumesOnDisk(1, 0), [VOL.uniqueId]);
  assert.deepEqual(await vol.listVolumesOnDisk(1, 0), []);
  assert.equal(codeOf(await reject(vol.listVolumesOnDisk(1, 0))), Code.Internal);
  assert.deepEqual(await vol.getVolume(VOL.uniqueId), { uniqueId: VOL.uniqueId, fileSystemType: 14, fileSystem: "NTFS", size: 10720636928n, sizeRemaining: 10654351360n });
});

/** A STORAGE_DEVICE_ID_DESCRIPTOR with the given identifiers. */
function descriptor(ids: { codeSet: number; type: number; assoc: number; id: Buffer }[]): Buffer {
  const parts = ids.map((x) => {
    const size = 16 + x.id.length;
    const next = size + ((4 - (size % 4)) % 4);
    const b = Buffer.alloc(next);
    b.writeUInt32LE(x.codeSet, 0);
    b.writeUInt32LE(x.type, 4);
    b.writeUInt16LE(x.id.length, 8);
    b.writeUInt16LE(next, 10);
    b.writeUInt32LE(x.assoc, 12);
    x.id.copy(b, 16);
    return b;
  });
  const head = Buffer.alloc(12);
  head.writeUInt32LE(1, 0);
  head.writeUInt32LE(12 + parts.reduce((n, b) => n + b.length, 0), 4);
  head.writeUInt32LE(ids.length, 8);
  return Buffer.concat([head, ...parts]);
}

test("page 0x83 id from IOCTL_STORAGE_QUERY_PROPERTY output: first device-associated ASCII (verbatim) or binary (hex) id", () => {
  const naa = Buffer.from("60022480abcdef0123456789abcdef01", "hex");
  assert.equal(page83FromDescriptor(descriptor([{ codeSet: 1, type: 3, assoc: 0, id: naa }])), "60022480abcdef0123456789abcdef01");
  assert.equal(page83FromDescriptor(descriptor([{ codeSet: 2, type: 1, assoc: 0, id: Buffer.from("Google  persistent-disk-1") }])), "Google  persistent-disk-1");
  assert.equal(page83FromDescriptor(descriptor([{ codeSet: 1, type: 4, assoc: 1, id: Buffer.from([1, 2]) }, { codeSet: 2, type: 8, assoc: 0, id: Buffer.from("iqn.x") }])), "iqn.x");
  assert.equal(page83FromDescriptor(descriptor([{ codeSet: 3, type: 8, assoc: 0, id: Buffer.from("utf8") }])), "");
  assert.equal(page83FromDescriptor(descriptor([])), "");
  assert.equal(page83FromDescriptor(Buffer.alloc(4)), "");
});

// ---- disk service decisions -----------------------------------------------------------------

const ioctls = (byPath: Record<string, { n: number; page83: string }>): DiskIoctls => ({
  openForQuery: (p) => {
    if (!byPath[p]) throw new Win32Error(`CreateFile ${p}`, 1);
    return Object.keys(byPath).indexOf(p) + 100;
  },
  closeHandle: () => {},
  storageDeviceNumber: (h) => Object.values(byPath)[Number(h) - 100].n,
  storageDeviceIdDescriptor: (h) => descriptor([{ codeSet: 2, type: 1, assoc: 0, id: Buffer.from(Object.values(byPath)[Number(h) - 100].page83) }]),
});

test("ListDiskLocations parses Location as upstream (Adapter/Target/LUN/Bus; short or empty omitted)", async () => {
  assert.deepEqual(parseLocation("PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0"), { adapter: "0", bus: "", target: "1", lunId: "0" });
  assert.deepEqual(parseLocation("Bus 2 : Adapter 1 : Port 0 : Target 3 : LUN 4"), { adapter: "1", bus: "2", target: "3", lunId: "4" });
  assert.equal(parseLocation(""), null);
  assert.equal(parseLocation("Adapter 0 : Target 1"), null);
  const p = pool({ "disk.list": { result: [...DISKS, { ...DISKS[0], number: 5, location: "" }] } });
  const svc = createDiskService({ host: new WindowsDiskHost(p.pool, {} as DiskIoctls) });
  const locs = await svc.listDiskLocations();
  assert.deepEqual([...locs.keys()], [0, 1]);
  assert.deepEqual(locs.get(1), { adapter: "1", bus: "", target: "3", lunId: "7" });
});

/** Disk 1's facts as the worker compares them (expected-facts.ts), online. */
const RAW_ONLINE = { path: DISKS[1].path, size: DISKS[1].size, isOffline: "False", partitionStyle: "0" };

test("PartitionDisk on a RAW disk: Initialize(GPT), CreatePartition(basic data), Refresh, Online the data partition", async () => {
  // (an online RAW disk: PartitionDisk refuses offline disks)
  const p = pool({ "disk.get": { result: { ...DISKS[1], isOffline: false } }, "disk.partitions": [{ result: [] }, { result: [MSR, DATA] }] });
  const svc = createDiskService({ host: new WindowsDiskHost(p.pool, {} as DiskIoctls) });
  await svc.partitionDisk({ diskNumber: 1 });
  assert.deepEqual(
    p.recorded().requests.map((r) => [r.op, r.args]),
    [
      ["disk.get", { diskNumber: 1 }],
      ["disk.get", { diskNumber: 1 }], // the facts re-read right before the write, for the service's check
      ["disk.initialize", { diskNumber: 1, partitionStyle: 2, expect: RAW_ONLINE }], // … and for the worker to compare
      ["disk.partitions", { diskNumber: 1 }],
      ["disk.get", { diskNumber: 1 }],
      ["disk.createPartition", { diskNumber: 1, gptType: GPT_BASIC_DATA, expect: RAW_ONLINE }],
      ["disk.refresh", { diskNumber: 1 }],
      ["disk.partitions", { diskNumber: 1 }],
      ["partition.online", { diskNumber: 1, partitionNumber: 2 }],
    ],
  );
});

test("PartitionDisk is idempotent: an initialised disk with a data partition is left alone; only the MSR does not count", async () => {
  const p = pool({ "disk.get": { result: DISKS[0] }, "disk.partitions": { result: [MSR, DATA] } });
  const svc = createDiskService({ host: new WindowsDiskHost(p.pool, {} as DiskIoctls) });
  await svc.partitionDisk({ diskNumber: 0 });
  assert.deepEqual(p.recorded().requests.map((r) => r.op), ["disk.get", "disk.partitions"]);
  const q = pool({ "disk.get": { result: { ...DISKS[0], partitionStyle: 1 } }, "disk.partitions": [{ result: [] }, { result: [{ ...DATA, gptType: "", mbrType: 7 }] }], "disk.createPartition": { error: methodError("MSFT_Disk.CreatePartition", 42002) } });
  await createDiskService({ host: new WindowsDiskHost(q.pool, {} as DiskIoctls) }).partitionDisk({ diskNumber: 0 });
  const ops = q.recorded().requests;
  assert.deepEqual(ops.find((r) => r.op === "disk.createPartition")?.args, { diskNumber: 0, gptType: null, expect: { path: DISKS[0].path, size: DISKS[0].size, isOffline: "False", partitionStyle: "1" } }, "MBR disks get no GptType");
  assert.ok(!ops.some((r) => r.op === "disk.initialize"), "an MBR disk is not re-initialised");
  assert.ok(ops.some((r) => r.op === "partition.online"), "42002 (access path in use) is tolerated");
});

test("SetDiskState / GetDiskState / GetDiskStats / Rescan", async () => {
  const p = pool({ "disk.get": { result: DISKS[1] } });
  const svc = createDiskService({ host: new WindowsDiskHost(p.pool, {} as DiskIoctls) });
  assert.deepEqual(await svc.getDiskState({ diskNumber: 1 }), { isOnline: false });
  await svc.setDiskState({ diskNumber: 1, isOnline: false });
  await svc.setDiskState({ diskNumber: 1, isOnline: true });
  assert.deepEqual(await svc.getDiskStats({ diskNumber: 1 }), { totalBytes: 18446744073709551615n });
  await svc.rescan();
  assert.deepEqual(
    p.recorded().requests.filter((r) => r.op !== "disk.get").map((r) => [r.op, r.args]),
    [
      ["disk.setOnline", { diskNumber: 1, online: true, expect: { ...RAW_ONLINE, isOffline: "True" } }],
      ["disk.rescan", {}],
    ],
    "the offline disk is not set offline again",
  );
  const q = pool({ "disk.get": { error: cimError("NotFound", "ObjectNotFound", "Not found ", 6) } });
  const e = await reject(createDiskService({ host: new WindowsDiskHost(q.pool, {} as DiskIoctls) }).getDiskStats({ diskNumber: 9 }));
  assert.equal(e.code, Code.NotFound);
});

test("ListDiskIDs keys by IOCTL device number; GetDiskNumberByName matches page83; an unqueryable disk fails the call", async () => {
  const p = pool({ "disk.list": { result: DISKS } });
  const svc = createDiskService({
    host: new WindowsDiskHost(p.pool, ioctls({ [DISKS[0].path]: { n: 0, page83: "os-disk" }, [DISKS[1].path]: { n: 1, page83: "Google  pd-1" } })),
  });
  const ids = await svc.listDiskIds();
  assert.deepEqual(ids.get(0), { page83: "os-disk", serialNumber: "                    " });
  assert.deepEqual(ids.get(1), { page83: "Google  pd-1", serialNumber: "" });
  assert.deepEqual(await svc.getDiskNumberByName({ diskName: "Google  pd-1" }), { diskNumber: 1 });
  assert.equal(codeOf(await reject(svc.getDiskNumberByName({ diskName: "nope" }))), Code.NotFound);
  assert.equal(codeOf(await reject(svc.getDiskNumberByName({ diskName: "" }))), Code.InvalidArgument);
  const broken = createDiskService({ host: new WindowsDiskHost(p.pool, ioctls({ [DISKS[0].path]: { n: 0, page83: "x" } })) });
  const e = await reject(broken.listDiskIds());
  assert.match(e.message, /Incorrect function/);
});

// ---- volume service decisions ---------------------------------------------------------------

function fakeWin32(state: { mounts: Map<string, string>; tags?: Map<string, number>; links?: Map<string, string> }) {
  const calls: string[] = [];
  const w: VolumeWin32 = {
    setVolumeMountPoint(mp, id) {
      calls.push(`set ${mp} ${id}`);
      if (state.mounts.has(mp)) throw new Win32Error(`SetVolumeMountPoint ${mp}`, 145);
      state.mounts.set(mp, id);
    },
    deleteVolumeMountPoint(mp) {
      calls.push(`delete ${mp}`);
      if (!state.mounts.delete(mp)) throw new Win32Error(`DeleteVolumeMountPoint ${mp}`, 4390);
    },
    getVolumePathName: () => "C:\\",
    getVolumeNameForVolumeMountPoint(mp) {
      if (/^[A-Z]:\\$/i.test(mp)) return "\\\\?\\Volume{c-drive}\\";
      const id = state.mounts.get(mp);
      if (!id) throw new Win32Error(`GetVolumeNameForVolumeMountPoint ${mp}`, 4390);
      return id;
    },
    reparseTag(p) {
      if (state.mounts.has(p + "\\")) return IO_REPARSE_TAG_MOUNT_POINT;
      return state.tags?.get(p) ?? null;
    },
  };
  return { w, calls };
}

/** A `volume.facts` answer: the volume, its partition, whether its disk is offline. */
const facts = (volume: typeof VOL = VOL, partition: typeof DATA = DATA, isOffline = false) => volumeFactsAnswer(volume, partition, isOffline);

function volumeService(fixtures: Record<string, unknown>, state: Parameters<typeof fakeWin32>[0]) {
  const p = pool(fixtures);
  const { w, calls } = fakeWin32(state);
  const host = new WindowsVolumeHost(p.pool, w);
  host.inspectDirectory = async (path) => (path.includes("missing") ? null : { isDirectory: true, empty: true });
  host.cim.readLink = async (path) => state.links?.get(path) ?? assert.fail(`readLink ${path}`);
  return { svc: createVolumeService({ host }), p, calls };
}

test("MountVolume: SetVolumeMountPoint with trailing backslashes; idempotent for the same volume; another volume is FailedPrecondition", async () => {
  const state = { mounts: new Map<string, string>() };
  const { svc, calls } = volumeService({ "volume.facts": facts() }, state);
  const target = "C:\\var\\lib\\kubelet\\plugins\\pd\\globalmount";
  await svc.mountVolume({ volumeId: VOL.uniqueId, targetPath: target });
  await svc.mountVolume({ volumeId: VOL.uniqueId, targetPath: target + "\\" });
  // the second call finds the volume mounted there already: success, nothing set again
  assert.deepEqual(calls, [`set ${target}\\ ${VOL.uniqueId}`]);
  const e = await reject(svc.mountVolume({ volumeId: "\\\\?\\Volume{other}\\", targetPath: target }));
  assert.equal(e.code, Code.FailedPrecondition);
  assert.match(e.message, /is already mounted there/);
  assert.equal(codeOf(await reject(svc.mountVolume({ volumeId: VOL.uniqueId, targetPath: "C:\\missing" }))), Code.NotFound);
  assert.equal(codeOf(await reject(svc.mountVolume({ volumeId: "", targetPath: target }))), Code.InvalidArgument);
  assert.equal((await reject(svc.mountVolume({ volumeId: VOL.uniqueId, targetPath: "" }))).message, "MountVolumeRequest.TargetPath is empty");
});

test("UnmountVolume: flushes first, refuses another volume, is not idempotent", async () => {
  const target = "C:\\k\\m";
  const state = { mounts: new Map([[target + "\\", VOL.uniqueId]]) };
  const { svc, p, calls } = volumeService({ "volume.facts": facts() }, state);
  assert.equal(codeOf(await reject(svc.unmountVolume({ volumeId: "\\\\?\\Volume{other}\\", targetPath: target }))), Code.FailedPrecondition);
  await svc.unmountVolume({ volumeId: VOL.uniqueId, targetPath: target });
  assert.deepEqual(calls, [`delete ${target}\\`]);
  // flushed once, before the mount point was deleted (the refused call flushes nothing)
  assert.deepEqual(p.recorded().requests.map((r) => r.op).filter((op) => op !== "volume.facts"), ["volume.flush"]);
  const again = await reject(svc.unmountVolume({ volumeId: VOL.uniqueId, targetPath: target }));
  assert.equal(again.code, Code.NotFound);
  assert.match(again.message, /is not a mount point/);
});

test("IsVolumeFormatted / FormatVolume: Unknown formats NTFS, an unused NTFS is formatted again, another file system is refused", async () => {
  const { svc, p } = volumeService({ "volume.facts": [facts({ ...VOL, fileSystemType: 0, fileSystem: "" }), facts({ ...VOL, fileSystemType: 0, fileSystem: "" }), facts(), facts({ ...VOL, fileSystemType: 15, fileSystem: "ReFS" })] }, { mounts: new Map() });
  assert.deepEqual(await svc.isVolumeFormatted({ volumeId: VOL.uniqueId }), { formatted: false });
  await svc.formatVolume({ volumeId: VOL.uniqueId });
  await svc.formatVolume({ volumeId: VOL.uniqueId });
  const e = await reject(svc.formatVolume({ volumeId: VOL.uniqueId }));
  assert.equal(e.code, Code.FailedPrecondition);
  assert.match(e.message, /already holds ReFS/);
  const formats = p.recorded().requests.filter((r) => r.op === "volume.format");
  assert.deepEqual(formats.map((r) => r.args.expect), [0, 14].map((t) => ({ fileSystemType: String(t), accessPaths: "", diskNumber: "1", partitionNumber: "2", offset: DATA.offset, size: DATA.size, isOffline: "False" })), "the facts decided on, for the worker to compare");
});

test("ResizeVolume: 0 = GetSupportedSize max, growth under 100 MiB and shrinking are no-ops, negative is InvalidArgument", async () => {
  const size = 10720641024n;
  const { svc, p } = volumeService({ "volume.facts": facts(), "volume.supportedSize": { result: { sizeMin: "1000", sizeMax: "21474836480" } } }, { mounts: new Map() });
  await svc.resizeVolume({ volumeId: VOL.uniqueId, sizeBytes: 0n });
  await svc.resizeVolume({ volumeId: VOL.uniqueId, sizeBytes: size + MIN_GROWTH - 1n });
  await svc.resizeVolume({ volumeId: VOL.uniqueId, sizeBytes: size - 1n });
  await svc.resizeVolume({ volumeId: VOL.uniqueId, sizeBytes: size + MIN_GROWTH });
  assert.deepEqual(p.recorded().requests.filter((r) => r.op === "volume.resize").map((r) => r.args.size), ["21474836480", String(size + MIN_GROWTH)]);
  const e = await reject(svc.resizeVolume({ volumeId: VOL.uniqueId, sizeBytes: -5n }));
  assert.equal(e.code, Code.InvalidArgument);
  assert.equal(e.message, `invalid negative size -5 for volume (${VOL.uniqueId})`);
});

test("GetVolumeStats, GetDiskNumberFromVolumeID, WriteVolumeCache, ListVolumesOnDisk", async () => {
  const { svc, p } = volumeService({ "volume.get": { result: VOL }, "volume.facts": facts(), "volume.listOnDisk": { result: [] } }, { mounts: new Map() });
  assert.deepEqual(await svc.getVolumeStats({ volumeId: VOL.uniqueId }), { totalBytes: 10720636928n, usedBytes: 10720636928n - 10654351360n });
  assert.deepEqual(await svc.getDiskNumberFromVolumeId({ volumeId: VOL.uniqueId }), { diskNumber: 1 });
  await svc.writeVolumeCache({ volumeId: VOL.uniqueId });
  assert.deepEqual(await svc.listVolumesOnDisk({ diskNumber: 4, partitionNumber: 0 }), { volumeIds: [] });
  assert.deepEqual(p.recorded().requests.map((r) => r.op), ["volume.get", "volume.facts", "volume.flush", "volume.listOnDisk"]);
  for (const call of [() => svc.getVolumeStats({ volumeId: "" }), () => svc.writeVolumeCache({ volumeId: "" }), () => svc.formatVolume({ volumeId: "" })]) {
    const e = await reject(call());
    assert.equal(e.code, Code.InvalidArgument);
    assert.equal(e.message, "volume id empty");
  }
});

test("GetVolumeIDFromTargetPath and GetClosestVolumeIDFromTargetPath", async () => {
  const mount = "C:\\var\\lib\\kubelet\\pods\\p\\volumes\\v\\mount";
  const state = {
    mounts: new Map([[mount + "\\", VOL.uniqueId]]),
    tags: new Map([["C:\\links\\to-mount", IO_REPARSE_TAG_SYMLINK]]),
    links: new Map([["C:\\links\\to-mount", mount]]),
  };
  const { svc } = volumeService({}, state);
  assert.deepEqual(await svc.getVolumeIdFromTargetPath({ targetPath: mount }), { volumeId: VOL.uniqueId });
  assert.deepEqual(await svc.getVolumeIdFromTargetPath({ targetPath: "C:\\links\\to-mount" }), { volumeId: VOL.uniqueId }, "a symlink to a mount point");
  const plain = await reject(svc.getVolumeIdFromTargetPath({ targetPath: "C:\\var\\lib\\kubelet" }));
  assert.equal(plain.code, Code.NotFound, "a plain directory is an error, not the C: volume");
  assert.deepEqual(await svc.getClosestVolumeIdFromTargetPath({ targetPath: `${mount}\\sub\\dir` }), { volumeId: VOL.uniqueId }, "nested dir under a mount");
  assert.deepEqual(await svc.getClosestVolumeIdFromTargetPath({ targetPath: "C:\\var\\lib\\kubelet\\x" }), { volumeId: "\\\\?\\Volume{c-drive}\\" }, "plain dir → the drive's volume");
  assert.deepEqual(await svc.getClosestVolumeIdFromTargetPath({ targetPath: "C:\\links\\to-mount\\a" }), { volumeId: VOL.uniqueId }, "through a symlink to a mount");
  assert.equal((await reject(svc.getVolumeIdFromTargetPath({ targetPath: "" }))).message, "target path is empty");
  state.tags.set("C:\\loop", IO_REPARSE_TAG_SYMLINK);
  state.links.set("C:\\loop", "C:\\loop");
  assert.equal(codeOf(await reject(svc.getVolumeIdFromTargetPath({ targetPath: "C:\\loop" }))), Code.FailedPrecondition, "link loops fail closed after 256 hops");
});
