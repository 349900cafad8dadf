// Replay of sig-storage-local-static-provisioner on Windows (pkg/util/csi_proxy_v1_windows.go,
// volume_util_windows.go; filesystem v1 + volume v1). It is not a CSI node plugin: it discovers
// volumes an operator mounted under a discovery directory (IsSymlink = "is a mount point";
// GetVolumeIDFromTargetPath + GetVolumeStats = capacity) and cleans a released volume with
// DeleteContents = GetVolumeIDFromTargetPath + FormatVolume (a quick format erases it upstream).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { blockSkipReason, startBlockEnv, type BlockEnv } from "./replay-harness.ts";

const skip = blockSkipReason();

describe("sig-storage-local-static-provisioner replay", { skip: skip ?? false }, () => {
  let env: BlockEnv;
  before(async () => {
    env = await startBlockEnv("lsp", { workingDir: true });
  });
  after(async () => {
    await env?.stop();
  });

  it("discovery, capacity, and cleanup of a released volume (FormatVolume keeps the data: differs)", async () => {
    const admin = env.proxy({ disk: "v1", volume: "v1" });
    const proxy = env.proxy({ filesystem: "v1", volume: "v1" });
    // the operator prepares a volume and mounts it under the discovery directory (-working-dir)
    await admin.call("disk", "partitionDisk", { diskNumber: env.loop.diskNumber });
    const { volumeIds } = await admin.call<{ volumeIds: string[] }>("volume", "listVolumesOnDisk", { diskNumber: env.loop.diskNumber, partitionNumber: 0 });
    await admin.call("volume", "formatVolume", { volumeId: volumeIds[0] });
    const mountPath = path.join(env.workingDir!, "vol1");
    mkdirSync(mountPath);
    await admin.call("volume", "mountVolume", { volumeId: volumeIds[0], targetPath: mountPath });

    // discovery: a mount point, its volume and capacity
    assert.equal((await proxy.call<{ isSymlink: boolean }>("filesystem", "isSymlink", { path: mountPath })).isSymlink, true);
    const { volumeId } = await proxy.call<{ volumeId: string }>("volume", "getVolumeIDFromTargetPath", { targetPath: mountPath });
    assert.equal(volumeId, volumeIds[0]);
    const stats = await proxy.call<{ totalBytes: bigint }>("volume", "getVolumeStats", { volumeId });
    assert.ok(stats.totalBytes > 40n * 1024n * 1024n);
    // a plain directory in the discovery directory is not a mount point (IsSymlink false, no error)
    mkdirSync(path.join(env.workingDir!, "notmounted"));
    assert.equal((await proxy.call<{ isSymlink: boolean }>("filesystem", "isSymlink", { path: path.join(env.workingDir!, "notmounted") })).isSymlink, false);

    // cleanup of the released volume: upstream quick-formats it; we never format over a filesystem,
    // so the call succeeds and the previous tenant's data is still there (docs/driver-compat.md)
    writeFileSync(path.join(mountPath, "tenant.txt"), "previous tenant");
    await proxy.call("volume", "formatVolume", { volumeId });
    assert.equal(readFileSync(path.join(mountPath, "tenant.txt"), "utf8"), "previous tenant");
    assert.deepEqual(proxy.take(), ["filesystem.IsSymlink", "volume.GetVolumeIDFromTargetPath", "volume.GetVolumeStats", "filesystem.IsSymlink", "volume.FormatVolume"]);

    await admin.call("volume", "unmountVolume", { volumeId, targetPath: mountPath });
  });
});
