import { describe, test } from "node:test";
import assert from "node:assert/strict";
/**
 * The volume group's Linux semantics (ids, listing, mount, unmount, format): the unified volume service (and disk service) over
 * LinuxVolumeHost / LinuxDiskHost, on the fake Linux block tools (test/helpers/linux-volume-fixture.ts).
 */
import type { ManagedFsType } from "./block/block-types.ts";
import { diskNumberOf } from "./block/disk-numbers.ts";
import { parseVolumeId } from "./block/volume-ids.ts";
import { FakeBlockWorld } from "../../../test/doubles/fake-block-world.ts";
import { Code } from "../../errors.ts";
import { rejectsWithCode } from "../../../test/helpers/assert-coded.ts";
import { KUBELET, STAGE, MSR, gptId, setup, formatted } from "../../../test/helpers/linux-volume-fixture.ts";

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
