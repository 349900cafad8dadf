import { describe, test } from "node:test";
import assert from "node:assert/strict";
/**
 * The volume group's Linux semantics (resize, stats, target paths, the stage flow): the unified volume service (and disk service) over
 * LinuxVolumeHost / LinuxDiskHost, on the fake Linux block tools (test/helpers/linux-volume-fixture.ts).
 */
import { RESIZE_THRESHOLD_BYTES } from "../../groups/volume/volume-service.ts";
import { diskNumberOf } from "./block/disk-numbers.ts";
import { FakeBlockWorld } from "../../../test/doubles/fake-block-world.ts";
import { Code, CsiProxyError } from "../../errors.ts";
import { rejectsWithCode } from "../../../test/helpers/assert-coded.ts";
import { KUBELET, STAGE, MiB, gptId, setup, formatted } from "../../../test/helpers/linux-volume-fixture.ts";

describe("ResizeVolume", () => {
  const GiB = 1024n * MiB;
  /** loop3 grows from 1 GiB to 2 GiB (rescanned), partition 1 is 512 MiB. */
  const grown = (w: FakeBlockWorld) => {
    w.disk("loop3").pendingSizeBytes = 2n * GiB;
    w.applyPendingSize(w.disk("loop3"));
  };
  /** A second partition starting `mib` MiB after partition 1's start. */
  const secondPartitionAt = (w: FakeBlockWorld, mib: bigint) =>
    w.disk("loop3").table!.entries.push({ number: 2, startSectors: 2048n + mib * 2048n, sizeSectors: 2048n, uuid: "22222222-2222-2222-2222-222222222222", typeId: "x", minor: 77, holders: [] });
  const maxSectors = (2n * GiB) / 512n - 33n - 2048n; // to the backup GPT, 512-byte sectors
  interface Case {
    name: string;
    tweak?: (w: FakeBlockWorld) => void;
    size: bigint;
    code?: number;
    message?: RegExp;
    calls: string[];
    partitionSectors?: bigint;
    fsBytes?: bigint;
  }
  const ext4Mounted = (w: FakeBlockWorld) => {
    grown(w);
    formatted(w);
    w.mountDirect("/dev/loop3p1", STAGE);
  };
  const cases: Case[] = [
    {
      name: "size 0 fills the disk: backup GPT moved, partition grown, mounted ext4 grown online",
      tweak: ext4Mounted,
      size: 0n,
      calls: ["relocateGptBackup /dev/loop3", `resizePartition /dev/loop3 1 ${maxSectors}`, `growFilesystem /dev/loop3p1 ext4 ${STAGE}`],
      partitionSectors: maxSectors,
      fsBytes: maxSectors * 512n,
    },
    {
      name: "explicit size (rounded down to the sector)",
      tweak: ext4Mounted,
      size: 1024n * MiB + 100n,
      calls: ["relocateGptBackup /dev/loop3", "resizePartition /dev/loop3 1 2097152", `growFilesystem /dev/loop3p1 ext4 ${STAGE}`],
      partitionSectors: 2097152n,
    },
    { name: "growth below 100 MiB: success without change", tweak: ext4Mounted, size: 512n * MiB + RESIZE_THRESHOLD_BYTES - 1n, calls: [], partitionSectors: 512n * 2048n },
    { name: "shrink: success without change", tweak: ext4Mounted, size: 256n * MiB, calls: [] },
    { name: "size 0 on a full partition: success without change", tweak: (w) => (w.disk("loop3").table!.entries[0].sizeSectors = 1024n * 2048n - 2048n - 33n), size: 0n, calls: [] },
    { name: "negative size: InvalidArgument, upstream text", size: -1n, code: Code.InvalidArgument, message: /^invalid negative size -1 for volume \(/, calls: [] },
    { name: "beyond the disk: OutOfRange", tweak: grown, size: 3n * GiB, code: Code.OutOfRange, calls: [] },
    {
      name: "size 0 stops at the next partition",
      tweak: (w) => secondPartitionAt(w, 800n),
      size: 0n,
      calls: [`resizePartition /dev/loop3 1 ${800n * 2048n}`],
    },
    { name: "past the next partition: OutOfRange", tweak: (w) => secondPartitionAt(w, 800n), size: 900n * MiB, code: Code.OutOfRange, message: /at most 838860800 bytes/, calls: [] },
    {
      name: "mounted ext4 without CAP_SYS_RESOURCE: PermissionDenied before any change",
      tweak: (w) => {
        ext4Mounted(w);
        w.capabilities.delete("CAP_SYS_RESOURCE");
      },
      size: 0n,
      code: Code.PermissionDenied,
      message: /CAP_SYS_RESOURCE/,
      calls: [],
      partitionSectors: 512n * 2048n,
    },
    {
      name: "unmounted ext4: checked, then grown offline",
      tweak: (w) => {
        grown(w);
        formatted(w);
        w.capabilities.delete("CAP_SYS_RESOURCE");
      },
      size: 0n,
      calls: ["relocateGptBackup /dev/loop3", `resizePartition /dev/loop3 1 ${maxSectors}`, "checkFilesystem /dev/loop3p1 ext4", "growFilesystem /dev/loop3p1 ext4 -"],
      fsBytes: maxSectors * 512n,
    },
    {
      // A cut-short offline resize2fs leaves a filesystem e2fsck rejects; the kernel's online resize does not.
      name: "unmounted ext4 (CAP_SYS_RESOURCE): grown online through a private temporary mount, never by an offline rewrite",
      tweak: (w) => {
        grown(w);
        formatted(w);
      },
      size: 0n,
      calls: [
        "relocateGptBackup /dev/loop3",
        `resizePartition /dev/loop3 1 ${maxSectors}`,
        "makeTempDir",
        "mount /dev/loop3p1 /run/fake-csi-proxy-tmp-1 ext4",
        "growFilesystem /dev/loop3p1 ext4 /run/fake-csi-proxy-tmp-1",
        "unmount /run/fake-csi-proxy-tmp-1",
        "removeTempDir /run/fake-csi-proxy-tmp-1",
      ],
      fsBytes: maxSectors * 512n,
    },
    {
      name: "unmounted xfs: grown through a private temporary mount",
      tweak: (w) => {
        grown(w);
        formatted(w, "xfs");
      },
      size: 0n,
      calls: [
        "relocateGptBackup /dev/loop3",
        `resizePartition /dev/loop3 1 ${maxSectors}`,
        "makeTempDir",
        "mount /dev/loop3p1 /run/fake-csi-proxy-tmp-1 xfs",
        "growFilesystem /dev/loop3p1 xfs /run/fake-csi-proxy-tmp-1",
        "unmount /run/fake-csi-proxy-tmp-1",
        "removeTempDir /run/fake-csi-proxy-tmp-1",
      ],
      fsBytes: maxSectors * 512n,
    },
    {
      name: "mounted xfs: grown online",
      tweak: (w) => {
        grown(w);
        formatted(w, "xfs");
        w.mountDirect("/dev/loop3p1", STAGE);
        w.capabilities.delete("CAP_SYS_RESOURCE");
      },
      size: 0n,
      calls: ["relocateGptBackup /dev/loop3", `resizePartition /dev/loop3 1 ${maxSectors}`, `growFilesystem /dev/loop3p1 xfs ${STAGE}`],
    },
    { name: "unformatted: only the partition grows", tweak: grown, size: 0n, calls: ["relocateGptBackup /dev/loop3", `resizePartition /dev/loop3 1 ${maxSectors}`] },
    {
      name: "vfat: FailedPrecondition before any change",
      tweak: (w) => {
        grown(w);
        formatted(w, "vfat");
      },
      size: 0n,
      code: Code.FailedPrecondition,
      message: /growing vfat is not supported/,
      calls: [],
    },
    {
      name: "mounted outside the kubelet dir: FailedPrecondition",
      tweak: (w) => {
        grown(w);
        formatted(w);
        w.mountDirect("/dev/loop3p1", "/mnt/admin");
      },
      size: 0n,
      code: Code.FailedPrecondition,
      calls: [],
    },
    { name: "offline disk: FailedPrecondition", tweak: (w) => (grown(w), w.marks.push({ major: 7, minor: 3, diskSeq: "1", setReadOnly: true }), (w.disk("loop3").readOnly = true)), size: 0n, code: Code.FailedPrecondition, calls: [] },
    { name: "whole-disk volume: FailedPrecondition", size: 0n, code: Code.FailedPrecondition, message: /whole-disk/, calls: [] },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const s = setup({ tweak: c.tweak });
      const id = c.name.startsWith("whole-disk") ? "\\\\?\\Volume{dev-254-0}\\" : s.id;
      const p = s.volume.resizeVolume({ volumeId: id, sizeBytes: c.size });
      if (c.code !== undefined) await rejectsWithCode(p, c.code, c.message);
      else await p;
      assert.deepEqual(s.world.calls, c.calls);
      if (c.partitionSectors !== undefined) assert.equal(s.world.disk("loop3").table!.entries[0].sizeSectors, c.partitionSectors);
      if (c.fsBytes !== undefined) assert.equal(s.world.fsOf(s.dev).sizeBytes, c.fsBytes);
    });
  }
  test("a temporary mount that cannot be unmounted is named in the answer and unmounted by the retry", async () => {
    const lines: string[] = [];
    const log = { info: (m: string) => lines.push(`I ${m}`), warning: (m: string) => lines.push(`W ${m}`) };
    const s = setup({ tweak: (w) => (grown(w), formatted(w, "xfs"), w.failNext("unmount")), log });
    await rejectsWithCode(
      s.volume.resizeVolume({ volumeId: s.id, sizeBytes: 0n }),
      Code.Internal,
      /\/dev\/loop3p1 stays mounted at \/run\/fake-csi-proxy-tmp-1 \(the temporary mount for growing it\); csi-proxy retries unmounting it \(7 attempts within 118 s\)/,
    );
    assert.ok(s.world.mounts.some((m) => m.mountPoint === "/run/fake-csi-proxy-tmp-1"), "left where the answer says");
    for (let i = 0; i < 100 && lines.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(lines, ["I cleanup retry 1/7 of temporary mount of /dev/loop3p1 at /run/fake-csi-proxy-tmp-1: done, nothing left"]);
    assert.ok(!s.world.mounts.some((m) => m.mountPoint === "/run/fake-csi-proxy-tmp-1"), "the retry unmounted it");
    assert.deepEqual(s.world.calls.slice(-3), ["unmount /run/fake-csi-proxy-tmp-1", "unmount /run/fake-csi-proxy-tmp-1", "removeTempDir /run/fake-csi-proxy-tmp-1"]);
  });
  test("failure growing the filesystem says the partition was grown", async () => {
    const s = setup({ tweak: (w) => (ext4Mounted(w), w.failNext("growFilesystem")) });
    await rejectsWithCode(s.volume.resizeVolume({ volumeId: s.id, sizeBytes: 0n }), Code.Internal, /partition was grown but growing the filesystem failed/);
  });
});

describe("GetVolumeStats / GetDiskNumberFromVolumeID / WriteVolumeCache", () => {
  test("stats of a mounted volume come from statfs", async () => {
    const s = setup({ tweak: (w) => (formatted(w), w.mountDirect("/dev/loop3p1", STAGE)) });
    assert.deepEqual(await s.volume.getVolumeStats({ volumeId: s.id }), { totalBytes: 512n * MiB, usedBytes: 10n * MiB });
    assert.deepEqual(s.world.calls, []);
  });
  test("stats of an unmounted volume come from the superblock", async () => {
    const s = setup({ tweak: (w) => formatted(w, "xfs") });
    assert.deepEqual(await s.volume.getVolumeStats({ volumeId: s.id }), { totalBytes: 512n * MiB, usedBytes: 10n * MiB });
  });
  test("stats of an unformatted volume: FailedPrecondition", async () => {
    const s = setup();
    await rejectsWithCode(s.volume.getVolumeStats({ volumeId: s.id }), Code.FailedPrecondition, /no signature/);
  });
  test("disk number of a partition's volume and of a whole-disk volume", async () => {
    const s = setup();
    assert.deepEqual(await s.volume.getDiskNumberFromVolumeId({ volumeId: s.id }), { diskNumber: diskNumberOf({ major: 7, minor: 3 }) });
    assert.deepEqual(await s.volume.getDiskNumberFromVolumeId({ volumeId: "\\\\?\\Volume{dev-254-0}\\" }), { diskNumber: 266338304 });
    await rejectsWithCode(s.volume.getDiskNumberFromVolumeId({ volumeId: "" }), Code.InvalidArgument);
    await rejectsWithCode(s.volume.getDiskNumberFromVolumeId({ volumeId: gptId(9) }), Code.NotFound);
  });
  test("two partitions sharing a PARTUUID (cloned disk): FailedPrecondition, never a guess", async () => {
    const s = setup({
      tweak: (w) => {
        w.addLoop(4, "/images/clone.img");
        w.partition("loop4", [512]);
        w.disk("loop4").table!.entries[0].uuid = w.disk("loop3").table!.entries[0].uuid;
      },
    });
    await rejectsWithCode(s.volume.formatVolume({ volumeId: s.id }), Code.FailedPrecondition, /ambiguous/);
    assert.deepEqual(s.world.calls, []);
  });
  test("WriteVolumeCache: an unmounted volume's device is fsynced, a mounted one's filesystem synced (syncfs)", async () => {
    const s = setup({ tweak: formatted });
    await s.volume.writeVolumeCache({ volumeId: s.id });
    s.world.mountDirect("/dev/loop3p1", STAGE);
    await s.volume.writeVolumeCache({ volumeId: s.id });
    assert.deepEqual(s.world.calls, ["fsync /dev/loop3p1", `syncfs ${STAGE}`]);
  });
  test("a write-back failure is DataLoss once per mount: the next flush of that mount passes, and UnmountVolume then unmounts", async () => {
    const warnings: string[] = [];
    const s = setup({ tweak: formatted, log: { info() {}, warning: (m) => warnings.push(m) } });
    s.world.mountDirect("/dev/loop3p1", STAGE);
    const eio = () => new CsiProxyError(Code.DataLoss, "write back the filesystem: EIO (input/output error)");
    s.world.failNext("syncfs", eio());
    await rejectsWithCode(s.volume.writeVolumeCache({ volumeId: s.id }), Code.DataLoss, /flush volume .*Volume\{.*loop3p1.*EIO.*not yet on disk may be lost/);
    s.world.failNext("syncfs", eio());
    await s.volume.writeVolumeCache({ volumeId: s.id }); // the same mount still failing: reported already
    assert.equal(warnings.length, 1);
    // A failure after a successful flush is a new one.
    await s.volume.writeVolumeCache({ volumeId: s.id });
    s.world.failNext("syncfs", eio());
    await rejectsWithCode(s.volume.unmountVolume({ volumeId: s.id, targetPath: STAGE }), Code.DataLoss, /flush volume .* before unmounting.*may be lost/);
    assert.ok(s.world.mounts.some((m) => m.mountPoint === STAGE), "still mounted after the failed flush");
    s.world.failNext("syncfs", eio());
    await s.volume.unmountVolume({ volumeId: s.id, targetPath: STAGE });
    assert.ok(!s.world.mounts.some((m) => m.mountPoint === STAGE), "the second UnmountVolume unmounts");
    // Mounted again: a failure of the new mount is reported again.
    s.world.mountDirect("/dev/loop3p1", STAGE);
    s.world.failNext("syncfs", eio());
    await rejectsWithCode(s.volume.writeVolumeCache({ volumeId: s.id }), Code.DataLoss);
  });
});

describe("GetVolumeIDFromTargetPath / GetClosestVolumeIDFromTargetPath", () => {
  const mounted = (w: FakeBlockWorld) => {
    formatted(w);
    w.mountDirect("/dev/loop3p1", STAGE);
    w.mounts.push({ major: 0, minor: 50, mountPoint: `${KUBELET}/pods/tmp`, fsType: "tmpfs", source: "tmpfs" });
  };
  const cases = [
    { name: "exact: the mount point's volume", fn: "exact", path: STAGE, want: gptId(1) },
    { name: "exact: a directory that is not a mount point → NotFound", fn: "exact", path: KUBELET, code: Code.NotFound, message: /because it does not exist/ },
    { name: "exact: a tmpfs mount → NotFound", fn: "exact", path: `${KUBELET}/pods/tmp`, code: Code.NotFound, message: /tmpfs/ },
    { name: "exact: outside the kubelet dir → PermissionDenied", fn: "exact", path: "/mnt/admin", code: Code.PermissionDenied },
    { name: "exact: empty → InvalidArgument (upstream text)", fn: "exact", path: "", code: Code.InvalidArgument, message: /^target path is empty$/ },
    { name: "closest: a nested path under the mount", fn: "closest", path: `${STAGE}/a/b`, want: gptId(1) },
    { name: "closest: a plain kubelet directory → the root volume", fn: "closest", path: `${KUBELET}/pods`, want: "\\\\?\\Volume{dev-254-0}\\" },
    { name: "closest: under tmpfs → NotFound", fn: "closest", path: `${KUBELET}/pods/tmp/x`, code: Code.NotFound, message: /error getting the closest volume/ },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const s = setup({ tweak: mounted });
      const p =
        c.fn === "exact" ? s.volume.getVolumeIdFromTargetPath({ targetPath: c.path }) : s.volume.getClosestVolumeIdFromTargetPath({ targetPath: c.path });
      if (c.code !== undefined) await rejectsWithCode(p, c.code, c.message);
      else assert.deepEqual(await p, { volumeId: c.want });
    });
  }
});

describe("the driver stage flow against the fakes (disk + volume services sharing one world)", () => {
  test("partition → list → format → mount → id round trip → grow → resize → unmount", async () => {
    const s = setup({ tweak: (w) => w.addLoop(5, "/images/flow.img") });
    const ids = await s.disk.listDiskIds();
    const diskNumber = [...ids].find(([, v]) => v.serialNumber === "/images/flow.img")![0];
    await s.disk.setDiskState({ diskNumber, isOnline: true });
    await s.disk.partitionDisk({ diskNumber });
    const { volumeIds } = await s.volume.listVolumesOnDisk({ diskNumber, partitionNumber: 0 });
    assert.equal(volumeIds.length, 1);
    const [volumeId] = volumeIds;
    assert.deepEqual(await s.volume.isVolumeFormatted({ volumeId }), { formatted: false });
    await s.volume.formatVolume({ volumeId });
    assert.deepEqual(await s.volume.isVolumeFormatted({ volumeId }), { formatted: true });
    await s.volume.mountVolume({ volumeId, targetPath: STAGE });
    await s.volume.mountVolume({ volumeId, targetPath: STAGE });
    assert.deepEqual(await s.volume.getVolumeIdFromTargetPath({ targetPath: STAGE }), { volumeId });
    assert.deepEqual(await s.volume.getDiskNumberFromVolumeId({ volumeId }), { diskNumber });
    await s.volume.writeVolumeCache({ volumeId });
    const before = await s.volume.getVolumeStats({ volumeId });
    s.world.growMedium("loop5", 2048n * MiB);
    await s.disk.rescan();
    await s.volume.resizeVolume({ volumeId, sizeBytes: 0n });
    const after = await s.volume.getVolumeStats({ volumeId });
    assert.ok(after.totalBytes > before.totalBytes + 900n * MiB, `${after.totalBytes} vs ${before.totalBytes}`);
    await s.volume.unmountVolume({ volumeId, targetPath: STAGE });
    await rejectsWithCode(s.volume.unmountVolume({ volumeId, targetPath: STAGE }), Code.NotFound);
  });
});
