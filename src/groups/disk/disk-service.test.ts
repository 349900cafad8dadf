/**
 * The disk service's decisions against the stateful, Windows-shaped fake host (test/doubles/fake-disk-host.ts):
 * upstream master's PartitionDisk / SetDiskState flows (docs/upstream-behaviour.md, Disk) and csi-proxy's
 * refusals, decided from the host's facts alone. The Linux meaning of the same decisions is tested in
 * host/linux/disk.test.ts, the Windows CIM mapping in test/windows/cim-fixtures.test.ts.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createDiskService } from "./disk-service.ts";
import { createPathPolicy } from "../../policy/path-policy.ts";
import { FakeStorage, MICROSOFT_RESERVED } from "../../../test/doubles/fake-storage.ts";
import { FakeDiskHost } from "../../../test/doubles/fake-disk-host.ts";
import { Code, internal, notFound } from "../../errors.ts";
import { rejectsWithCode } from "../../../test/helpers/assert-coded.ts";
import { everyDiskRpc, testPartitionDiskCases, type PartitionDiskCase } from "../../../test/helpers/disk-service-cases.ts";

const KUBELET = "C:\\var\\lib\\kubelet";
const GiB = 1024n * 1024n * 1024n;

/** Disk 0: the system disk (GPT, C:); disk 1: a RAW data disk at LUN 3; disk 2: no location. */
function setup(tweak?: (w: FakeStorage) => void) {
  const world = new FakeStorage();
  world.addDisk({ number: 0, location: { adapter: "0", bus: "", target: "0", lunId: "0" }, ids: { page83: "os", serialNumber: "  " }, sizeBytes: 128n * GiB });
  world.addPartition(0, { type: MICROSOFT_RESERVED });
  world.addPartition(0, { driveLetter: "C", volume: { fileSystem: "NTFS" } });
  world.addDisk({ number: 1, location: { adapter: "1", bus: "", target: "0", lunId: "3" }, ids: { page83: "60022480abc", serialNumber: "" } });
  world.addDisk({ number: 2, ids: { page83: "", serialNumber: "serial-2" } });
  tweak?.(world);
  const host = new FakeDiskHost(world);
  const policy = createPathPolicy({ platform: "win32", allowedDirs: [KUBELET], resolve: async (p) => p });
  return { world, host, disk: createDiskService({ host, policy }) };
}

describe("reads", () => {
  test("ListDiskLocations: disks without a location are left out", async () => {
    const { disk } = setup();
    assert.deepEqual([...(await disk.listDiskLocations()).keys()], [0, 1]);
    assert.deepEqual((await disk.listDiskLocations()).get(1), { adapter: "1", bus: "", target: "0", lunId: "3" });
  });

  test("ListDiskIDs and GetDiskNumberByName (page83; upstream's NotFound text; empty name InvalidArgument)", async () => {
    const { disk } = setup();
    assert.deepEqual((await disk.listDiskIds()).get(2), { page83: "", serialNumber: "serial-2" });
    assert.deepEqual(await disk.getDiskNumberByName({ diskName: "60022480abc" }), { diskNumber: 1 });
    await rejectsWithCode(disk.getDiskNumberByName({ diskName: "nope" }), Code.NotFound, /^could not find disk with Page83 ID nope: not found$/);
    await rejectsWithCode(disk.getDiskNumberByName({ diskName: "" }), Code.InvalidArgument);
  });

  test("GetDiskStats / GetDiskState; unknown disk NotFound; not a uint32 InvalidArgument before any host call", async () => {
    const { disk, host } = setup((w) => (w.disk(2).online = false));
    assert.deepEqual(await disk.getDiskStats({ diskNumber: 0 }), { totalBytes: 128n * GiB });
    assert.deepEqual(await disk.getDiskState({ diskNumber: 2 }), { isOnline: false });
    await rejectsWithCode(disk.getDiskStats({ diskNumber: 9 }), Code.NotFound);
    let hostCalls = 0;
    host.getDisk = async () => assert.fail(`host called (${++hostCalls})`);
    host.getDiskLayout = async () => assert.fail(`host called (${++hostCalls})`);
    for (const n of [-1, 1.5, 2 ** 32, Number.NaN]) {
      await rejectsWithCode(disk.getDiskState({ diskNumber: n }), Code.InvalidArgument);
      await rejectsWithCode(disk.partitionDisk({ diskNumber: n }), Code.InvalidArgument);
    }
    assert.equal(hostCalls, 0);
  });
});

describe("PartitionDisk", () => {
  const cases: PartitionDiskCase<FakeStorage, number>[] = [
    {
      name: "RAW disk: Initialize(GPT), CreatePartition(basic data), Refresh, Online the data partition",
      calls: ["initializeDisk 1", "createDataPartition 1 gpt", "refreshDisk 1", "onlinePartition 1 1"],
      after: (w) => assert.equal(w.disk(1).style, "gpt"),
    },
    {
      name: "RAW disk that Windows gives a reserved partition on Initialize: the data partition is created after it",
      tweak: (w) => (w.reservedOnInitialize = true),
      calls: ["initializeDisk 1", "createDataPartition 1 gpt", "refreshDisk 1", "onlinePartition 1 2"],
    },
    { name: "initialised disk with a data partition: left alone (idempotent)", tweak: (w) => void w.addPartition(1), calls: [] },
    {
      name: "only the Microsoft reserved partition: a data partition is added",
      tweak: (w) => void w.addPartition(1, { type: MICROSOFT_RESERVED }),
      calls: ["createDataPartition 1 gpt", "refreshDisk 1", "onlinePartition 1 2"],
    },
    {
      name: "MBR disk without partitions: not re-initialised, a partition without GPT type is added",
      tweak: (w) => (w.disk(1).style = "mbr"),
      calls: ["createDataPartition 1 mbr", "refreshDisk 1", "onlinePartition 1 1"],
    },
    {
      name: "42002 (access path already in use, AlreadyExists) from CreatePartition is tolerated",
      tweak: (w) => (w.accessPathInUse = true),
      calls: ["initializeDisk 1", "createDataPartition 1 gpt", "refreshDisk 1", "onlinePartition 1 1"],
    },
    {
      name: "a data partition the host reports offline is brought online",
      tweak: (w) => void w.addPartition(1, { online: false }),
      calls: ["onlinePartition 1 1"],
    },
    { name: "a data partition the host reports online: nothing to do", tweak: (w) => void w.addPartition(1, { online: true }), calls: [] },
    {
      name: "a created partition the host already shows online is not onlined again",
      tweak: (w) => {
        w.disk(1).style = "gpt";
        w.createPartition = (n) => void w.addPartition(n, { online: true });
      },
      calls: ["createDataPartition 1 gpt", "refreshDisk 1"],
    },
    {
      name: "RAW disk holding something (a foreign file system): FailedPrecondition, untouched",
      tweak: (w) => (w.disk(1).content = "ext4 (filesystem)"),
      code: Code.FailedPrecondition,
      message: /no partition table but holds ext4 \(filesystem\); initialising it would destroy/,
      calls: [],
    },
    {
      name: "a partition table the host cannot read: FailedPrecondition",
      tweak: (w) => Object.assign(w.disk(1), { style: "unknown", content: "partition style 7" }),
      code: Code.FailedPrecondition,
      message: /partition style 7/,
      calls: [],
    },
    { name: "the system disk: FailedPrecondition naming the system volume", disk: 0, code: Code.FailedPrecondition, message: /holds the Windows system volume C:/, calls: [] },
    { name: "offline disk: FailedPrecondition", tweak: (w) => (w.disk(1).online = false), code: Code.FailedPrecondition, message: /offline; bring it online/, calls: [] },
    {
      name: "offline disk that already has a data partition: OK, left alone (drivers partition before onlining)",
      tweak: (w) => {
        w.addPartition(1, { online: false });
        w.disk(1).online = false;
      },
      calls: [],
    },
    {
      name: "a busy partition: FailedPrecondition",
      tweak: (w) => void w.addPartition(1, { use: { busy: ["in use by /dev/dm-0 (holders)"] } }),
      code: Code.FailedPrecondition,
      message: /disk 1 partition 1 is in use by \/dev\/dm-0/,
      calls: [],
    },
    {
      name: "a partition mounted outside the kubelet dir: FailedPrecondition",
      tweak: (w) => void w.addPartition(1, { use: { mountPoints: ["D:\\admin"] } }),
      code: Code.FailedPrecondition,
      message: /mounted at D:\\admin, outside the kubelet and working directories/,
      calls: [],
    },
    { name: "a partition mounted inside the kubelet dir: fine", tweak: (w) => void w.addPartition(1, { use: { mountPoints: [`${KUBELET}\\m`] } }), calls: [] },
    { name: "unknown disk: NotFound", disk: 9, code: Code.NotFound, calls: [] },
    {
      name: "CreatePartition failure: the code is kept, with context",
      tweak: (w) => w.failNext("createDataPartition"),
      code: Code.Internal,
      message: /create the data partition on \\\\.\\PhysicalDrive1: .*injected/,
      calls: ["initializeDisk 1", "createDataPartition 1 gpt"],
    },
  ];
  testPartitionDiskCases(cases, setup, (_, disk) => disk ?? 1);

  test("twice in parallel on one disk: serialised, partitioned once", async () => {
    const s = setup();
    await Promise.all([s.disk.partitionDisk({ diskNumber: 1 }), s.disk.partitionDisk({ diskNumber: 1 })]);
    assert.equal(s.world.calls.filter((c) => c.startsWith("createDataPartition")).length, 1);
  });
});

describe("SetDiskState", () => {
  test("only when the state differs (idempotent, as upstream)", async () => {
    const s = setup();
    await s.disk.setDiskState({ diskNumber: 1, isOnline: true });
    await s.disk.setDiskState({ diskNumber: 1, isOnline: false });
    await s.disk.setDiskState({ diskNumber: 1, isOnline: false });
    await s.disk.setDiskState({ diskNumber: 1, isOnline: true });
    assert.deepEqual(s.world.calls, ["setDiskOnline 1 false", "setDiskOnline 1 true"]);
  });

  const refusals = [
    { name: "the system disk", disk: 0, message: /holds the Windows system volume C:/ },
    { name: "a mount even inside the kubelet dir", tweak: (w: FakeStorage) => void w.addPartition(1, { use: { mountPoints: [`${KUBELET}\\m`] } }), message: /unmount it first/ },
    { name: "a busy disk", tweak: (w: FakeStorage) => (w.disk(1).use = { busy: ["in use as swap"] }), message: /PhysicalDrive1 is in use as swap/ },
  ];
  for (const c of refusals) {
    test(`offline refused: ${c.name}`, async () => {
      const s = setup(c.tweak);
      await rejectsWithCode(s.disk.setDiskState({ diskNumber: c.disk ?? 1, isOnline: false }), Code.FailedPrecondition, c.message);
      assert.deepEqual(s.world.calls, []);
    });
  }
  test("online is never refused", async () => {
    const s = setup((w) => (w.disk(0).online = false));
    await s.disk.setDiskState({ diskNumber: 0, isOnline: true });
    assert.deepEqual(s.world.calls, ["setDiskOnline 0 true"]);
  });
});

describe("Rescan", () => {
  test("a host that refreshes everything itself: one scan", async () => {
    const s = setup((w) => w.growMedium(1, 20n * GiB));
    await s.disk.rescan();
    assert.deepEqual(s.world.calls, ["scanForDisks"]);
    assert.deepEqual(await s.disk.getDiskStats({ diskNumber: 1 }), { totalBytes: 20n * GiB });
  });
  test("a host that names disks to refresh: each refreshed", async () => {
    const s = setup((w) => {
      w.refreshOneByOne = true;
      w.growMedium(1, 20n * GiB);
    });
    await s.disk.rescan();
    assert.deepEqual(s.world.calls.sort(), ["refreshDiskSize 0", "refreshDiskSize 1", "refreshDiskSize 2", "scanForDisks"]);
    assert.deepEqual(await s.disk.getDiskStats({ diskNumber: 1 }), { totalBytes: 20n * GiB });
  });
  test("a disk that went away before its refresh (NotFound) is skipped; other failures still fail the rescan", async () => {
    const s = setup((w) => (w.refreshOneByOne = true));
    s.world.failNext("refreshDiskSize", notFound("disk 0 went away during the rescan"));
    await s.disk.rescan();
    s.world.failNext("refreshDiskSize", internal("boom"));
    await rejectsWithCode(s.disk.rescan(), Code.Internal, /rescan disk \d: boom/);
  });
});

describe("a host that lacks the privilege", () => {
  for (const [name, call] of everyDiskRpc(1, false)) {
    test(`${name}: PermissionDenied with the host's reason, no host call`, async () => {
      const s = setup((w) => (w.missingPrivilege = "needs a privilege"));
      const disk = createDiskService({ host: s.host });
      for (const m of ["listDisks", "listDiskIds", "getDisk", "getDiskLayout", "scanForDisks"]) s.world.failNext(m, new Error(`${m} must not be called`));
      await rejectsWithCode(call(disk), Code.PermissionDenied, new RegExp(`^disk ${name}: needs a privilege$`));
      assert.deepEqual(s.world.calls, []);
    });
  }
});

describe("writes re-verify the disk right before the host acts (hosts with identities)", () => {
  /** The fake host with identities: disk 1's identity changes from the n-th getDisk/getDiskLayout on. */
  function withIdentity(s: ReturnType<typeof setup>, changeFrom: number) {
    let lookups = 0;
    const ident = () => (++lookups >= changeFrom ? "\\\\?\\scsi#other size 1" : "\\\\?\\scsi#disk1 size 1");
    const getDisk = s.host.getDisk.bind(s.host);
    const getDiskLayout = s.host.getDiskLayout.bind(s.host);
    s.host.getDisk = async (n: number) => ({ ...(await getDisk(n)), identity: ident() });
    s.host.getDiskLayout = async (n: number) => {
      const l = await getDiskLayout(n);
      return { ...l, disk: { ...l.disk, identity: ident() } };
    };
  }
  test("PartitionDisk: another disk behind the number at the write → FailedPrecondition naming both, nothing written", async () => {
    const s = setup();
    withIdentity(s, 2);
    await rejectsWithCode(s.disk.partitionDisk({ diskNumber: 1 }), Code.FailedPrecondition, /changed since it was looked up \(.*scsi#disk1 size 1 → .*scsi#other size 1\)/);
    assert.deepEqual(s.world.calls, []);
  });
  test("SetDiskState offline: the same", async () => {
    const s = setup();
    withIdentity(s, 3);
    await rejectsWithCode(s.disk.setDiskState({ diskNumber: 1, isOnline: false }), Code.FailedPrecondition, /changed since it was looked up/);
    assert.deepEqual(s.world.calls, []);
  });
  test("unchanged identity: the writes go ahead", async () => {
    const s = setup();
    withIdentity(s, 99);
    await s.disk.partitionDisk({ diskNumber: 1 });
    assert.deepEqual(s.world.calls.slice(0, 2), ["initializeDisk 1", "createDataPartition 1 gpt"]);
  });
});
