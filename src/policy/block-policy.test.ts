import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, CsiProxyError } from "../errors.ts";
import {
  allowedMountPoint,
  checkDiskNumber,
  contentSignatures,
  diskLockKey,
  diskWriteCheck,
  hostFailure,
  privilegeGuard,
  refuseDiskWrite,
  refuseInUse,
  refuseVolumeWrite,
  requireOnline,
  volumeWriteCheck,
  withContext,
  type DiskWriteFacts,
  type VolumeWriteFacts,
} from "./block-policy.ts";
import type { HostDevice } from "./host-device.ts";

const coded = (code: Code, message?: RegExp) => (err: unknown) => {
  assert.ok(err instanceof CsiProxyError, String(err));
  assert.equal(err.code, code, err.message);
  if (message) assert.match(err.message, message);
  return true;
};
const device = (name: string, use: Partial<HostDevice["use"]> = {}): HostDevice => ({ name, use: { system: null, mountPoints: [], busy: [], ...use } });
const inside = async (p: string) => p.startsWith("/var/lib/kubelet/");

describe("block policy", () => {
  it("checkDiskNumber accepts every uint32 and nothing else", () => {
    for (const n of [0, 1, 0xffffffff]) assert.equal(checkDiskNumber(n), n);
    for (const n of [-1, 0x100000000, 1.5, Number.NaN, Infinity]) assert.throws(() => checkDiskNumber(n), coded(Code.InvalidArgument, /is not a uint32/));
  });

  it("one lock key per disk, shared by both services", () => {
    assert.equal(diskLockKey(3), diskLockKey(3));
    assert.notEqual(diskLockKey(3), diskLockKey(30));
  });

  it("privilegeGuard reads the host once and fails every method the same way", () => {
    let reads = 0;
    const guard = privilegeGuard({ missingPrivilege: () => (reads++, "needs root") }, "disk");
    assert.throws(() => guard("ListDiskIDs"), coded(Code.PermissionDenied, /^disk ListDiskIDs: needs root$/));
    assert.throws(() => guard("PartitionDisk"), coded(Code.PermissionDenied, /^disk PartitionDisk: needs root$/));
    assert.equal(reads, 1);
    assert.doesNotThrow(() => privilegeGuard({ missingPrivilege: () => null }, "volume")("FormatVolume"));
  });

  it("allowedMountPoint: inside when the policy accepts the path; without a policy nothing is inside", async () => {
    const policy = { check: async (p: string) => (p.startsWith("/var/lib/kubelet/") ? p : Promise.reject(new Error("outside"))) };
    assert.equal(await allowedMountPoint(policy)("/var/lib/kubelet/pods/x"), true);
    assert.equal(await allowedMountPoint(policy)("/mnt"), false);
    assert.equal(await allowedMountPoint(undefined)("/var/lib/kubelet/pods/x"), false);
  });

  describe("refuseInUse", () => {
    it("passes devices nothing uses, and mounts inside the allowed dirs when they are allowed", async () => {
      await refuseInUse([device("/dev/loop1"), device("/dev/loop1p1", { mountPoints: ["/var/lib/kubelet/a"] })], "format", true, inside);
    });
    it("names every reason: the OS, busy, mounts outside; the same reason once", async () => {
      const devices = [
        device("/dev/sda", { system: "the root filesystem /" }),
        device("/dev/sda1", { busy: ["in use as swap", "in use as swap"], mountPoints: ["/mnt/x"] }),
      ];
      await assert.rejects(refuseInUse(devices, "format /dev/sda1", true, inside), (err: unknown) => {
        coded(Code.FailedPrecondition)(err);
        const msg = (err as Error).message;
        assert.ok(msg.startsWith("refusing to format /dev/sda1: "), msg);
        assert.match(msg, /\/dev\/sda holds the root filesystem \//);
        assert.match(msg, /\/dev\/sda1 is mounted at \/mnt\/x, outside the kubelet and working directories/);
        assert.equal(msg.split("in use as swap").length - 1, 1, msg);
        return true;
      });
    });
    it("a mount inside the allowed dirs refuses when mounts are not allowed (going offline)", async () => {
      await assert.rejects(
        refuseInUse([device("/dev/loop2", { mountPoints: ["/var/lib/kubelet/b"] })], "take disk 2 offline", false, inside),
        coded(Code.FailedPrecondition, /\/dev\/loop2 is mounted at \/var\/lib\/kubelet\/b; unmount it first/),
      );
    });
  });

  it("requireOnline refuses only a disk known to be offline, naming it", () => {
    requireOnline(true, 1, "disk1", "partition");
    requireOnline(null, 1, null, "partition");
    assert.throws(() => requireOnline(false, 4, "loop4", "partition disk 4"), coded(Code.FailedPrecondition, /^cannot partition disk 4: disk 4 \(loop4\) is offline; bring it online with SetDiskState first$/));
    assert.throws(() => requireOnline(false, 4, null, "x"), coded(Code.FailedPrecondition, /disk 4 is offline/));
  });

  it("hostFailure and withContext add context and keep the host's code; uncoded errors are Internal", async () => {
    const e = hostFailure("formatting /dev/loop1", new CsiProxyError(Code.NotFound, "gone"));
    assert.equal(e.code, Code.NotFound);
    assert.equal(e.message, "formatting /dev/loop1: gone");
    assert.equal(hostFailure("x", new Error("boom")).code, Code.Internal);
    assert.equal(await withContext("y", Promise.resolve(7)), 7);
    await assert.rejects(withContext("resizing", Promise.reject(new CsiProxyError(Code.Aborted, "busy"))), coded(Code.Aborted, /^resizing: busy$/));
  });

  describe("volume writes: every refusal, from a facts record", () => {
    const loc = (more: Partial<VolumeWriteFacts["location"]> = {}): VolumeWriteFacts["location"] => ({
      id: "vol-1",
      diskNumber: 3,
      name: "/dev/loop3p1",
      diskOnline: true,
      devices: [device("/dev/loop3p1"), device("/dev/loop3")],
      identity: "259:1 diskseq 7 sectors 2048+4096",
      ...more,
    });
    const format = { what: "format volume vol-1 (/dev/loop3p1)", allowMountsInside: false, isAllowed: inside, format: "ext4" };
    const mount = { what: "mount volume vol-1", allowMountsInside: true, isAllowed: inside };
    const ext4 = { fileSystem: "ext4", empty: false, description: "ext4" };
    const sig = (type: string, offset: bigint) => ({ type, offset });

    it("passes what may be written: nothing, or one filesystem of the type created; a mount inside the allowed dirs for a mount", async () => {
      await refuseVolumeWrite({ location: loc(), content: { fileSystem: null, empty: true, description: "no signature" }, signatures: [], namespaceMounts: [] }, format);
      await refuseVolumeWrite({ location: loc(), content: ext4, signatures: [sig("ext4", 1080n)] }, format);
      await refuseVolumeWrite({ location: loc({ devices: [device("/dev/loop3p1", { mountPoints: ["/var/lib/kubelet/x"] })] }) }, mount);
      await refuseVolumeWrite({ location: loc({ accessPaths: ["E:\\"] }) }, mount); // access paths refuse a format only
    });

    const refusals: [string, VolumeWriteFacts, RegExp][] = [
      ["disk offline", { location: loc({ diskOnline: false }) }, /^cannot format volume vol-1 \(\/dev\/loop3p1\): disk 3 is offline/],
      ["held open", { location: loc({ devices: [device("/dev/loop3p1", { openers: [{ pid: 42, command: "dd", access: "read-write" }] })] }) }, /\/dev\/loop3p1 is open for writing by pid 42 \(dd\)/],
      ["swap", { location: loc({ devices: [device("/dev/loop3p1", { busy: ["in use as swap"] })] }) }, /\/dev\/loop3p1 is in use as swap/],
      ["mounted inside the kubelet dir", { location: loc({ devices: [device("/dev/loop3p1", { mountPoints: ["/var/lib/kubelet/x"] })] }) }, /is mounted at \/var\/lib\/kubelet\/x; unmount it first/],
      ["mounted in another namespace", { location: loc(), namespaceMounts: [{ mountPoint: "/data", pid: 4242 }] }, /^refusing to format \/dev\/loop3p1: it is mounted at \/data \(mount namespace of pid 4242\)$/],
      ["another filesystem", { location: loc(), content: { fileSystem: "xfs", empty: false, description: "xfs" } }, /^refusing to format volume vol-1 \(\/dev\/loop3p1\) as ext4: it already holds xfs; formatting would destroy that data$/],
      ["an LVM member", { location: loc(), content: { fileSystem: null, empty: false, description: "LVM2_member (raid)" } }, /already holds LVM2_member \(raid\)/],
      ["a LUKS header beside the filesystem", { location: loc(), content: ext4, signatures: [sig("ext4", 1080n), sig("crypto_LUKS", 0n)] }, /^refusing to format \/dev\/loop3p1 as ext4: it holds ext4 at byte 1080, crypto_LUKS at byte 0$/],
      ["a partition table", { location: loc(), signatures: [sig("dos", 510n)] }, /it holds dos at byte 510$/],
      ["a drive letter", { location: loc({ accessPaths: ["E:\\", "C:\\mnt\\x\\"] }) }, /^refusing to format volume vol-1: it is in use at E:\\, C:\\mnt\\x\\$/],
    ];
    for (const [name, facts, message] of refusals) {
      it(`format refused: ${name}`, async () => {
        await assert.rejects(refuseVolumeWrite(facts, format), coded(Code.FailedPrecondition, message));
      });
    }

    it("the write check: another volume behind the id is refused first; the same volume gets the same rule", async () => {
      const check = volumeWriteCheck(loc(), format);
      await assert.rejects(check({ location: loc({ identity: "259:9 diskseq 8 sectors 2048+4096" }) }), coded(Code.FailedPrecondition, /^refusing to format volume vol-1 \(\/dev\/loop3p1\): the volume changed since it was looked up \(259:1 diskseq 7 sectors 2048\+4096 → 259:9 diskseq 8 sectors 2048\+4096\)$/));
      await check({ location: loc(), signatures: [] });
      await assert.rejects(check({ location: loc(), signatures: [sig("xfs", 0n)] }), coded(Code.FailedPrecondition, /it holds xfs at byte 0/));
      await volumeWriteCheck({}, format)({ location: loc({ identity: "anything" }) }); // no identity decided on: only the rule
    });
  });

  describe("disk writes: every refusal, from a facts record", () => {
    const disk = (more: Partial<DiskWriteFacts["disk"]> = {}): DiskWriteFacts["disk"] => ({ ...device("/dev/loop3"), number: 3, online: true, identity: "7:3 diskseq 7 size 1", ...more });
    const table = { what: "partition disk 3 (/dev/loop3)", allowMountsInside: false, isAllowed: inside, table: { kind: "table" as const, to: "add a partition to" } };
    const empty = { ...table, table: { kind: "empty" as const, to: "write a partition table to" } };

    it("a partition table is not content; anything else is", () => {
      assert.deepEqual(contentSignatures([{ type: "gpt", offset: 512n }, { type: "PMBR", offset: 510n }, { type: "exfat", offset: 3n }]).map((x) => x.type), ["exfat"]);
    });
    it("adding a partition: a table alone passes; content, a mount anywhere, an offline disk refuse", async () => {
      await refuseDiskWrite({ disk: disk(), partitions: [], signatures: [{ type: "gpt", offset: 512n }] }, table);
      await assert.rejects(refuseDiskWrite({ disk: disk(), partitions: [], signatures: [{ type: "LVM2_member", offset: 536n }] }, table), coded(Code.FailedPrecondition, /^refusing to add a partition to \/dev\/loop3: it holds LVM2_member at byte 536$/));
      await assert.rejects(refuseDiskWrite({ disk: disk(), partitions: [device("/dev/loop3p1", { mountPoints: ["/var/lib/kubelet/m"] })] }, table), coded(Code.FailedPrecondition, /\/dev\/loop3p1 is mounted at \/var\/lib\/kubelet\/m; unmount it first/));
      await assert.rejects(refuseDiskWrite({ disk: disk({ online: false }), partitions: [] }, table), coded(Code.FailedPrecondition, /disk 3 \(\/dev\/loop3\) is offline/));
    });
    it("writing a new table: even a partition table refuses", async () => {
      await assert.rejects(refuseDiskWrite({ disk: disk(), partitions: [], signatures: [{ type: "gpt", offset: 512n }] }, empty), coded(Code.FailedPrecondition, /^refusing to write a partition table to \/dev\/loop3: it holds gpt at byte 512$/));
    });
    it("going online: uses do not matter, the identity does", async () => {
      const online = { what: "set disk 3 (/dev/loop3) online", allowMountsInside: true, isAllowed: inside, ignoreUses: true };
      await diskWriteCheck(disk(), online)({ disk: disk({ use: { system: "the root filesystem /", mountPoints: [], busy: ["in use as swap"] } }), partitions: [] });
      await assert.rejects(diskWriteCheck(disk(), online)({ disk: disk({ identity: "7:3 diskseq 8 size 1" }), partitions: [] }), coded(Code.FailedPrecondition, /^refusing to set disk 3 \(\/dev\/loop3\) online: the disk changed since it was looked up \(7:3 diskseq 7 size 1 → 7:3 diskseq 8 size 1\)$/));
    });
  });
});
