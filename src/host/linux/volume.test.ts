import { describe, test } from "node:test";
import assert from "node:assert/strict";
/**
 * The volume group's Linux semantics: the unified volume service (and disk service) over
 * LinuxVolumeHost / LinuxDiskHost, on the fake Linux block tools.
 */
import { createVolumeService, RESIZE_THRESHOLD_BYTES } from "../../groups/volume/volume-service.ts";
import type { ManagedFsType } from "./block-types.ts";
import { createDiskService } from "../../groups/disk/disk-service.ts";
import { diskNumberOf } from "./disk-numbers.ts";
import { parseVolumeId } from "./volume-ids.ts";
import { LinuxDiskHost } from "./disk.ts";
import { LinuxVolumeHost } from "./volume.ts";
import { createPathPolicy } from "../../policy/path-policy.ts";
import { volumeWriteCheck } from "../../policy/block-policy.ts";
import type { VolumeFacts, WriteCheck } from "../../groups/volume/host-api.ts";
import { FakeBlockWorld } from "../../../test/doubles/fake-block-world.ts";
import { FakeBlockTools } from "../../../test/doubles/fake-block-tools.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import { Code, CsiProxyError } from "../../errors.ts";
import { rejectsWithCode } from "../../../test/helpers/assert-coded.ts";

const KUBELET = "/var/lib/kubelet";
const STAGE = `${KUBELET}/plugins/kubernetes.io/csi/pv/globalmount`;
const MiB = 1024n * 1024n;
const MSR = "e3c9e316-0b5c-4db8-817d-f92df00215ae";
/** Volume ids the fake gives GPT partitions, in creation order. */
const gptId = (n: number) => `\\\\?\\Volume{00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}}\\`;

/**
 * Root disk vda (whole-disk ext4 on /), loop3 with one 512 MiB partition (volume gptId(1), /dev/loop3p1)
 * on a 1 GiB disk, an empty staging directory under the kubelet dir.
 */
function setup(options: { tweak?: (w: FakeBlockWorld) => void; fsType?: ManagedFsType; log?: { info(m: string): void; warning(m: string): void } } = {}) {
  const world = new FakeBlockWorld();
  world.addDisk({ name: "vda", major: 254, minor: 0, sizeBytes: 256n * 1024n * MiB });
  world.putFilesystem("/dev/vda", "ext4");
  world.mountDirect("/dev/vda", "/");
  world.addLoop(3, "/images/a.img");
  world.partition("loop3", [512]);
  world.mkdir(STAGE);
  world.mkdir("/mnt/admin");
  options.tweak?.(world);
  const tools = new FakeBlockTools(world);
  const host = new LinuxVolumeHost(tools, { defaultFileSystem: options.fsType ?? "ext4", log: options.log });
  const policy = createPathPolicy({ platform: "linux", allowedDirs: [KUBELET], resolve: async (p) => p });
  const locks = createKeyedMutex();
  const volume = createVolumeService({ host, policy, locks });
  const disk = createDiskService({ host: new LinuxDiskHost(tools), policy, locks });
  return { world, host, volume, disk, id: gptId(1), dev: "/dev/loop3p1" };
}

const formatted = (w: FakeBlockWorld, type = "ext4") => w.putFilesystem("/dev/loop3p1", type, ["precious"]);

describe("volume ids", () => {
  const cases = [
    { name: "GPT PARTUUID", id: "\\\\?\\Volume{0FC63DAF-8483-4772-8E79-3D69D8477DE4}\\", want: { kind: "uuid", uuid: "0fc63daf-8483-4772-8e79-3d69d8477de4" } },
    { name: "without trailing backslash", id: "\\\\?\\Volume{0fc63daf-8483-4772-8e79-3d69d8477de4}", want: { kind: "uuid", uuid: "0fc63daf-8483-4772-8e79-3d69d8477de4" } },
    { name: "MBR PARTUUID", id: "\\\\?\\Volume{0badcafe-01}\\", want: { kind: "uuid", uuid: "0badcafe-01" } },
    { name: "device number", id: "\\\\?\\Volume{dev-254-0}\\", want: { kind: "dev", dev: { major: 254, minor: 0 } } },
  ];
  for (const c of cases) test(`parses ${c.name}`, () => assert.deepEqual(parseVolumeId(c.id), c.want));
  for (const bad of ["-1", "Volume{x}", "\\\\?\\Volume{}\\", "\\\\?\\Volume{../../etc}\\", "C:\\"]) {
    test(`rejects ${JSON.stringify(bad)} as InvalidArgument`, () => assert.throws(() => parseVolumeId(bad), { code: Code.InvalidArgument }));
  }
  test("ids match drivers' regex Volume\\{[\\w-]*\\}", () => {
    assert.match(gptId(1), /Volume\{[\w-]*\}/);
    assert.match("\\\\?\\Volume{dev-254-0}\\", /Volume\{[\w-]*\}/);
  });
});

describe("ListVolumesOnDisk", () => {
  const cases = [
    { name: "one data partition", want: [gptId(1)] },
    {
      name: "MSR and BIOS-boot partitions are not volumes; partition number filters",
      tweak: (w: FakeBlockWorld) => {
        w.addLoop(4, "/b.img");
        w.partition("loop4", [16], "gpt", MSR);
        w.disk("loop4").table!.entries.push({ ...w.disk("loop4").table!.entries[0], number: 2, typeId: "21686148-6449-6e6f-744e-656564454649", uuid: "x" });
        w.disk("loop4").table!.entries.push({ ...w.disk("loop4").table!.entries[0], number: 3, typeId: "0fc63daf-8483-4772-8e79-3d69d8477de4", uuid: "11111111-1111-1111-1111-111111111111" });
      },
      disk: "loop4",
      want: ["\\\\?\\Volume{11111111-1111-1111-1111-111111111111}\\"],
    },
    { name: "partition number 1 of loop3", partitionNumber: 1, want: [gptId(1)] },
    { name: "partition number 2 of loop3 (none)", partitionNumber: 2, want: [] },
    { name: "raw disk: none", tweak: (w: FakeBlockWorld) => w.addLoop(4, "/b.img"), disk: "loop4", want: [] },
    { name: "unknown disk: empty list, no error (upstream)", disk: "none", want: [] },
    { name: "whole-disk filesystem: one dev-numbered volume", disk: "vda", want: ["\\\\?\\Volume{dev-254-0}\\"] },
    {
      name: "MBR partitions: PARTUUID <signature>-<nn>",
      tweak: (w: FakeBlockWorld) => {
        w.addLoop(4, "/b.img");
        w.partition("loop4", [10, 10], "dos");
      },
      disk: "loop4",
      want: ["\\\\?\\Volume{0badcafe-01}\\", "\\\\?\\Volume{0badcafe-02}\\"],
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const s = setup({ tweak: c.tweak });
      const n = c.disk === "none" ? 4242 : diskNumberOf(s.world.disk(c.disk ?? "loop3"));
      assert.deepEqual(await s.volume.listVolumesOnDisk({ diskNumber: n, partitionNumber: c.partitionNumber ?? 0 }), { volumeIds: c.want });
    });
  }
});

describe("MountVolume", () => {
  interface Case {
    name: string;
    tweak?: (w: FakeBlockWorld) => void;
    id?: string;
    target?: string;
    code?: number;
    message?: RegExp;
    calls: string[];
  }
  const mountCall = `mount /dev/loop3p1 ${STAGE} ext4`;
  const cases: Case[] = [
    { name: "formatted volume into an empty staging dir", tweak: formatted, calls: [mountCall] },
    {
      name: "same volume already at the path: success, nothing done (idempotent)",
      tweak: (w) => {
        formatted(w);
        w.mountDirect("/dev/loop3p1", STAGE);
      },
      calls: [],
    },
    {
      name: "another filesystem already at the path: FailedPrecondition",
      tweak: (w) => {
        formatted(w);
        w.mountDirect("/dev/vda", STAGE);
      },
      code: Code.FailedPrecondition,
      message: /Volume\{dev-254-0\}.* already mounted there/,
      calls: [],
    },
    { name: "empty volume id: upstream text", id: "", code: Code.InvalidArgument, message: /^MountVolumeRequest.VolumeId is empty$/, calls: [] },
    { name: "empty target path: upstream text", target: "", code: Code.InvalidArgument, message: /^MountVolumeRequest.TargetPath is empty$/, calls: [] },
    { name: "target outside the kubelet dir: PermissionDenied", tweak: formatted, target: "/mnt/admin", code: Code.PermissionDenied, calls: [] },
    { name: "target with .. escaping: PermissionDenied", tweak: formatted, target: `${KUBELET}/../../etc`, code: Code.PermissionDenied, calls: [] },
    { name: "unknown volume: NotFound", id: gptId(99), code: Code.NotFound, calls: [] },
    { name: "malformed volume id: InvalidArgument", id: "-1", code: Code.InvalidArgument, calls: [] },
    { name: "missing target directory: NotFound", tweak: formatted, target: `${KUBELET}/nope`, code: Code.NotFound, calls: [] },
    {
      name: "non-empty target directory: FailedPrecondition",
      tweak: (w) => {
        formatted(w);
        w.mkdir(STAGE, 2);
      },
      code: Code.FailedPrecondition,
      message: /not empty/,
      calls: [],
    },
    { name: "unformatted volume: FailedPrecondition", code: Code.FailedPrecondition, message: /no signature, not a filesystem/, calls: [] },
    {
      name: "offline disk: FailedPrecondition",
      tweak: (w) => {
        formatted(w);
        w.marks.push({ major: 7, minor: 3, diskSeq: "1", setReadOnly: true });
        w.disk("loop3").readOnly = true;
      },
      code: Code.FailedPrecondition,
      message: /offline/,
      calls: [],
    },
    {
      name: "volume mounted outside the kubelet dir: FailedPrecondition",
      tweak: (w) => {
        formatted(w);
        w.mountDirect("/dev/loop3p1", "/mnt/admin");
      },
      code: Code.FailedPrecondition,
      message: /mounted at \/mnt\/admin, outside/,
      calls: [],
    },
    {
      name: "already mounted at another kubelet path: a second mount is fine",
      tweak: (w) => {
        formatted(w);
        w.mkdir(`${KUBELET}/other`);
        w.mountDirect("/dev/loop3p1", `${KUBELET}/other`);
      },
      calls: [mountCall],
    },
    { name: "the root filesystem's volume: FailedPrecondition", id: "\\\\?\\Volume{dev-254-0}\\", code: Code.FailedPrecondition, message: /root filesystem/, calls: [] },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const s = setup({ tweak: c.tweak });
      const p = s.volume.mountVolume({ volumeId: c.id ?? s.id, targetPath: c.target ?? STAGE });
      if (c.code !== undefined) await rejectsWithCode(p, c.code, c.message);
      else await p;
      assert.deepEqual(s.world.calls, c.calls);
    });
  }
});

describe("UnmountVolume", () => {
  const mounted = (w: FakeBlockWorld) => {
    formatted(w);
    w.mountDirect("/dev/loop3p1", STAGE);
  };
  const cases = [
    { name: "flushes (syncfs of the mounted filesystem), then unmounts", tweak: mounted, calls: [`syncfs ${STAGE}`, `unmount ${STAGE}`] },
    { name: "not a mount point: NotFound (not idempotent, as upstream)", tweak: formatted, code: Code.NotFound, message: /not a mount point/, calls: [] },
    {
      name: "another volume mounted there: FailedPrecondition, left mounted",
      tweak: (w: FakeBlockWorld) => {
        formatted(w);
        w.mountDirect("/dev/vda", STAGE);
      },
      code: Code.FailedPrecondition,
      message: /refusing to unmount .* not volume/,
      calls: [],
    },
    { name: "path outside the kubelet dir: PermissionDenied", tweak: mounted, target: "/mnt/admin", code: Code.PermissionDenied, calls: [] },
    { name: "unknown volume: NotFound, nothing unmounted", tweak: mounted, id: gptId(42), code: Code.NotFound, calls: [] },
    { name: "empty id: upstream text", id: "", code: Code.InvalidArgument, message: /^volume id empty$/, calls: [] },
    { name: "empty path: upstream text", target: "", code: Code.InvalidArgument, message: /^target path empty$/, calls: [] },
    {
      name: "flush failure: nothing unmounted",
      tweak: (w: FakeBlockWorld) => {
        mounted(w);
        w.failNext("syncfs");
      },
      code: Code.Internal,
      message: /flush volume/,
      calls: [`syncfs ${STAGE}`],
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const s = setup({ tweak: c.tweak });
      const p = s.volume.unmountVolume({ volumeId: c.id ?? s.id, targetPath: c.target ?? STAGE });
      if (c.code !== undefined) await rejectsWithCode(p, c.code, c.message);
      else await p;
      assert.deepEqual(s.world.calls, c.calls);
    });
  }
});

describe("IsVolumeFormatted / FormatVolume", () => {
  const formattedCases = [
    { name: "empty partition: false", want: false },
    { name: "ext4: true", tweak: formatted, want: true },
    { name: "xfs: true (any filesystem counts)", tweak: (w: FakeBlockWorld) => formatted(w, "xfs"), want: true },
    { name: "swap signature: false (not a filesystem)", tweak: (w: FakeBlockWorld) => w.setContent("/dev/loop3p1", { kind: "signature", type: "swap", usage: "other" }), want: false },
    { name: "conflicting signatures: false", tweak: (w: FakeBlockWorld) => w.setContent("/dev/loop3p1", { kind: "ambivalent" }), want: false },
  ];
  for (const c of formattedCases) {
    test(`IsVolumeFormatted: ${c.name}`, async () => {
      const s = setup({ tweak: c.tweak });
      assert.deepEqual(await s.volume.isVolumeFormatted({ volumeId: s.id }), { formatted: c.want });
    });
  }
  test("IsVolumeFormatted: empty id InvalidArgument, unknown NotFound", async () => {
    const s = setup();
    await rejectsWithCode(s.volume.isVolumeFormatted({ volumeId: "" }), Code.InvalidArgument, /^volume id empty$/);
    await rejectsWithCode(s.volume.isVolumeFormatted({ volumeId: gptId(7) }), Code.NotFound);
  });

  interface Case {
    name: string;
    fsType?: ManagedFsType;
    tweak?: (w: FakeBlockWorld) => void;
    code?: number;
    message?: RegExp;
    calls: string[];
    /** Data on the device afterwards (undefined: no filesystem expected). */
    data?: string[];
  }
  const cases: Case[] = [
    { name: "empty: mkfs.ext4 (default)", calls: ["makeFilesystem /dev/loop3p1 ext4"], data: [] },
    { name: "empty with -default-fs-type xfs: mkfs.xfs", fsType: "xfs", calls: ["makeFilesystem /dev/loop3p1 xfs"], data: [] },
    { name: "already ext4, nothing uses it: formatted again, its data gone", tweak: formatted, calls: ["makeFilesystem /dev/loop3p1 ext4 replace"], data: [] },
    { name: "already xfs with -default-fs-type xfs: mkfs.xfs replaces it", fsType: "xfs", tweak: (w) => formatted(w, "xfs"), calls: ["makeFilesystem /dev/loop3p1 xfs replace"], data: [] },
    {
      name: "already ext4 and mounted in the kubelet dir: FailedPrecondition naming the mount, data intact",
      tweak: (w) => {
        formatted(w);
        w.mountDirect("/dev/loop3p1", STAGE);
      },
      code: Code.FailedPrecondition,
      message: /loop3p1 is mounted at \/var\/lib\/kubelet\/plugins\/kubernetes.io\/csi\/pv\/globalmount; unmount it first/,
      calls: [],
      data: ["precious"],
    },
    {
      name: "ext4 mounted only in another mount namespace: FailedPrecondition naming it and the pid, data intact",
      tweak: (w) => {
        formatted(w);
        w.otherNamespaceMounts.push({ major: 259, minor: 0, pid: 4242, mountPoint: "/data" });
      },
      code: Code.FailedPrecondition,
      message: /refusing to format \/dev\/loop3p1: it is mounted at \/data \(mount namespace of pid 4242\)/,
      calls: [],
      data: ["precious"],
    },
    {
      name: "ext3 when ext4 is asked: FailedPrecondition (another type, even of the same family)",
      tweak: (w) => formatted(w, "ext3"),
      code: Code.FailedPrecondition,
      message: /already holds ext3; formatting would destroy/,
      calls: [],
      data: ["precious"],
    },
    {
      name: "xfs when ext4 is asked: FailedPrecondition, data intact",
      tweak: (w) => formatted(w, "xfs"),
      code: Code.FailedPrecondition,
      message: /already holds xfs; formatting would destroy/,
      calls: [],
      data: ["precious"],
    },
    {
      name: "LVM member: FailedPrecondition",
      tweak: (w) => w.setContent("/dev/loop3p1", { kind: "signature", type: "LVM2_member", usage: "raid" }),
      code: Code.FailedPrecondition,
      message: /LVM2_member \(raid\)/,
      calls: [],
    },
    { name: "conflicting signatures: FailedPrecondition", tweak: (w) => w.setContent("/dev/loop3p1", { kind: "ambivalent" }), code: Code.FailedPrecondition, calls: [] },
    {
      name: "mounted outside the kubelet dir: FailedPrecondition, data intact",
      tweak: (w) => {
        formatted(w, "xfs");
        w.mountDirect("/dev/loop3p1", "/mnt/admin");
      },
      code: Code.FailedPrecondition,
      message: /mounted at \/mnt\/admin/,
      calls: [],
      data: ["precious"],
    },
    { name: "holders on the partition: FailedPrecondition", tweak: (w) => (w.disk("loop3").table!.entries[0].holders = ["dm-2"]), code: Code.FailedPrecondition, calls: [] },
    { name: "holders on the whole disk: FailedPrecondition", tweak: (w) => (w.disk("loop3").holders = ["dm-3"]), code: Code.FailedPrecondition, message: /dm-3/, calls: [] },
    { name: "swap: FailedPrecondition", tweak: (w) => w.swaps.push({ major: 259, minor: 0 }), code: Code.FailedPrecondition, message: /swap/, calls: [] },
    { name: "offline disk: FailedPrecondition", tweak: (w) => w.marks.push({ major: 7, minor: 3, diskSeq: "1", setReadOnly: false }), code: Code.FailedPrecondition, calls: [] },
    { name: "empty id", tweak: undefined, code: Code.InvalidArgument, calls: [] },
  ];
  for (const c of cases) {
    test(`FormatVolume: ${c.name}`, async () => {
      const s = setup({ tweak: c.tweak, fsType: c.fsType });
      const p = s.volume.formatVolume({ volumeId: c.name === "empty id" ? "" : s.id });
      if (c.code !== undefined) await rejectsWithCode(p, c.code, c.message);
      else await p;
      assert.deepEqual(s.world.calls, c.calls);
      if (c.data) assert.deepEqual(s.world.fsOf(s.dev).data, c.data);
    });
  }
  test("FormatVolume: the root filesystem's volume is refused", async () => {
    const s = setup();
    await rejectsWithCode(s.volume.formatVolume({ volumeId: "\\\\?\\Volume{dev-254-0}\\" }), Code.FailedPrecondition, /root filesystem/);
  });
});

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

describe("not root", () => {
  const id = gptId(1);
  const calls: [string, (v: ReturnType<typeof createVolumeService>) => Promise<unknown>][] = [
    ["ListVolumesOnDisk", (v) => v.listVolumesOnDisk({ diskNumber: 1, partitionNumber: 0 })],
    ["MountVolume", (v) => v.mountVolume({ volumeId: id, targetPath: STAGE })],
    ["UnmountVolume", (v) => v.unmountVolume({ volumeId: id, targetPath: STAGE })],
    ["IsVolumeFormatted", (v) => v.isVolumeFormatted({ volumeId: id })],
    ["FormatVolume", (v) => v.formatVolume({ volumeId: id })],
    ["ResizeVolume", (v) => v.resizeVolume({ volumeId: id, sizeBytes: 0n })],
    ["GetVolumeStats", (v) => v.getVolumeStats({ volumeId: id })],
    ["GetDiskNumberFromVolumeID", (v) => v.getDiskNumberFromVolumeId({ volumeId: id })],
    ["GetVolumeIDFromTargetPath", (v) => v.getVolumeIdFromTargetPath({ targetPath: STAGE })],
    ["GetClosestVolumeIDFromTargetPath", (v) => v.getClosestVolumeIdFromTargetPath({ targetPath: STAGE })],
    ["WriteVolumeCache", (v) => v.writeVolumeCache({ volumeId: id })],
  ];
  for (const [name, call] of calls) {
    test(`${name}: PermissionDenied saying root is required`, async () => {
      const s = setup({ tweak: (w) => (w.uid = 1000) });
      const volume = createVolumeService({ host: s.host, policy: { check: async (p) => p } });
      await rejectsWithCode(call(volume), Code.PermissionDenied, /must run as root.*uid 1000/);
      assert.deepEqual(s.world.calls, []);
    });
  }
});

describe("writes re-verify the volume at the moment of acting", () => {
  test("an identity that differs from the volume's now: FailedPrecondition, nothing written", async () => {
    const { world, host, id } = setup();
    const loc = await host.locateVolume(id);
    assert.match(loc.identity ?? "", /^259:\d+ diskseq .* sectors \d+\+\d+$/);
    const rule = (what: string) => ({ what, allowMountsInside: false, isAllowed: async () => false, format: "ext4" });
    await rejectsWithCode(host.formatVolume(id, volumeWriteCheck({ identity: loc.identity!.replace(/sectors \d+/, "sectors 1") }, rule("format"))), Code.FailedPrecondition, /changed since it was looked up/);
    await rejectsWithCode(host.mountVolume(id, STAGE, "ext4", volumeWriteCheck({ identity: "7:3 diskseq 1 sectors 1+1" }, rule("mount"))), Code.FailedPrecondition, /changed since it was looked up/);
    assert.deepEqual(world.calls, []);
    await host.formatVolume(id, volumeWriteCheck(loc, rule("format")));
    assert.deepEqual(world.calls, ["makeFilesystem /dev/loop3p1 ext4"]);
  });
});

describe("the service's refusals run on the host's reading right before the write", () => {
  /** setup() whose tools run `change` once, when the service reads the volume's content (after its first refusals, before the write). */
  function racing(change: (w: FakeBlockWorld) => void, options: { formatted: boolean }) {
    const s = setup({ tweak: options.formatted ? (w) => formatted(w) : undefined });
    let fired = false;
    class Racing extends FakeBlockTools {
      override async probe(devPath: string) {
        if (!fired) {
          fired = true;
          change(s.world);
        }
        return super.probe(devPath);
      }
    }
    const host = new LinuxVolumeHost(new Racing(s.world), { defaultFileSystem: "ext4" });
    const policy = createPathPolicy({ platform: "linux", allowedDirs: [KUBELET], resolve: async (p) => p });
    return { ...s, host, volume: createVolumeService({ host, policy }), fired: () => fired };
  }

  test("mounted outside the kubelet dir meanwhile: MountVolume refused, nothing mounted", async () => {
    const s = racing((w) => w.mountDirect("/dev/loop3p1", "/mnt/admin"), { formatted: true });
    await rejectsWithCode(s.volume.mountVolume({ volumeId: s.id, targetPath: STAGE }), Code.FailedPrecondition, /mounted at \/mnt\/admin, outside the kubelet/);
    assert.ok(s.fired());
    assert.deepEqual(s.world.calls, []);
  });

  test("an LVM signature written meanwhile: FormatVolume refused at the write by the service's rule, nothing written", async () => {
    const s = setup();
    let lists = 0;
    class Racing extends FakeBlockTools {
      // The service's look lists the signatures once (nothing there); the LVM header is written before the write's own list.
      override async listSignatures(devPath: string) {
        if (++lists === 2) s.world.setContent("/dev/loop3p1", { kind: "signature", type: "LVM2_member", usage: "raid" });
        return super.listSignatures(devPath);
      }
    }
    const host = new LinuxVolumeHost(new Racing(s.world), { defaultFileSystem: "ext4" });
    const volume = createVolumeService({ host, policy: createPathPolicy({ platform: "linux", allowedDirs: [KUBELET], resolve: async (p) => p }) });
    await rejectsWithCode(volume.formatVolume({ volumeId: s.id }), Code.FailedPrecondition, /refusing to format \/dev\/loop3p1 as ext4: it holds LVM2_member at byte 0/);
    assert.equal(lists, 2);
    assert.deepEqual(s.world.calls, []);
  });

  test("mounted in another mount namespace meanwhile: FormatVolume refused at the write, nothing written", async () => {
    const s = racing((w) => w.otherNamespaceMounts.push({ major: 259, minor: 0, pid: 4242, mountPoint: "/data" }), { formatted: true });
    await rejectsWithCode(s.volume.formatVolume({ volumeId: s.id }), Code.FailedPrecondition, /refusing to format \/dev\/loop3p1: it is mounted at \/data \(mount namespace of pid 4242\)/);
    assert.ok(s.fired());
    assert.deepEqual(s.world.calls, []);
  });

  test("its disk taken offline meanwhile: FormatVolume refused, nothing written", async () => {
    const s = racing((w) => {
      const d = w.disk("loop3");
      w.marks.push({ major: d.major, minor: d.minor, diskSeq: d.diskSeq, setReadOnly: false });
    }, { formatted: false });
    await rejectsWithCode(s.volume.formatVolume({ volumeId: s.id }), Code.FailedPrecondition, /is offline/);
    assert.ok(s.fired());
    assert.deepEqual(s.world.calls, []);
  });
});

describe("GetVolumeStats reads the one disk a volume was found on while the disk set is the same", () => {
  /** Counts whole-host reads (every table off its device), kept listings and one-disk reads; the disk set is the fake's disk names. */
  class Counting extends FakeBlockTools {
    listed = 0;
    kept = 0;
    found = 0;
    override async listDisks(options?: { tables?: boolean | "kept" }) {
      if (options?.tables === "kept") this.kept++;
      else this.listed++;
      return super.listDisks();
    }
    override async findDisk(dev: { major: number; minor: number }) {
      this.found++;
      return super.findDisk(dev);
    }
    diskSetKey() {
      return this.world.blockDisks().map((d) => `${d.name}=${d.diskSeq}`).sort().join(" ");
    }
  }
  function counted() {
    const s = setup({ tweak: (w) => (formatted(w), w.mountDirect("/dev/loop3p1", STAGE)) });
    const tools = new Counting(s.world);
    const host = new LinuxVolumeHost(tools, { defaultFileSystem: "ext4" });
    const volume = createVolumeService({ host, policy: createPathPolicy({ platform: "linux", allowedDirs: [KUBELET], resolve: async (p) => p }), locks: createKeyedMutex() });
    return { ...s, tools, volume };
  }

  test("the first call reads the volume's disk in full from the kept listing, the next ones only the volume's disk", async () => {
    const s = counted();
    const first = await s.volume.getVolumeStats({ volumeId: s.id });
    assert.deepEqual([s.tools.listed, s.tools.kept, s.tools.found], [0, 1, 1]);
    assert.deepEqual(await s.volume.getVolumeStats({ volumeId: s.id }), first);
    assert.deepEqual(await s.volume.getVolumeStats({ volumeId: s.id }), first);
    assert.deepEqual([s.tools.listed, s.tools.kept, s.tools.found], [0, 1, 3]);
  });

  test("a disk that appears (a clone with the same PARTUUID) makes it read every disk again: ambiguous", async () => {
    const s = counted();
    await s.volume.getVolumeStats({ volumeId: s.id });
    s.world.addLoop(5, "/images/clone.img");
    s.world.partition("loop5", [512]);
    s.world.disk("loop5").table!.entries[0].uuid = s.world.disk("loop3").table!.entries[0].uuid;
    await rejectsWithCode(s.volume.getVolumeStats({ volumeId: s.id }), Code.FailedPrecondition, /ambiguous/);
    assert.equal(s.tools.listed, 1, "the ambiguity decided on a reading of every disk");
  });

  test("a volume gone from its disk is looked up on every disk", async () => {
    const s = counted();
    await s.volume.getVolumeStats({ volumeId: s.id });
    s.world.disk("loop3").table!.entries[0].uuid = "22222222-2222-2222-2222-222222222222";
    await rejectsWithCode(s.volume.getVolumeStats({ volumeId: s.id }), Code.NotFound);
    assert.deepEqual([s.tools.listed, s.tools.found], [1, 2], "not found decided on a reading of every disk");
  });
});

describe("processes holding the device nodes (read on the write's own reading)", () => {
  const opener = (w: FakeBlockWorld, devPath: string, access: "read" | "read-write" | "mapped", pid = 4242, command = "dd") =>
    w.openers.push({ pid, command, dev: w.devOf(devPath), access });
  const grownFormatted = (w: FakeBlockWorld) => {
    w.disk("loop3").pendingSizeBytes = 2048n * MiB;
    w.applyPendingSize(w.disk("loop3"));
    formatted(w);
  };

  test("FormatVolume: a writer of the partition refused, naming pid and command; nothing written", async () => {
    const s = setup({ tweak: (w) => opener(w, "/dev/loop3p1", "read-write") });
    await rejectsWithCode(s.volume.formatVolume({ volumeId: s.id }), Code.FailedPrecondition, /\/dev\/loop3p1 is open for writing by pid 4242 \(dd\)/);
    assert.deepEqual(s.world.calls, []);
  });
  test("FormatVolume: a mapping of the whole disk refused (the disk holds the volume)", async () => {
    const s = setup({ tweak: (w) => opener(w, "/dev/loop3", "mapped", 77, "qemu") });
    await rejectsWithCode(s.volume.formatVolume({ volumeId: s.id }), Code.FailedPrecondition, /\/dev\/loop3 is mapped into memory by pid 77 \(qemu\)/);
    assert.deepEqual(s.world.calls, []);
  });
  test("ResizeVolume: a reader that stays refused before the partition changes", async () => {
    const s = setup({ tweak: (w) => (grownFormatted(w), opener(w, "/dev/loop3p1", "read")) });
    await rejectsWithCode(s.volume.resizeVolume({ volumeId: s.id, sizeBytes: 0n }), Code.FailedPrecondition, /open read-only by pid 4242 \(dd\)/);
    assert.deepEqual(s.world.calls, []);
  });
  test("ResizeVolume: a mounted volume with no opener of its node is grown (users of its files are not openers)", async () => {
    const s = setup({ tweak: (w) => (grownFormatted(w), w.mountDirect("/dev/loop3p1", STAGE)) });
    await s.volume.resizeVolume({ volumeId: s.id, sizeBytes: 0n });
    assert.ok(s.world.calls.some((c) => c.startsWith("resizePartition")), s.world.calls.join(" | "));
  });
  test("PartitionDisk and SetDiskState(offline): a partition's opener blocks the disk", async () => {
    const s = setup({ tweak: (w) => opener(w, "/dev/loop3p1", "read-write") });
    const n = diskNumberOf(s.world.disk("loop3"));
    // A disk with its data partition needs no write: OK, nothing changed (idempotent).
    await s.disk.partitionDisk({ diskNumber: n });
    await rejectsWithCode(s.disk.setDiskState({ diskNumber: n, isOnline: false }), Code.FailedPrecondition, /\/dev\/loop3p1 is open for writing by pid 4242 \(dd\)/);
    assert.deepEqual(s.world.calls, []);
  });
  test("PartitionDisk: an opener of a raw disk refused before the table is written", async () => {
    const s = setup({ tweak: (w) => (w.addLoop(5, "/images/raw.img"), opener(w, "/dev/loop5", "read-write", 9, "backup-agent")) });
    const n = diskNumberOf(s.world.disk("loop5"));
    await rejectsWithCode(s.disk.partitionDisk({ diskNumber: n }), Code.FailedPrecondition, /\/dev\/loop5 is open for writing by pid 9 \(backup-agent\)/);
    assert.deepEqual(s.world.calls, []);
  });
});

describe("the host decides nothing: every refusal is the check's, on the facts the host reads right before writing", () => {
  /** A check that lets everything through, keeping the facts it was given. */
  const passAll = (seen: VolumeFacts[]): WriteCheck => async (facts) => void seen.push(facts);

  test("format: facts every rule refuses on reach the check", async () => {
    const { world, host, id } = setup({
      tweak: (w) => {
        formatted(w, "xfs"); // another filesystem
        w.otherNamespaceMounts.push({ major: 259, minor: 0, pid: 4242, mountPoint: "/data" });
        w.disk("loop3").holders.push("dm-0");
      },
    });
    const seen: VolumeFacts[] = [];
    const keep: WriteCheck = async (facts) => {
      seen.push(facts);
      throw new CsiProxyError(Code.FailedPrecondition, "kept");
    };
    await rejectsWithCode(host.formatVolume(id, keep), Code.FailedPrecondition, /^kept$/);
    assert.deepEqual(world.calls, []);
    assert.equal(seen.length, 1);
    const [facts] = seen;
    assert.equal(facts.location.id, id);
    assert.deepEqual(facts.namespaceMounts, [{ mountPoint: "/data", pid: 4242 }]);
    assert.deepEqual(facts.signatures?.map((x) => x.type), ["xfs"]);
    assert.deepEqual(facts.location.devices.map((d) => d.name), ["/dev/loop3p1", "/dev/loop3"]);
    assert.match(facts.location.devices[1].use.busy.join(), /in use by \/dev\/dm-0 \(holders\)/);
    assert.ok(Array.isArray(facts.location.devices[0].use.openers), "the reading lists the processes holding the nodes");
  });

  test("format: a check that lets another filesystem and a holder through is obeyed (no rule of the host's own)", async () => {
    const { world, host, id } = setup({
      tweak: (w) => {
        formatted(w, "xfs");
        w.disk("loop3").holders.push("dm-0");
      },
    });
    const seen: VolumeFacts[] = [];
    // The host goes on to mkfs, whose own refusal of an existing filesystem (the tool's, as the fake's mke2fs has it) is all that is left.
    await rejectsWithCode(host.formatVolume(id, passAll(seen)), Code.Internal, /fake mkfs.ext4: \/dev\/loop3p1 contains an existing filesystem/);
    assert.equal(seen.length, 1);
    assert.deepEqual(world.calls, ["makeFilesystem /dev/loop3p1 ext4 replace"]);
  });

  test("mount and resize: the same; a check that refuses stops every write, its error the answer", async () => {
    const { world, host, id } = setup({ tweak: (w) => formatted(w) });
    const seen: VolumeFacts[] = [];
    await host.mountVolume(id, STAGE, "ext4", passAll(seen));
    assert.equal(seen.length, 1);
    assert.deepEqual(seen[0].location.devices[0].use.mountPoints, []);
    const no: WriteCheck = async () => {
      throw new CsiProxyError(Code.FailedPrecondition, "the service says no");
    };
    const before = [...world.calls];
    await rejectsWithCode(host.formatVolume(id, no), Code.FailedPrecondition, /^the service says no$/);
    await rejectsWithCode(host.resizePartition(id, 600n * MiB, no), Code.FailedPrecondition, /^the service says no$/);
    await rejectsWithCode(host.growFilesystem(id, no), Code.FailedPrecondition, /^the service says no$/);
    assert.deepEqual(world.calls, before);
  });
});
