// The replay of AWS EBS (gRPC mode) and of amazon-ecs-agent's copy against the daemon, on loop devices
// whose serial numbers carry EBS volume ids: the Linux host reports a loop device's backing file path
// as its SerialNumber (src/host/linux/block/disk-ids.ts, docs/linux-concept-map.md), so the backing file is
// named after the volume id, as an EBS NVMe disk's serial carries it on Windows. Every csi-proxy call
// and its order is asserted against the driver's code (aws-family-model.ts, which cites file:line).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { blockSkipReason, MiB, outcome, startBlockEnv, type BlockEnv } from "./replay-harness.ts";
import { AWS_NOT_MOUNTED, AWS_VERSIONS, AwsFamilyNode, ebsVolumeId, type AwsFamily } from "./aws-family-model.ts";
import { createLoopDevice, type LoopDevice } from "../helpers/loop-device.ts";

/** CAP_SYS_RESOURCE (bit 24) in this process's effective set (the daemon inherits it): needed to grow a mounted ext4. */
function hasCapSysResource(): boolean {
  const m = /^CapEff:\s*([0-9a-f]+)/m.exec(readFileSync("/proc/self/status", "utf8"));
  return m !== null && ((BigInt(`0x${m[1]}`) >> 24n) & 1n) === 1n;
}

const STAGE_CALLS_HEAD = ["disk.ListDiskIDs", "filesystem.PathExists"];
const FORMAT_AND_MOUNT = ["disk.PartitionDisk", "disk.SetDiskState", "volume.ListVolumesOnDisk", "volume.IsVolumeFormatted", "volume.FormatVolume", "volume.MountVolume"];
const DEVICE_NAME = ["volume.GetVolumeIDFromTargetPath", "volume.GetDiskNumberFromVolumeID"];

/** Registers the replay suite of one AWS-family driver. */
export function describeAwsFamilyReplay(name: string, family: AwsFamily): void {
  const skip = blockSkipReason();
  describe(`${name} replay (from the driver's code)`, { skip: skip ?? false }, () => {
    const volumeId = ebsVolumeId();
    const otherVolumeId = ebsVolumeId();
    let env: BlockEnv;
    let otherDir: string;
    let other: LoopDevice;
    before(async () => {
      env = await startBlockEnv(`${family}-${volumeId.replaceAll("-", "")}`);
      otherDir = mkdtempSync(path.join(tmpdir(), `csi-replay-${family}-other-`));
      other = createLoopDevice(otherDir, 32 * MiB, `${family}-${otherVolumeId.replaceAll("-", "")}`);
    });
    after(async () => {
      other?.cleanup();
      if (otherDir) rmSync(otherDir, { recursive: true, force: true });
      await env?.stop();
    });

    it("FindDevicePath: ListDiskIDs, the disk whose serial contains the volume id without dashes — not another disk's", async () => {
      const node = new AwsFamilyNode(family, env.proxy(AWS_VERSIONS));
      assert.equal(await node.findDevicePath("/dev/xvdba", volumeId), String(env.loop.diskNumber));
      assert.equal(await node.findDevicePath("/dev/xvdbb", otherVolumeId), String(other.diskNumber));
      assert.notEqual(env.loop.diskNumber, other.diskNumber);
      // a volume attached nowhere: NodeStage fails before touching anything (EBS NotFound, ECS Internal)
      const missing = ebsVolumeId();
      const got = await outcome(node.nodeStage(missing, "/dev/xvdbc", env.paths("pv-none").staging));
      assert.equal(got, `${family === "ebs" ? "NotFound" : "Internal"}: Failed to find device path /dev/xvdbc. disk number for device path "/dev/xvdbc" volume id "${missing}" not found`);
      assert.deepEqual(node.proxy.take(), ["disk.ListDiskIDs", "disk.ListDiskIDs", "disk.ListDiskIDs"]);
    });

    it("the regexp takes the \"not mounted\" branch for a missing and for a plain staging path, never for a mounted one", async () => {
      const node = new AwsFamilyNode(family, env.proxy(AWS_VERSIONS));
      const plain = path.join(env.kubelet, "plugins", "plain");
      mkdirSync(plain, { recursive: true });
      assert.deepEqual(await node.getDeviceNameFromMount(path.join(env.kubelet, "plugins", "missing")), { device: "", refCount: 0 });
      assert.deepEqual(await node.getDeviceNameFromMount(plain), { device: "", refCount: 0 });
      // upstream master's texts for the same situations ("The system cannot find the file specified.",
      // "not a mounted folder") would not match: the driver then fails NodeStage/NodeUnstage with Internal
      assert.ok(!AWS_NOT_MOUNTED.test("rpc error: code = Unknown desc = not a mounted folder"));
    });

    it("stage, stage again, publish twice, stats, expand after the disk grew, unpublish twice, unstage twice: the driver's calls in its order", async () => {
      const node = new AwsFamilyNode(family, env.proxy(AWS_VERSIONS));
      const { staging, publish } = env.paths("pv1");
      const step = async (label: string, p: Promise<unknown>, want: string, calls: string[]) => {
        assert.equal(await outcome(p), want, label);
        assert.deepEqual(node.proxy.take(), calls, `${name} ${label}: calls`);
      };

      // NodeStage: kubelet leaves the staging directory to the driver (it is created by MakeDir)
      mkdirSync(path.dirname(staging), { recursive: true });
      await step("NodeStage", node.nodeStage(volumeId, "/dev/xvdba", staging), "OK", [
        ...STAGE_CALLS_HEAD, "filesystem.Mkdir", "volume.GetVolumeIDFromTargetPath", // not mounted yet: the regexp's branch
        ...FORMAT_AND_MOUNT,
        ...(family === "ebs" ? ["disk.Rescan"] : []), "disk.GetDiskStats", "volume.GetVolumeIDFromTargetPath", "volume.GetVolumeStats", // NeedResize: no
      ]);
      assert.deepEqual(env.loop.mounts(), [staging]);
      writeFileSync(path.join(staging, "data.txt"), "kept");
      await step("NodeStage again", node.nodeStage(volumeId, "/dev/xvdba", staging), "OK", [...STAGE_CALLS_HEAD, ...DEVICE_NAME]);

      if (family === "ebs") {
        mkdirSync(publish, { recursive: true }); // kubelet creates the target directory; PreparePublishTarget removes it
        const publishCalls = ["filesystem.PathExists", "filesystem.Rmdir", "filesystem.PathExists", "filesystem.CreateSymlink"];
        await step("NodePublish", node.nodePublish(staging, publish), "OK", publishCalls);
        await step("NodePublish again", node.nodePublish(staging, publish), "OK", publishCalls);
        assert.ok(lstatSync(publish).isSymbolicLink());
        assert.equal(readFileSync(path.join(publish, "data.txt"), "utf8"), "kept");
      } else {
        await step("NodePublish", node.nodePublish(staging, publish), "Unimplemented: method NodePublishVolume not implemented", []);
      }

      // NodeGetVolumeStats: the PathExists RPC, then the driver's own local calls
      const statsPath = family === "ebs" ? publish : staging;
      const stats = await node.nodeGetVolumeStats(statsPath);
      assert.ok(stats.total > 40n * BigInt(MiB) && stats.total < 64n * BigInt(MiB), `total ${stats.total}`);
      assert.deepEqual(node.proxy.take(), ["filesystem.PathExists"]);
      const gone = path.join(env.kubelet, "pods", "gone", "mount");
      await step("NodeGetVolumeStats on a missing path", node.nodeGetVolumeStats(gone), `NotFound: path ${gone} does not exist`, ["filesystem.PathExists"]);

      if (family === "ebs") {
        // the EBS volume was enlarged (by more than csi-proxy's 100 MiB growth threshold): the next Rescan
        // shows it; ResizeVolume(0) grows partition and filesystem
        env.loop.resize(224 * MiB);
        const expandCalls = [...DEVICE_NAME, "disk.ListDiskIDs", "disk.Rescan", "volume.GetVolumeIDFromTargetPath", "volume.ResizeVolume"];
        if (hasCapSysResource()) {
          const capacity = await node.nodeExpand(volumeId, publish);
          assert.deepEqual(node.proxy.take(), [...expandCalls, "disk.GetDiskStats"]);
          assert.equal(capacity, 224n * BigInt(MiB));
          assert.ok((await node.nodeGetVolumeStats(publish)).total > 200n * BigInt(MiB), "the filesystem grew");
          node.proxy.take();
        } else {
          // growing a mounted ext4 needs CAP_SYS_RESOURCE (Windows grows NTFS online): refused before any change, Internal from the driver
          assert.match(await outcome(node.nodeExpand(volumeId, publish)), /^Internal: Could not resize volume "vol-\w+" \("\d+"\): rpc error: code = PermissionDenied desc = .*CAP_SYS_RESOURCE/);
          assert.deepEqual(node.proxy.take(), expandCalls);
        }
        await step("NodeUnpublish", node.nodeUnpublish(publish), "OK", ["filesystem.Rmdir"]);
        await step("NodeUnpublish again", node.nodeUnpublish(publish), "OK", ["filesystem.Rmdir"]);
        assert.equal(existsSync(publish), false);
      } else {
        await step("NodeExpand", node.nodeExpand(volumeId, staging), "Unimplemented: method NodeExpandVolume not implemented", []);
      }
      assert.equal(readFileSync(path.join(staging, "data.txt"), "utf8"), "kept");

      await step("NodeUnstage", node.nodeUnstage(staging), "OK", [
        ...DEVICE_NAME, "volume.GetVolumeIDFromTargetPath", "volume.UnmountVolume", "filesystem.Rmdir", "volume.GetDiskNumberFromVolumeID", "disk.SetDiskState",
      ]);
      assert.deepEqual(env.loop.mounts(), []);
      // the staging directory is gone: GetVolumeIDFromTargetPath's text takes the regexp's "not mounted" branch
      await step("NodeUnstage again", node.nodeUnstage(staging), "OK", ["volume.GetVolumeIDFromTargetPath"]);

      // the data is on the disk: stage it again (the driver sets the disk online itself)
      await step("NodeStage after unstage", node.nodeStage(volumeId, "/dev/xvdba", staging), "OK", [
        ...STAGE_CALLS_HEAD, "filesystem.Mkdir", "volume.GetVolumeIDFromTargetPath",
        "disk.PartitionDisk", "disk.SetDiskState", "volume.ListVolumesOnDisk", "volume.IsVolumeFormatted", "volume.MountVolume", // formatted: no FormatVolume
        ...(family === "ebs" ? ["disk.Rescan"] : []), "disk.GetDiskStats", "volume.GetVolumeIDFromTargetPath", "volume.GetVolumeStats",
      ]);
      assert.equal(readFileSync(path.join(staging, "data.txt"), "utf8"), "kept");
      await step("NodeUnstage", node.nodeUnstage(staging), "OK", [
        ...DEVICE_NAME, "volume.GetVolumeIDFromTargetPath", "volume.UnmountVolume", "filesystem.Rmdir", "volume.GetDiskNumberFromVolumeID", "disk.SetDiskState",
      ]);
    });
  });
}
