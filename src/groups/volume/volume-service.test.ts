/**
 * The volume service's decisions against the stateful, Windows-shaped fake host (test/doubles/fake-volume-host.ts):
 * upstream master's flows (docs/upstream-behaviour.md, Volume) and csi-proxy's refusals, decided from the
 * host's facts alone. The Linux meaning of the same decisions is tested in host/linux/volume.test.ts,
 * the Windows CIM/Win32 mapping in test/windows/cim-fixtures.test.ts.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createVolumeService, RESIZE_THRESHOLD_BYTES, sameVolumeId } from "./volume-service.ts";
import { createPathPolicy } from "../../policy/path-policy.ts";
import { FakeStorage, MICROSOFT_RESERVED, type FakeVolume } from "../../../test/doubles/fake-storage.ts";
import { FakeVolumeHost } from "../../../test/doubles/fake-volume-host.ts";
import { Code } from "../../errors.ts";
import { rejectsWithCode } from "../../../test/helpers/assert-coded.ts";

const KUBELET = "C:\\var\\lib\\kubelet";
const STAGE = `${KUBELET}\\plugins\\pd\\globalmount`;
const MiB = 1024n * 1024n;
const GiB = 1024n * MiB;

/** Disk 0: system disk with C: (NTFS); disk 1: MSR + a 10 GiB data partition whose volume is `id`, growable to 20 GiB. */
function setup(options: { tweak?: (w: FakeStorage) => void; volume?: Partial<FakeVolume>; policy?: boolean } = {}) {
  const world = new FakeStorage();
  world.addDisk({ number: 0 });
  const c = world.addPartition(0, { driveLetter: "C", volume: { fileSystem: "NTFS", sizeBytes: 100n * GiB, freeBytes: 40n * GiB } });
  world.addDisk({ number: 1, sizeBytes: 20n * GiB });
  world.addPartition(1, { type: MICROSOFT_RESERVED });
  const data = world.addPartition(1, { sizeBytes: 10n * GiB, maxBytes: 20n * GiB, volume: options.volume });
  world.dirs.set(STAGE, 0);
  options.tweak?.(world);
  const host = new FakeVolumeHost(world);
  const policy = options.policy ? createPathPolicy({ platform: "win32", allowedDirs: [KUBELET], resolve: async (p) => p }) : undefined;
  return { world, host, volume: createVolumeService({ host, policy }), id: data.volume!.id, data, systemId: c.volume!.id };
}

const ntfs = { fileSystem: "NTFS" };

test("volume ids compare case-insensitively, with or without the trailing backslash", () => {
  assert.ok(sameVolumeId("\\\\?\\Volume{ABC}\\", "\\\\?\\volume{abc}"));
  assert.ok(!sameVolumeId("\\\\?\\Volume{abc}\\", "\\\\?\\Volume{abd}\\"));
});

describe("ListVolumesOnDisk", () => {
  test("volumes of a disk, by partition; unknown disk: empty list; not a uint32: InvalidArgument", async () => {
    const s = setup();
    assert.deepEqual(await s.volume.listVolumesOnDisk({ diskNumber: 1, partitionNumber: 0 }), { volumeIds: [s.id] });
    assert.deepEqual(await s.volume.listVolumesOnDisk({ diskNumber: 1, partitionNumber: 1 }), { volumeIds: [] });
    assert.deepEqual(await s.volume.listVolumesOnDisk({ diskNumber: 7, partitionNumber: 0 }), { volumeIds: [] });
    await rejectsWithCode(s.volume.listVolumesOnDisk({ diskNumber: -3, partitionNumber: 0 }), Code.InvalidArgument);
  });
});

describe("MountVolume", () => {
  interface Case {
    name: string;
    options?: Parameters<typeof setup>[0];
    id?: (s: ReturnType<typeof setup>) => string;
    target?: string;
    code?: number;
    message?: RegExp;
    calls: (s: ReturnType<typeof setup>) => string[];
  }
  const cases: Case[] = [
    { name: "formatted volume into an existing empty directory", options: { volume: ntfs }, calls: (s) => [`mountVolume ${s.id} ${STAGE}`] },
    { name: "a RAW volume, where the host mounts those (Windows)", calls: (s) => [`mountVolume ${s.id} ${STAGE}`] },
    {
      name: "a RAW volume, where the host needs a file system: FailedPrecondition",
      options: { tweak: (w) => (w.mountRequiresFilesystem = true) },
      code: Code.FailedPrecondition,
      message: /holds no file system Windows knows, not a filesystem; format it first/,
      calls: () => [],
    },
    {
      name: "the file system is passed on where the host needs it",
      options: { volume: ntfs, tweak: (w) => (w.mountRequiresFilesystem = true) },
      calls: (s) => [`mountVolume ${s.id} ${STAGE} NTFS`],
    },
    {
      name: "same volume already there (id in another case, no trailing backslash): success, nothing done",
      options: { tweak: (w) => w.mounts.set(STAGE, { volumeId: w.disk(1).partitions[1].volume!.id.toUpperCase().replace(/\\$/, ""), description: "v" }) },
      calls: () => [],
    },
    {
      name: "another volume there: FailedPrecondition",
      options: { tweak: (w) => w.mounts.set(STAGE, { volumeId: "\\\\?\\Volume{other}\\", description: "volume \\\\?\\Volume{other}\\" }) },
      code: Code.FailedPrecondition,
      message: /Volume\{other\}.* is already mounted there/,
      calls: () => [],
    },
    { name: "missing directory: NotFound", target: `${KUBELET}\\missing`, code: Code.NotFound, message: /create the directory first/, calls: () => [] },
    { name: "non-empty directory: FailedPrecondition", options: { tweak: (w) => w.dirs.set(STAGE, 3) }, code: Code.FailedPrecondition, message: /not empty/, calls: () => [] },
    { name: "the system volume: FailedPrecondition", id: (s) => s.systemId, code: Code.FailedPrecondition, message: /holds the Windows system volume C:/, calls: () => [] },
    {
      name: "a volume mounted outside the allowed dirs (a host that reports it): FailedPrecondition",
      options: { policy: true, tweak: (w) => (w.disk(1).partitions[1].use = { mountPoints: ["D:\\"] }) },
      code: Code.FailedPrecondition,
      message: /mounted at D:\\, outside/,
      calls: () => [],
    },
    { name: "unknown volume: NotFound", id: () => "\\\\?\\Volume{nope}\\", code: Code.NotFound, calls: () => [] },
    { name: "empty id: upstream text", id: () => "", code: Code.InvalidArgument, message: /^MountVolumeRequest.VolumeId is empty$/, calls: () => [] },
    { name: "empty target: upstream text", target: "", code: Code.InvalidArgument, message: /^MountVolumeRequest.TargetPath is empty$/, calls: () => [] },
    { name: "with a path policy: a target outside is PermissionDenied", options: { policy: true }, target: "D:\\x", code: Code.PermissionDenied, calls: () => [] },
    { name: "without a path policy (upstream): any target", options: { tweak: (w) => w.dirs.set("D:\\x", 0) }, target: "D:\\x", calls: (s) => [`mountVolume ${s.id} D:\\x`] },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const s = setup(c.options);
      const p = s.volume.mountVolume({ volumeId: c.id ? c.id(s) : s.id, targetPath: c.target ?? STAGE });
      if (c.code !== undefined) await rejectsWithCode(p, c.code, c.message);
      else await p;
      assert.deepEqual(s.world.calls, c.calls(s));
    });
  }
});

describe("UnmountVolume", () => {
  const mounted = (w: FakeStorage) => w.mounts.set(STAGE, { volumeId: w.disk(1).partitions[1].volume!.id, description: "v" });
  test("flushes, then removes the mount point; a second time NotFound (not idempotent, as upstream)", async () => {
    const s = setup({ tweak: mounted });
    await s.volume.unmountVolume({ volumeId: s.id, targetPath: STAGE });
    assert.deepEqual(s.world.calls, [`flushVolume ${s.id}`, `unmountVolume ${STAGE}`]);
    await rejectsWithCode(s.volume.unmountVolume({ volumeId: s.id, targetPath: STAGE }), Code.NotFound, /is not a mount point/);
  });
  test("another volume mounted there: FailedPrecondition, nothing flushed or unmounted", async () => {
    const s = setup({ tweak: (w) => w.mounts.set(STAGE, { volumeId: "\\\\?\\Volume{other}\\", description: "volume \\\\?\\Volume{other}\\" }) });
    await rejectsWithCode(s.volume.unmountVolume({ volumeId: s.id, targetPath: STAGE }), Code.FailedPrecondition, /refusing to unmount .* not volume/);
    assert.deepEqual(s.world.calls, []);
  });
  test("something that is not a volume mounted there: FailedPrecondition", async () => {
    const s = setup({ tweak: (w) => w.mounts.set(STAGE, { volumeId: null, description: "a tmpfs filesystem (tmpfs)" }) });
    await rejectsWithCode(s.volume.unmountVolume({ volumeId: s.id, targetPath: STAGE }), Code.FailedPrecondition, /tmpfs/);
  });
  test("flush failure: nothing unmounted; unknown volume: NotFound; upstream texts for empty fields", async () => {
    const s = setup({ tweak: (w) => (mounted(w), w.failNext("flushVolume")) });
    await rejectsWithCode(s.volume.unmountVolume({ volumeId: s.id, targetPath: STAGE }), Code.Internal, /flush volume .* before unmounting/);
    assert.deepEqual(s.world.calls, [`flushVolume ${s.id}`]);
    await rejectsWithCode(s.volume.unmountVolume({ volumeId: "\\\\?\\Volume{nope}\\", targetPath: STAGE }), Code.NotFound);
    await rejectsWithCode(s.volume.unmountVolume({ volumeId: "", targetPath: STAGE }), Code.InvalidArgument, /^volume id empty$/);
    await rejectsWithCode(s.volume.unmountVolume({ volumeId: s.id, targetPath: "" }), Code.InvalidArgument, /^target path empty$/);
  });
});

describe("IsVolumeFormatted / FormatVolume", () => {
  test("IsVolumeFormatted: any file system counts; nothing or a foreign signature does not", async () => {
    assert.deepEqual(await setup().volume.isVolumeFormatted({ volumeId: setup().id }), { formatted: false });
    const s = setup({ volume: { fileSystem: "ReFS" } });
    assert.deepEqual(await s.volume.isVolumeFormatted({ volumeId: s.id }), { formatted: true });
    const f = setup({ volume: { foreign: "LVM2_member (raid)" } });
    assert.deepEqual(await f.volume.isVolumeFormatted({ volumeId: f.id }), { formatted: false });
    await rejectsWithCode(s.volume.isVolumeFormatted({ volumeId: "" }), Code.InvalidArgument, /^volume id empty$/);
  });

  const cases = [
    { name: "nothing on it: formatted with the host's default (NTFS)", calls: (id: string) => [`formatVolume ${id}`], fs: "NTFS" },
    {
      name: "the default already there, nothing uses it: formatted again (its data gone)",
      volume: { fileSystem: "NTFS", freeBytes: 1n * GiB },
      calls: (id: string) => [`formatVolume ${id}`],
      fs: "NTFS",
      freeBytes: 10n * GiB - 1024n * 1024n,
    },
    { name: "the default in another case: formatted", volume: { fileSystem: "ntfs" }, calls: (id: string) => [`formatVolume ${id}`], fs: "NTFS" },
    {
      name: "a drive letter: FailedPrecondition naming it, data intact",
      volume: { fileSystem: "NTFS", freeBytes: 1n * GiB },
      tweak: (w: FakeStorage) => (w.disk(1).partitions[1].driveLetter = "E"),
      code: Code.FailedPrecondition,
      message: /in use at E:\\/,
      calls: () => [],
      fs: "NTFS",
      freeBytes: 1n * GiB,
    },
    {
      name: "a folder access path (mounted in the kubelet dir): FailedPrecondition naming it",
      volume: ntfs,
      tweak: (w: FakeStorage) => (w.disk(1).partitions[1].accessPaths = [`${STAGE}\\`]),
      code: Code.FailedPrecondition,
      message: /in use at C:\\var\\lib\\kubelet/,
      calls: () => [],
      fs: "NTFS",
    },
    { name: "another file system: FailedPrecondition", volume: { fileSystem: "ReFS" }, code: Code.FailedPrecondition, message: /as NTFS: it already holds ReFS; formatting would destroy/, calls: () => [], fs: "ReFS" },
    { name: "a foreign signature: FailedPrecondition", volume: { foreign: "conflicting signatures (x)" }, code: Code.FailedPrecondition, message: /conflicting signatures/, calls: () => [], fs: null },
    {
      name: "busy (a host that reports it): FailedPrecondition",
      tweak: (w: FakeStorage) => (w.disk(1).partitions[1].use = { busy: ["in use as swap"] }),
      code: Code.FailedPrecondition,
      message: /disk 1 partition 2 is in use as swap/,
      calls: () => [],
      fs: null,
    },
  ];
  for (const c of cases) {
    test(`FormatVolume: ${c.name}`, async () => {
      const s = setup({ volume: c.volume, tweak: c.tweak });
      const p = s.volume.formatVolume({ volumeId: s.id });
      if (c.code !== undefined) await rejectsWithCode(p, c.code, c.message);
      else await p;
      assert.deepEqual(s.world.calls, c.calls(s.id));
      assert.equal(s.world.volume(s.id).volume.fileSystem, c.fs);
      if (c.freeBytes !== undefined) assert.equal(s.world.volume(s.id).volume.freeBytes, c.freeBytes);
    });
  }
  test("FormatVolume: the system volume is refused (even though it holds the default)", async () => {
    const s = setup();
    await rejectsWithCode(s.volume.formatVolume({ volumeId: s.systemId }), Code.FailedPrecondition, /Windows system volume C:/);
  });
});

describe("ResizeVolume", () => {
  const size = 10n * GiB;
  interface Case {
    name: string;
    sizeBytes: bigint;
    tweak?: (w: FakeStorage) => void;
    code?: number;
    message?: RegExp;
    calls: (id: string) => string[];
    reads?: string[];
  }
  const cases: Case[] = [
    { name: "0 = the largest supported size", sizeBytes: 0n, calls: (id) => [`resizePartition ${id} ${20n * GiB}`] },
    { name: "explicit size", sizeBytes: size + RESIZE_THRESHOLD_BYTES, calls: (id) => [`resizePartition ${id} ${size + RESIZE_THRESHOLD_BYTES}`] },
    { name: "growth below 100 MiB: success without change", sizeBytes: size + RESIZE_THRESHOLD_BYTES - 1n, calls: () => [] },
    { name: "shrinking: success without change", sizeBytes: size - 1n, calls: () => [] },
    { name: "0 on a partition at its largest size: success without change", sizeBytes: 0n, tweak: (w) => (w.disk(1).partitions[1].maxBytes = size), calls: () => [] },
    { name: "beyond the supported size: OutOfRange", sizeBytes: 21n * GiB, code: Code.OutOfRange, message: /at most 21474836480 bytes are available to partition 2/, calls: () => [] },
    { name: "negative: InvalidArgument, upstream text", sizeBytes: -5n, code: Code.InvalidArgument, message: /^invalid negative size -5 for volume \(/, calls: () => [] },
    {
      name: "a file system the host grows separately: grown after the partition",
      sizeBytes: 0n,
      tweak: (w) => (w.growth = "separate"),
      calls: (id) => [`resizePartition ${id} ${20n * GiB}`, `growFilesystem ${id}`],
    },
    {
      name: "a file system that cannot be grown: FailedPrecondition before any change",
      sizeBytes: 0n,
      tweak: (w) => (w.growth = { kind: "unsupported", reason: "growing vfat is not supported" }),
      code: Code.FailedPrecondition,
      message: /growing vfat is not supported/,
      calls: () => [],
    },
    {
      name: "growth that needs a missing privilege: PermissionDenied before any change",
      sizeBytes: 0n,
      tweak: (w) => (w.growth = { kind: "needs-privilege", reason: "needs CAP_X" }),
      code: Code.PermissionDenied,
      message: /needs CAP_X/,
      calls: () => [],
    },
    {
      name: "a busy volume: FailedPrecondition before any change",
      sizeBytes: 0n,
      tweak: (w) => (w.disk(1).partitions[1].use = { busy: ["in use by /dev/md0 (holders)"] }),
      code: Code.FailedPrecondition,
      calls: () => [],
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const s = setup({ tweak: c.tweak });
      const p = s.volume.resizeVolume({ volumeId: s.id, sizeBytes: c.sizeBytes });
      if (c.code !== undefined) await rejectsWithCode(p, c.code, c.message);
      else await p;
      assert.deepEqual(s.world.calls, c.calls(s.id));
    });
  }
  test("a size below the threshold does not even ask for the supported size (upstream)", async () => {
    const s = setup({ tweak: (w) => w.failNext("getPartitionSupportedSize", new Error("not asked")) });
    await s.volume.resizeVolume({ volumeId: s.id, sizeBytes: size });
  });
  test("the file system grows with the partition where the host does it (Windows)", async () => {
    const s = setup({ volume: { ...ntfs, sizeBytes: size, freeBytes: size } });
    await s.volume.resizeVolume({ volumeId: s.id, sizeBytes: 0n });
    assert.deepEqual(await s.volume.getVolumeStats({ volumeId: s.id }), { totalBytes: 20n * GiB, usedBytes: 0n });
  });
});

describe("GetVolumeStats / GetDiskNumberFromVolumeID / WriteVolumeCache", () => {
  test("stats: total and used (never negative); disk number; flush", async () => {
    const s = setup({ volume: { ...ntfs, sizeBytes: 100n, freeBytes: 30n } });
    assert.deepEqual(await s.volume.getVolumeStats({ volumeId: s.id }), { totalBytes: 100n, usedBytes: 70n });
    s.world.volume(s.id).volume.freeBytes = 200n;
    assert.deepEqual(await s.volume.getVolumeStats({ volumeId: s.id }), { totalBytes: 100n, usedBytes: 0n });
    assert.deepEqual(await s.volume.getDiskNumberFromVolumeId({ volumeId: s.id }), { diskNumber: 1 });
    await s.volume.writeVolumeCache({ volumeId: s.id });
    assert.deepEqual(s.world.calls, [`flushVolume ${s.id}`]);
    for (const call of [() => s.volume.getVolumeStats({ volumeId: "" }), () => s.volume.writeVolumeCache({ volumeId: "" }), () => s.volume.getDiskNumberFromVolumeId({ volumeId: "" })]) {
      await rejectsWithCode(call(), Code.InvalidArgument, /^volume id empty$/);
    }
    await rejectsWithCode(s.volume.writeVolumeCache({ volumeId: "\\\\?\\Volume{nope}\\" }), Code.NotFound);
  });
});

describe("GetVolumeIDFromTargetPath / GetClosestVolumeIDFromTargetPath", () => {
  const tweak = (w: FakeStorage) => {
    w.mounts.set(STAGE, { volumeId: w.disk(1).partitions[1].volume!.id, description: "v" });
    w.mounts.set(`${KUBELET}\\tmp`, { volumeId: null, description: "a tmpfs filesystem (tmpfs)" });
  };
  test("exact: the mount point's volume; a plain directory NotFound (not the C: volume); something else mounted NotFound", async () => {
    const s = setup({ tweak });
    assert.deepEqual(await s.volume.getVolumeIdFromTargetPath({ targetPath: STAGE }), { volumeId: s.id });
    await rejectsWithCode(s.volume.getVolumeIdFromTargetPath({ targetPath: KUBELET }), Code.NotFound, /^Cannot find path 'C:\\var\\lib\\kubelet' because it does not exist\.$/);
    s.world.dirs.set(`${KUBELET}\\plain`, 0);
    await rejectsWithCode(s.volume.getVolumeIdFromTargetPath({ targetPath: `${KUBELET}\\plain` }), Code.NotFound, /^C:\\var\\lib\\kubelet\\plain is not a mount point \[upstream: because it does not exist\]$/);
    await rejectsWithCode(s.volume.getVolumeIdFromTargetPath({ targetPath: `${KUBELET}\\tmp` }), Code.NotFound, /tmpfs/);
    await rejectsWithCode(s.volume.getVolumeIdFromTargetPath({ targetPath: "" }), Code.InvalidArgument, /^target path is empty$/);
  });
  test("closest: under a mount → that volume; a plain directory → the drive's volume; under something else → NotFound", async () => {
    const s = setup({ tweak });
    assert.deepEqual(await s.volume.getClosestVolumeIdFromTargetPath({ targetPath: `${STAGE}\\a\\b` }), { volumeId: s.id });
    assert.deepEqual(await s.volume.getClosestVolumeIdFromTargetPath({ targetPath: `${KUBELET}\\pods` }), { volumeId: s.systemId });
    await rejectsWithCode(s.volume.getClosestVolumeIdFromTargetPath({ targetPath: `${KUBELET}\\tmp\\x` }), Code.NotFound, /^error getting the closest volume for the path=.*tmpfs/);
    await rejectsWithCode(s.volume.getClosestVolumeIdFromTargetPath({ targetPath: "E:\\x" }), Code.NotFound, /error getting the closest volume for the path=E:\\x, err=no volume holds it/);
  });
  test("with a path policy, paths outside are PermissionDenied", async () => {
    const s = setup({ tweak, policy: true });
    await rejectsWithCode(s.volume.getVolumeIdFromTargetPath({ targetPath: "D:\\x" }), Code.PermissionDenied);
    await rejectsWithCode(s.volume.getClosestVolumeIdFromTargetPath({ targetPath: "D:\\x" }), Code.PermissionDenied);
  });
});

describe("a host that lacks the privilege", () => {
  test("every call: PermissionDenied with the host's reason, no host call", async () => {
    const s = setup({ tweak: (w) => (w.missingPrivilege = "needs a privilege") });
    const calls = [
      () => s.volume.listVolumesOnDisk({ diskNumber: 1, partitionNumber: 0 }),
      () => s.volume.mountVolume({ volumeId: s.id, targetPath: STAGE }),
      () => s.volume.unmountVolume({ volumeId: s.id, targetPath: STAGE }),
      () => s.volume.isVolumeFormatted({ volumeId: s.id }),
      () => s.volume.formatVolume({ volumeId: s.id }),
      () => s.volume.resizeVolume({ volumeId: s.id, sizeBytes: 0n }),
      () => s.volume.getVolumeStats({ volumeId: s.id }),
      () => s.volume.getDiskNumberFromVolumeId({ volumeId: s.id }),
      () => s.volume.getVolumeIdFromTargetPath({ targetPath: STAGE }),
      () => s.volume.getClosestVolumeIdFromTargetPath({ targetPath: STAGE }),
      () => s.volume.writeVolumeCache({ volumeId: s.id }),
    ];
    for (const call of calls) await rejectsWithCode(call(), Code.PermissionDenied, /^volume \w+: needs a privilege$/);
    assert.deepEqual(s.world.calls, []);
  });
});

describe("writes re-verify the volume right before the host acts (hosts with identities)", () => {
  /** The fake host with identities; `change` alters the identity from the n-th look-up on. */
  function withIdentity(s: ReturnType<typeof setup>, changeFrom: number) {
    let lookups = 0;
    const locate = s.host.locateVolume.bind(s.host);
    s.host.locateVolume = async (id: string) => ({ ...(await locate(id)), identity: ++lookups >= changeFrom ? "disk 1 partition 2 offset 99 size 1" : "disk 1 partition 2 offset 1 size 1" });
    return () => lookups;
  }
  for (const [name, call] of [
    ["FormatVolume", (s: ReturnType<typeof setup>) => s.volume.formatVolume({ volumeId: s.id })],
    ["ResizeVolume", (s: ReturnType<typeof setup>) => s.volume.resizeVolume({ volumeId: s.id, sizeBytes: 0n })],
    ["MountVolume", (s: ReturnType<typeof setup>) => s.volume.mountVolume({ volumeId: s.id, targetPath: STAGE })],
  ] as const) {
    test(`${name}: the partition moved between look-up and write → FailedPrecondition naming both, nothing written`, async () => {
      const s = setup({ volume: name === "FormatVolume" ? {} : ntfs });
      withIdentity(s, 3); // withVolume looks up twice; the third look-up is the re-verification
      await rejectsWithCode(call(s), Code.FailedPrecondition, /changed since it was looked up \(disk 1 partition 2 offset 1 size 1 → disk 1 partition 2 offset 99 size 1\)/);
      assert.deepEqual(s.world.calls, []);
    });
  }
  test("unchanged identity: the write goes ahead", async () => {
    const s = setup();
    const lookups = withIdentity(s, 99);
    await s.volume.formatVolume({ volumeId: s.id });
    assert.equal(lookups(), 3);
    assert.deepEqual(s.world.calls, [`formatVolume ${s.id}`]);
  });
});
