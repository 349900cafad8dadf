import { describe, test } from "node:test";
import assert from "node:assert/strict";
/**
 * The volume group's Linux semantics (privilege, the write-time reading and its refusals): the unified volume service (and disk service) over
 * LinuxVolumeHost / LinuxDiskHost, on the fake Linux block tools (test/helpers/linux-volume-fixture.ts).
 */
import { createVolumeService } from "../../groups/volume/volume-service.ts";
import { diskNumberOf } from "./block/disk-numbers.ts";
import { LinuxVolumeHost } from "./volume.ts";
import { createPathPolicy } from "../../policy/path-policy.ts";
import { volumeWriteCheck } from "../../policy/block-policy.ts";
import type { VolumeFacts, WriteCheck } from "../../groups/volume/host-api.ts";
import { FakeBlockWorld } from "../../../test/doubles/fake-block-world.ts";
import { FakeBlockTools } from "../../../test/doubles/fake-block-tools.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import { Code, CsiProxyError } from "../../errors.ts";
import { rejectsWithCode } from "../../../test/helpers/assert-coded.ts";
import { KUBELET, STAGE, MiB, gptId, setup, formatted } from "../../../test/helpers/linux-volume-fixture.ts";

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
