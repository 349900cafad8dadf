import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
/**
 * The disk group's Linux semantics: the unified disk service over LinuxDiskHost, on the fake Linux
 * block tools (a modelled host with loop, virtio and SCSI disks).
 */
import { createDiskService } from "../../groups/disk/disk-service.ts";
import { diskNumberOf } from "./block/disk-numbers.ts";
import { LinuxDiskHost } from "./disk.ts";
import { createPathPolicy } from "../../policy/path-policy.ts";
import { diskWriteCheck } from "../../policy/block-policy.ts";
import { FakeBlockWorld } from "../../../test/doubles/fake-block-world.ts";
import { FakeBlockTools } from "../../../test/doubles/fake-block-tools.ts";
import { Code, CsiProxyError } from "../../errors.ts";
import type { DiskFacts, DiskWriteCheck } from "../../groups/disk/host-api.ts";
import { rejectsWithCode } from "../../../test/helpers/assert-coded.ts";
import { everyDiskRpc, testPartitionDiskCases, type PartitionDiskCase } from "../../../test/helpers/disk-service-cases.ts";

const KUBELET = "/var/lib/kubelet";
const MiB = 1024n * 1024n;
const MSR = "e3c9e316-0b5c-4db8-817d-f92df00215ae";

/** A host with: root disk vda (whole-disk ext4 on /), loop3 (raw, 1 GiB, on /images/a.img), sdb (SCSI). */
function setup(tweak?: (w: FakeBlockWorld) => void) {
  const world = new FakeBlockWorld();
  const vda = world.addDisk({ name: "vda", major: 254, minor: 0, serial: "root-serial", sizeBytes: 256n * 1024n * MiB });
  world.putFilesystem("/dev/vda", "ext4");
  world.mountDirect("/dev/vda", "/");
  world.addLoop(3, "/images/a.img");
  world.addDisk({ name: "sdb", major: 8, minor: 16, scsiAddress: { host: 2, channel: 0, target: 1, lun: 5 }, scsiState: "running" });
  world.addDisk({ name: "loop7", major: 7, minor: 7, sizeBytes: 0n }); // unattached loop: not a disk
  world.scsiHosts = [0, 2];
  tweak?.(world);
  const tools = new FakeBlockTools(world);
  const host = new LinuxDiskHost(tools);
  const policy = createPathPolicy({ platform: "linux", allowedDirs: [KUBELET], resolve: async (p) => p });
  const disk = createDiskService({ host, policy });
  const num = (name: string) => diskNumberOf(world.disk(name));
  return { world, tools, host, disk, num, vda };
}

describe("ListDiskLocations / ListDiskIDs / GetDiskStats / GetDiskNumberByName", () => {
  test("locations: SCSI H:C:T:L only; loop, virtio and unattached devices omitted", async () => {
    const { disk, num } = setup();
    assert.deepEqual(await disk.listDiskLocations(), new Map([[num("sdb"), { adapter: "2", bus: "0", target: "1", lunId: "5" }]]));
  });

  test("ids: loop serial = backing file; VPD pages; virtio serial; NVMe wwid; unattached loop omitted", async () => {
    const { disk, num } = setup((w) => {
      const d = w.disk("sdb");
      d.vpdPage80 = Uint8Array.from([0, 0x80, 0, 3, 0x53, 0x4e, 0x31]);
      d.vpdPage83 = Uint8Array.from([0, 0x83, 0, 8, 0x01, 0x03, 0, 4, 0x60, 0x0a, 0xbc, 0xde]);
      w.addDisk({ name: "nvme0n1", major: 259, minor: 100, serial: "NV1  ", wwid: "eui.00253885ABCD" });
    });
    const ids = await disk.listDiskIds();
    assert.deepEqual(ids.get(num("loop3")), { page83: "", serialNumber: "/images/a.img" });
    assert.deepEqual(ids.get(num("sdb")), { page83: "600abcde", serialNumber: "SN1" });
    assert.deepEqual(ids.get(num("vda")), { page83: "", serialNumber: "root-serial" });
    assert.deepEqual(ids.get(num("nvme0n1")), { page83: "00253885abcd", serialNumber: "NV1  " });
    assert.equal(ids.has(num("loop7")), false);
    assert.deepEqual([...ids.keys()], [...ids.keys()].sort((a, b) => a - b), "sorted by disk number");
  });

  const statsCases = [
    { name: "known disk: size in bytes", n: (s: ReturnType<typeof setup>) => s.num("loop3"), want: 1024n * MiB },
    { name: "unknown disk: NotFound", n: () => 12345, code: Code.NotFound },
    { name: "unattached loop: NotFound", n: (s: ReturnType<typeof setup>) => s.num("loop7"), code: Code.NotFound },
    { name: "not a uint32: InvalidArgument", n: () => -1, code: Code.InvalidArgument },
  ];
  for (const c of statsCases) {
    test(`GetDiskStats: ${c.name}`, async () => {
      const s = setup();
      const p = s.disk.getDiskStats({ diskNumber: c.n(s) });
      if (c.code !== undefined) await rejectsWithCode(p, c.code);
      else assert.deepEqual(await p, { totalBytes: c.want });
    });
  }

  test("GetDiskNumberByName: page83 match, NotFound with upstream text, empty name InvalidArgument", async () => {
    const { disk, num } = setup((w) => (w.disk("sdb").wwid = "naa.600ABC"));
    assert.deepEqual(await disk.getDiskNumberByName({ diskName: "600abc" }), { diskNumber: num("sdb") });
    await rejectsWithCode(disk.getDiskNumberByName({ diskName: "nope" }), Code.NotFound, /could not find disk with Page83 ID nope: not found/);
    await rejectsWithCode(disk.getDiskNumberByName({ diskName: "" }), Code.InvalidArgument);
  });
});

describe("PartitionDisk", () => {
  const cases: PartitionDiskCase<FakeBlockWorld, string>[] = [
    {
      name: "raw disk: GPT initialised, one Linux data partition",
      calls: ["createGptTable /dev/loop3", "appendPartition /dev/loop3 0fc63daf-8483-4772-8e79-3d69d8477de4"],
      after: (w) => {
        assert.equal(w.disk("loop3").table?.type, "gpt");
        assert.equal(w.disk("loop3").table?.entries.length, 1);
      },
    },
    { name: "GPT with a data partition: untouched (idempotent)", tweak: (w) => w.partition("loop3", [100]), calls: [] },
    {
      name: "GPT with only an MSR partition: data partition added",
      tweak: (w) => w.partition("loop3", [16], "gpt", MSR),
      calls: ["appendPartition /dev/loop3 0fc63daf-8483-4772-8e79-3d69d8477de4"],
    },
    { name: "MBR with a partition: stays MBR, untouched", tweak: (w) => w.partition("loop3", [100], "dos"), calls: [] },
    {
      name: "MBR without partitions: a type 83 partition added",
      tweak: (w) => w.partition("loop3", [], "dos"),
      calls: ["appendPartition /dev/loop3 83"],
      after: (w) => assert.equal(w.disk("loop3").table?.type, "dos"),
    },
    {
      name: "table written but not yet seen by the kernel: only synchronised",
      tweak: (w) => {
        w.partition("loop3", [100]);
        w.disk("loop3").kernelSeesPartitions = false;
      },
      calls: ["syncPartitions /dev/loop3"],
    },
    {
      name: "whole-disk ext4 (no table): FailedPrecondition, data intact",
      tweak: (w) => w.putFilesystem("/dev/loop3", "ext4", ["precious"]),
      code: Code.FailedPrecondition,
      message: /no partition table but holds ext4.*destroy/,
      calls: [],
      after: (w) => assert.deepEqual(w.fsOf("/dev/loop3").data, ["precious"]),
    },
    {
      name: "LVM signature (no table): FailedPrecondition",
      tweak: (w) => w.setContent("/dev/loop3", { kind: "signature", type: "LVM2_member", usage: "raid" }),
      code: Code.FailedPrecondition,
      message: /LVM2_member/,
      calls: [],
    },
    {
      name: "conflicting signatures: FailedPrecondition",
      tweak: (w) => w.setContent("/dev/loop3", { kind: "ambivalent" }),
      code: Code.FailedPrecondition,
      calls: [],
    },
    {
      name: "the root disk (by number): FailedPrecondition naming /",
      disk: "vda",
      code: Code.FailedPrecondition,
      message: /holds the root filesystem \//,
      calls: [],
    },
    {
      name: "a partition mounted outside the kubelet dir: FailedPrecondition",
      tweak: (w) => {
        w.partition("loop3", [100]);
        w.putFilesystem("/dev/loop3p1", "ext4");
        w.mountDirect("/dev/loop3p1", "/mnt/admin");
      },
      code: Code.FailedPrecondition,
      message: /mounted at \/mnt\/admin, outside/,
      calls: [],
    },
    {
      name: "a partition mounted inside the kubelet dir: fine (already partitioned)",
      tweak: (w) => {
        w.partition("loop3", [100]);
        w.putFilesystem("/dev/loop3p1", "ext4");
        w.mountDirect("/dev/loop3p1", `${KUBELET}/plugins/x/globalmount`);
      },
      calls: [],
    },
    {
      name: "a device-mapper holder on the disk: FailedPrecondition",
      tweak: (w) => (w.disk("loop3").holders = ["dm-0"]),
      code: Code.FailedPrecondition,
      message: /in use by \/dev\/dm-0 \(holders\)/,
      calls: [],
    },
    {
      name: "a holder on a partition: FailedPrecondition",
      tweak: (w) => (w.partition("loop3", [100])[0].holders = ["md0"]),
      code: Code.FailedPrecondition,
      message: /md0/,
      calls: [],
    },
    {
      name: "used as swap: FailedPrecondition",
      tweak: (w) => w.swaps.push({ major: 7, minor: 3 }),
      code: Code.FailedPrecondition,
      message: /swap/,
      calls: [],
    },
    {
      name: "offline disk: FailedPrecondition",
      tweak: (w) => {
        w.marks.push({ major: 7, minor: 3, diskSeq: "1", setReadOnly: true });
        w.disk("loop3").readOnly = true;
      },
      code: Code.FailedPrecondition,
      message: /offline/,
      calls: [],
    },
    { name: "unknown disk: NotFound", disk: "nope", code: Code.NotFound, calls: [] },
    {
      name: "sfdisk failure: Internal with context",
      tweak: (w) => w.failNext("appendPartition"),
      code: Code.Internal,
      message: /create the data partition on \/dev\/loop3: .*injected/,
      calls: ["createGptTable /dev/loop3", "appendPartition /dev/loop3 0fc63daf-8483-4772-8e79-3d69d8477de4"],
    },
  ];
  testPartitionDiskCases(cases, setup, (s, disk) => (disk === "nope" ? 999 : s.num(disk ?? "loop3")));

  test("twice in parallel on one disk: serialised, partitioned once", async () => {
    const s = setup();
    await Promise.all([s.disk.partitionDisk({ diskNumber: s.num("loop3") }), s.disk.partitionDisk({ diskNumber: s.num("loop3") })]);
    assert.equal(s.world.calls.filter((c) => c.startsWith("appendPartition")).length, 1);
  });

  test("different disks proceed in parallel", async () => {
    const s = setup((w) => w.addLoop(4, "/images/b.img"));
    let inFlight = 0, peak = 0;
    const orig = s.tools.createGptTable.bind(s.tools);
    s.tools.createGptTable = async (dev) => {
      peak = Math.max(peak, ++inFlight);
      await sleep(10);
      inFlight--;
      return orig(dev);
    };
    await Promise.all([s.disk.partitionDisk({ diskNumber: s.num("loop3") }), s.disk.partitionDisk({ diskNumber: s.num("loop4") })]);
    assert.equal(peak, 2);
  });
});

describe("Rescan", () => {
  test("scans SCSI hosts, rescans SCSI disks, refreshes loop capacities", async () => {
    const s = setup();
    s.world.growMedium("loop3", 2048n * MiB);
    await s.disk.rescan();
    assert.deepEqual(s.world.calls.sort(), ["refreshLoopCapacity /dev/loop3", "rescanScsiDevice sdb", "scanScsiHost 0", "scanScsiHost 2"].sort());
    assert.deepEqual(await s.disk.getDiskStats({ diskNumber: s.num("loop3") }), { totalBytes: 2048n * MiB });
  });
});

describe("SetDiskState / GetDiskState", () => {
  /** SetDiskState(offline) of loop3: offline, read-only, one mark with the flag set. */
  async function takeLoop3Offline(s: ReturnType<typeof setup>, n: number): Promise<void> {
    await s.disk.setDiskState({ diskNumber: n, isOnline: false });
    assert.deepEqual(await s.disk.getDiskState({ diskNumber: n }), { isOnline: false });
    assert.equal(s.world.disk("loop3").readOnly, true);
    assert.deepEqual(s.world.marks, [{ major: 7, minor: 3, diskSeq: "1", setReadOnly: true }]);
  }

  test("loop device: offline = persisted mark + read-only flag; online undoes both", async () => {
    const s = setup();
    const n = s.num("loop3");
    assert.deepEqual(await s.disk.getDiskState({ diskNumber: n }), { isOnline: true });
    await takeLoop3Offline(s, n);
    await s.disk.setDiskState({ diskNumber: n, isOnline: false }); // idempotent
    await s.disk.setDiskState({ diskNumber: n, isOnline: true });
    assert.deepEqual(await s.disk.getDiskState({ diskNumber: n }), { isOnline: true });
    assert.equal(s.world.disk("loop3").readOnly, false);
    assert.deepEqual(s.world.marks, []);
    // the mark (the intention) is recorded before the flag is set: see the next test
    assert.deepEqual(s.world.calls, ["writeOfflineMarks 7:3", "setReadOnly /dev/loop3 true", "setReadOnly /dev/loop3 false", "writeOfflineMarks -"]);
  });

  test("a mark whose read-only flag was never set (daemon killed in between) counts as online; the retry sets the flag", async () => {
    const s = setup((w) => w.marks.push({ major: 7, minor: 3, diskSeq: "1", setReadOnly: true }));
    const n = s.num("loop3");
    assert.deepEqual(await s.disk.getDiskState({ diskNumber: n }), { isOnline: true });
    await takeLoop3Offline(s, n);
    await s.disk.setDiskState({ diskNumber: n, isOnline: true });
    assert.equal(s.world.disk("loop3").readOnly, false);
  });

  test("online when already online: no host call", async () => {
    const s = setup();
    await s.disk.setDiskState({ diskNumber: s.num("loop3"), isOnline: true });
    assert.deepEqual(s.world.calls, []);
  });

  test("a device that was read-only before stays read-only after online", async () => {
    const s = setup((w) => (w.disk("loop3").readOnly = true));
    await s.disk.setDiskState({ diskNumber: s.num("loop3"), isOnline: false });
    await s.disk.setDiskState({ diskNumber: s.num("loop3"), isOnline: true });
    assert.deepEqual(s.world.calls, ["writeOfflineMarks 7:3", "writeOfflineMarks -"]);
    assert.equal(s.world.disk("loop3").readOnly, true);
  });

  test("a mark from an earlier medium (diskseq changed) does not count and is dropped", async () => {
    const s = setup((w) => w.marks.push({ major: 7, minor: 3, diskSeq: "0", setReadOnly: true }, { major: 7, minor: 9, diskSeq: "1", setReadOnly: true }));
    assert.deepEqual(await s.disk.getDiskState({ diskNumber: s.num("loop3") }), { isOnline: true });
    await s.disk.setDiskState({ diskNumber: s.num("loop3"), isOnline: false });
    assert.deepEqual(s.world.marks, [{ major: 7, minor: 3, diskSeq: "1", setReadOnly: true }]);
  });

  test("SCSI disk: the device state itself", async () => {
    const s = setup();
    await s.disk.setDiskState({ diskNumber: s.num("sdb"), isOnline: false });
    assert.deepEqual(await s.disk.getDiskState({ diskNumber: s.num("sdb") }), { isOnline: false });
    await s.disk.setDiskState({ diskNumber: s.num("sdb"), isOnline: true });
    assert.deepEqual(s.world.calls, ["setScsiState sdb offline", "setScsiState sdb running"]);
  });

  const refusals = [
    { name: "root disk", disk: "vda", message: /root filesystem/ },
    {
      name: "mounted even inside the kubelet dir",
      tweak: (w: FakeBlockWorld) => {
        w.partition("loop3", [100]);
        w.putFilesystem("/dev/loop3p1", "ext4");
        w.mountDirect("/dev/loop3p1", `${KUBELET}/x`);
      },
      message: /unmount it first/,
    },
    { name: "holders", tweak: (w: FakeBlockWorld) => (w.disk("loop3").holders = ["dm-1"]), message: /dm-1/ },
  ];
  for (const c of refusals) {
    test(`offline refused: ${c.name}`, async () => {
      const s = setup(c.tweak);
      await rejectsWithCode(s.disk.setDiskState({ diskNumber: s.num(c.disk ?? "loop3"), isOnline: false }), Code.FailedPrecondition, c.message);
      assert.deepEqual(s.world.calls, []);
    });
  }

  test("unknown disk: NotFound for both", async () => {
    const s = setup();
    await rejectsWithCode(s.disk.getDiskState({ diskNumber: 42 }), Code.NotFound);
    await rejectsWithCode(s.disk.setDiskState({ diskNumber: 42, isOnline: true }), Code.NotFound);
  });
});

describe("not root", () => {
  for (const [name, call] of everyDiskRpc(7340035, true)) {
    test(`${name}: PermissionDenied saying root is required, no host call`, async () => {
      const s = setup((w) => (w.uid = 65534));
      const disk = createDiskService({ host: s.host, policy: { check: async (p) => p } });
      await rejectsWithCode(call(disk), Code.PermissionDenied, /must run as root.*uid 65534/);
      assert.deepEqual(s.world.calls, []);
    });
  }
});

describe("writes run the service's check on the snapshot they act on", () => {
  test("an identity that differs from the disk's now: FailedPrecondition, nothing written", async () => {
    const { world, host, num } = setup((w) => w.partition("loop3", [16]));
    const n = num("loop3");
    const wrong = { identity: (await host.getDisk(n)).identity!.replace(/diskseq \S+/, "diskseq 99") };
    const rule = { what: "write", allowMountsInside: false, isAllowed: async () => false };
    await rejectsWithCode(host.initializeDisk(n, diskWriteCheck(wrong, rule)), Code.FailedPrecondition, /changed since it was looked up/);
    await rejectsWithCode(host.createDataPartition(n, "gpt", diskWriteCheck(wrong, rule)), Code.FailedPrecondition, /changed since it was looked up/);
    await rejectsWithCode(host.setDiskOnline(n, false, diskWriteCheck(wrong, rule)), Code.FailedPrecondition, /changed since it was looked up/);
    assert.deepEqual(world.calls, []);
  });

  test("a new medium behind the disk number between the service's look and the write: PartitionDisk refused, nothing written", async () => {
    const { world, num } = setup();
    let fired = false;
    class Racing extends FakeBlockTools {
      override async listSignatures(devPath: string) {
        if (!fired) {
          fired = true;
          world.disk("loop3").diskSeq = "77"; // the loop device re-attached to another image meanwhile
        }
        return super.listSignatures(devPath);
      }
    }
    const policy = createPathPolicy({ platform: "linux", allowedDirs: [KUBELET], resolve: async (p) => p });
    const disk = createDiskService({ host: new LinuxDiskHost(new Racing(world)), policy });
    await rejectsWithCode(disk.partitionDisk({ diskNumber: num("loop3") }), Code.FailedPrecondition, /changed since it was looked up/);
    assert.ok(fired);
    assert.deepEqual(world.calls, []);
  });
});

describe("the host decides nothing: every refusal is the check's, on the facts the host reads right before writing", () => {
  test("partition-table writes: the disk, its partitions with their uses and every signature reach the check; a check that lets a filesystem through is obeyed", async () => {
    const { world, host, num } = setup((w) => {
      w.putFilesystem("/dev/loop3", "ext4"); // a whole-disk filesystem: the service's rule refuses it
      w.disk("loop3").holders.push("dm-1");
    });
    const seen: DiskFacts[] = [];
    const passAll: DiskWriteCheck = async (facts) => void seen.push(facts);
    await host.initializeDisk(num("loop3"), passAll);
    assert.deepEqual(world.calls, ["createGptTable /dev/loop3"]);
    assert.equal(seen.length, 1);
    assert.equal(seen[0].disk.name, "/dev/loop3");
    assert.deepEqual(seen[0].signatures?.map((x) => x.type), ["ext4"]);
    assert.match(seen[0].disk.use.busy.join(), /in use by \/dev\/dm-1 \(holders\)/);
    assert.ok(Array.isArray(seen[0].disk.use.openers), "the reading lists the processes holding the nodes");
  });

  test("a check that refuses stops every write; its error is the answer", async () => {
    const { world, host, num } = setup((w) => w.partition("loop3", [16]));
    const no: DiskWriteCheck = async () => {
      throw new CsiProxyError(Code.FailedPrecondition, "the service says no");
    };
    for (const write of [() => host.initializeDisk(num("loop3"), no), () => host.createDataPartition(num("loop3"), "gpt", no), () => host.setDiskOnline(num("loop3"), false, no)]) {
      await rejectsWithCode(write(), Code.FailedPrecondition, /^the service says no$/);
    }
    assert.deepEqual(world.calls, []);
  });
});
