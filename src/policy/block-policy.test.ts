import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, CsiProxyError } from "../errors.ts";
import { allowedMountPoint, checkDiskNumber, diskLockKey, hostFailure, privilegeGuard, refuseInUse, requireOnline, withContext } from "./block-policy.ts";
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
});
