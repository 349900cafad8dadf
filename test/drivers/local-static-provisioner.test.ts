// Replay of sig-storage-local-static-provisioner on Windows, from its code (kubernetes-sigs/
// sig-storage-local-static-provisioner at 6cbe253cb2ef8245c84801060da3b37335ca78bf): filesystem v1 +
// volume v1 (pkg/util/csi_proxy_v1_windows.go). It is not a CSI node plugin: it discovers volumes an
// operator mounted under a discovery directory and cleans a released volume by formatting it.
//   discovery (pkg/discovery/discovery.go:333,339): IsLikelyMountPoint = IsSymlink (volume_util_windows.go:87-96);
//     GetFsCapacityByte = GetVolumeIDFromTargetPath + GetVolumeStats (volume_util_windows.go:47-57).
//   cleanup (pkg/deleter/deleter.go:274 cleanFilePV → volume_util_windows.go:60-75 DeleteContents):
//     GetVolumeIDFromTargetPath(hostPath) + FormatVolume(volumeId), on the volume still mounted at its
//     discovery path; an error marks the cleanup failed and it is retried (deleter.go:196-197, 233-238).
// FormatVolume answers OK only when it formatted: a volume in use (mounted) is refused naming the
// mount, so the provisioner's cleanup of a mounted volume fails (and is retried) instead of handing the
// next tenant the previous one's data; the same volume unmounted is erased (its file gone, a new UUID).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { blockSkipReason, ProxyError, startBlockEnv, type BlockEnv } from "./replay-harness.ts";

/** The provisioner returns csi-proxy's error as is (volume_util_windows.go:69-72): "OK" or its err.Error(). */
async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "OK";
  } catch (e) {
    if (e instanceof ProxyError) return e.message;
    throw e;
  }
}

const skip = blockSkipReason();
const blkid = (dev: string, tag: string) => spawnSync("blkid", ["-p", "-s", tag, "-o", "value", dev], { encoding: "utf8" }).stdout.trim();

describe("sig-storage-local-static-provisioner replay", { skip: skip ?? false }, () => {
  let env: BlockEnv;
  before(async () => {
    env = await startBlockEnv("lsp", { workingDir: true });
  });
  after(async () => {
    await env?.stop();
  });

  it("discovery, capacity, and cleanup of a released volume: refused while mounted, erased (file gone, new UUID) once unmounted", async () => {
    const admin = env.proxy({ disk: "v1", volume: "v1" });
    const proxy = env.proxy({ filesystem: "v1", volume: "v1" });
    // the operator prepares a volume and mounts it under the discovery directory (-working-dir)
    await admin.call("disk", "partitionDisk", { diskNumber: env.loop.diskNumber });
    const { volumeIds } = await admin.call<{ volumeIds: string[] }>("volume", "listVolumesOnDisk", { diskNumber: env.loop.diskNumber, partitionNumber: 0 });
    await admin.call("volume", "formatVolume", { volumeId: volumeIds[0] });
    const mountPath = path.join(env.workingDir!, "vol1");
    mkdirSync(mountPath);
    await admin.call("volume", "mountVolume", { volumeId: volumeIds[0], targetPath: mountPath });

    // discovery.go:333 → volume_util_windows.go:88: a mount point is a "symlink"
    assert.equal((await proxy.call<{ isSymlink: boolean }>("filesystem", "isSymlink", { path: mountPath })).isSymlink, true);
    // discovery.go:339 → volume_util_windows.go:48,52: its volume and capacity
    const { volumeId } = await proxy.call<{ volumeId: string }>("volume", "getVolumeIDFromTargetPath", { targetPath: mountPath });
    assert.equal(volumeId, volumeIds[0]);
    const stats = await proxy.call<{ totalBytes: bigint }>("volume", "getVolumeStats", { volumeId });
    assert.ok(stats.totalBytes > 40n * 1024n * 1024n);
    // a plain directory in the discovery directory is not a mount point (IsSymlink false, no error)
    mkdirSync(path.join(env.workingDir!, "notmounted"));
    assert.equal((await proxy.call<{ isSymlink: boolean }>("filesystem", "isSymlink", { path: path.join(env.workingDir!, "notmounted") })).isSymlink, false);

    // a tenant wrote data; the PV is released. deleter.go:274 → volume_util_windows.go:65,69
    writeFileSync(path.join(mountPath, "tenant.txt"), "previous tenant");
    const partition = `${env.loop.device}p1`;
    const uuidBefore = blkid(partition, "UUID");
    assert.ok(uuidBefore);
    const cleanup = async () => {
      const { volumeId: id } = await proxy.call<{ volumeId: string }>("volume", "getVolumeIDFromTargetPath", { targetPath: mountPath });
      return outcome(proxy.call("volume", "formatVolume", { volumeId: id }));
    };
    // still mounted at its discovery path: in use, refused saying so; nothing written, no false OK
    assert.match(await cleanup(), new RegExp(`^rpc error: code = FailedPrecondition desc = refusing to format volume .*is mounted at ${mountPath.replace(/[.]/g, "\\.")}; unmount it first`));
    assert.equal(readFileSync(path.join(mountPath, "tenant.txt"), "utf8"), "previous tenant");
    assert.equal(blkid(partition, "UUID"), uuidBefore);
    assert.deepEqual(proxy.take(), [
      "filesystem.IsSymlink", "volume.GetVolumeIDFromTargetPath", "volume.GetVolumeStats", "filesystem.IsSymlink",
      "volume.GetVolumeIDFromTargetPath", "volume.FormatVolume",
    ]);

    // unmounted (nothing uses it), the same FormatVolume erases it: OK means formatted
    await admin.call("volume", "unmountVolume", { volumeId, targetPath: mountPath });
    assert.equal(await outcome(proxy.call("volume", "formatVolume", { volumeId })), "OK");
    assert.equal(blkid(partition, "TYPE"), "ext4");
    assert.notEqual(blkid(partition, "UUID"), uuidBefore, "a new filesystem");
    const look = mkdtempSync(path.join(tmpdir(), "csi-replay-lsp-look-"));
    try {
      assert.equal(spawnSync("mount", ["-o", "ro", partition, look]).status, 0);
      try {
        assert.equal(existsSync(path.join(look, "tenant.txt")), false, "the previous tenant's file is gone");
      } finally {
        spawnSync("umount", [look]);
      }
    } finally {
      rmSync(look, { recursive: true, force: true });
    }
  });
});
