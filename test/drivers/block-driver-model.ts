// A client-side model of the block drivers' Windows node paths (AzureDisk, GCE PD, vSphere before its
// move to the csi-proxy library; AWS EBS and amazon-ecs-agent have their own, aws-family-model.ts), restated from their
// code (docs/driver-compat.md: facts only). They share one shape — a k8s mount-utils
// "CSIProxyMounter" over the disk/filesystem/volume v1 clients — and differ in the flags below.
// Every branch a driver takes on a csi-proxy answer is here: success and error.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync, readFileSync, existsSync, rmSync, lstatSync } from "node:fs";
import * as path from "node:path";
import { CsiError, outcome, type BlockEnv, type Proxy } from "./replay-harness.ts";

export interface BlockDriverSpec {
  name: string;
  /** Group → version the driver's generated clients dial. */
  versions: { disk: string; filesystem: string; volume: string };
  /**
   * IsLikelyNotMountPoint: "exists+symlink" = PathExists (missing → os.ErrNotExist) then IsSymlink
   * (AzureDisk, Trident); "symlink" = IsSymlink only, any error = not mounted (GCE);
   * "local-lstat" = the driver's own os.Lstat and symlink bit, no csi-proxy call (vSphere).
   */
  mountCheck: "exists+symlink" | "symlink" | "local-lstat";
  /** FormatAndMount sets the disk online after PartitionDisk (GCE, vSphere). */
  setOnline: boolean;
  /**
   * NodeUnstage: "flush+rmdir" = GetVolumeIDFromTargetPath (error only logged) + WriteVolumeCache +
   * Rmdir(force) (AzureDisk); "unmount+offline" = [PathExists: missing → OK (GCE)] +
   * GetVolumeIDFromTargetPath + UnmountVolume + Rmdir(force) + GetDiskNumberFromVolumeID +
   * SetDiskState(offline) (GCE, vSphere).
   */
  unstage: "flush+rmdir" | "unmount+offline";
  /** The node server checks the staging path exists before unmounting (missing → OK): vSphere's VerifyTargetDir. */
  unstageChecksExists?: boolean;
  /** The mounter's Unmount starts with PathExists (missing → OK): GCE UnmountDevice, vSphere Unmount. */
  unmountExistsCheck?: boolean;
  /** NodePublish runs the mount check after preparing the path (AzureDisk ensureMountPoint). */
  publishMountCheck?: boolean;
  /** NodeGetVolumeStats on a missing path: the driver's own stat answers NotFound (GCE, vSphere) or it asks csi-proxy (AzureDisk). */
  statsLocalStat: boolean;
}

export class BlockDriver {
  readonly spec: BlockDriverSpec;
  readonly proxy: Proxy;
  readonly diskNumber: number;
  constructor(spec: BlockDriverSpec, proxy: Proxy, diskNumber: number) {
    this.spec = spec;
    this.proxy = proxy;
    this.diskNumber = diskNumber;
  }

  // ---- the CSIProxyMounter template
  async existsPath(p: string): Promise<boolean> {
    return ((await this.proxy.call("filesystem", "pathExists", { path: p })) as { exists: boolean }).exists;
  }
  /** [notMnt, notExist] as mount-utils returns (true, os.ErrNotExist) for a missing path. */
  async isLikelyNotMountPoint(p: string): Promise<{ notMnt: boolean; notExist: boolean }> {
    if (this.spec.mountCheck === "exists+symlink" && !(await this.existsPath(p))) return { notMnt: true, notExist: true };
    const r = (await this.proxy.call("filesystem", "isSymlink", { path: p })) as { isSymlink: boolean };
    return { notMnt: !r.isSymlink, notExist: false };
  }
  rmdirForce(p: string) {
    return this.proxy.call("filesystem", "rmdir", { path: p, force: true });
  }
  async volumeIdAt(p: string): Promise<string> {
    return ((await this.proxy.call("volume", "getVolumeIDFromTargetPath", { targetPath: p })) as { volumeId: string }).volumeId;
  }
  async formatAndMount(target: string): Promise<void> {
    const diskNumber = this.diskNumber;
    await this.proxy.call("disk", "partitionDisk", { diskNumber });
    if (this.spec.setOnline) await this.proxy.call("disk", "setDiskState", { diskNumber, isOnline: true });
    const { volumeIds } = (await this.proxy.call("volume", "listVolumesOnDisk", { diskNumber, partitionNumber: 0 })) as { volumeIds: string[] };
    if (volumeIds.length === 0) throw new Error("ListVolumesOnDisk does not return any volumes");
    const volumeId = volumeIds[0];
    const { formatted } = (await this.proxy.call("volume", "isVolumeFormatted", { volumeId })) as { formatted: boolean };
    if (!formatted) await this.proxy.call("volume", "formatVolume", { volumeId });
    await this.proxy.call("volume", "mountVolume", { volumeId, targetPath: target });
  }
  async unmountAndOffline(p: string): Promise<void> {
    if (this.spec.unmountExistsCheck && !(await this.existsPath(p))) return;
    const volumeId = await this.volumeIdAt(p);
    await this.proxy.call("volume", "unmountVolume", { volumeId, targetPath: p });
    await this.rmdirForce(p);
    const { diskNumber } = (await this.proxy.call("volume", "getDiskNumberFromVolumeID", { volumeId })) as { diskNumber: number };
    await this.proxy.call("disk", "setDiskState", { diskNumber, isOnline: false });
  }

  // ---- the CSI node calls
  async nodeStage(staging: string): Promise<void> {
    const wrap = (what: string) => (e: unknown) => {
      throw e instanceof CsiError ? e : new CsiError("Internal", `${what}: ${(e as Error).message}`);
    };
    {
      let mounted: boolean;
      if (this.spec.mountCheck === "local-lstat") {
        mounted = lstatSync(staging, { throwIfNoEntry: false })?.isSymbolicLink() ?? false;
      } else if (this.spec.mountCheck === "symlink") {
        mounted = await this.isLikelyNotMountPoint(staging).then((r) => !r.notMnt, () => false);
      } else {
        const r = await this.isLikelyNotMountPoint(staging).catch(wrap("could not mount target"));
        mounted = !r.notMnt;
      }
      if (mounted) return; // already staged
    }
    await this.formatAndMount(staging).catch(wrap("could not format and mount"));
  }

  async nodePublish(staging: string, target: string): Promise<void> {
    const wrap = (what: string) => (e: unknown) => {
      throw new CsiError("Internal", `${what}: ${(e as Error).message}`);
    };
    // preparePublishPath: kubelet's directory (or an earlier link) is removed, the link is created anew
    if (await this.existsPath(target).catch(wrap("Target path could not be prepared"))) await this.rmdirForce(target).catch(wrap("Target path could not be prepared"));
    if (this.spec.publishMountCheck && !(await this.isLikelyNotMountPoint(target).catch(wrap("could not mount target"))).notMnt) return;
    await this.proxy.call("filesystem", "createSymlink", { sourcePath: staging, targetPath: target }).catch(wrap("could not mount"));
  }

  async nodeUnpublish(target: string): Promise<void> {
    await this.rmdirForce(target).catch((e) => {
      throw new CsiError("Internal", `failed to unmount target: ${(e as Error).message}`);
    });
  }

  async nodeUnstage(staging: string): Promise<void> {
    const fail = (e: unknown) => {
      throw new CsiError("Internal", `failed to unmount staging target: ${(e as Error).message}`);
    };
    switch (this.spec.unstage) {
      case "flush+rmdir": {
        const volumeId = await this.volumeIdAt(staging).catch(() => null); // only logged
        if (volumeId) await this.proxy.call("volume", "writeVolumeCache", { volumeId }).catch(() => null);
        await this.rmdirForce(staging).catch(fail);
        return;
      }
      case "unmount+offline":
        if (this.spec.unstageChecksExists && !(await this.existsPath(staging).catch(fail))) return;
        await this.unmountAndOffline(staging).catch(fail);
        return;
    }
  }

  /** NodeExpandVolume, filesystem mode: the volume at the path, grown to the largest size (ResizeVolume 0). */
  async nodeExpand(volumePath: string): Promise<void> {
    let volumeId: string;
    try {
      volumeId = await this.volumeIdAt(volumePath);
    } catch (e) {
      throw new CsiError("NotFound", `failed to determine device path for ${volumePath}: ${(e as Error).message}`);
    }
    await this.proxy.call("volume", "resizeVolume", { volumeId, sizeBytes: 0n }).catch((e) => {
      throw new CsiError("Internal", `could not resize volume: ${(e as Error).message}`);
    });
  }

  async nodeGetVolumeStats(volumePath: string): Promise<{ total: bigint; used: bigint }> {
    if (this.spec.statsLocalStat && !existsSync(volumePath)) throw new CsiError("NotFound", `path ${volumePath} does not exist`);
    try {
      const volumeId = await this.volumeIdAt(volumePath);
      const r = (await this.proxy.call("volume", "getVolumeStats", { volumeId })) as { totalBytes: bigint; usedBytes: bigint };
      return { total: r.totalBytes, used: r.usedBytes };
    } catch (e) {
      throw new CsiError("Internal", `failed to get volume stats: ${(e as Error).message}`);
    }
  }
}

/** Per step: "OK", or a CSI code the replay expects (differences from upstream are explained in docs/driver-compat.md). */
export interface BlockExpectations {
  unstageMounted?: string;
  unstageAfterHalfStage?: string;
}

/**
 * The replay every block driver goes through against the daemon, on a loop device: stage twice,
 * publish twice, stats (and stats on a missing path), expand at full size, unpublish twice,
 * unstage twice, then a stage that fails halfway (staging directory not empty) and the unstage
 * kubelet sends after it. Asserts the outcome of every node call and that the data survives.
 */
export async function replayBlockDriver(env: BlockEnv, spec: BlockDriverSpec, expect: BlockExpectations = {}): Promise<Record<string, string[]>> {
  const proxy = env.proxy(spec.versions);
  const driver = new BlockDriver(spec, proxy, env.loop.diskNumber);
  const { staging, publish } = env.paths("pv1");
  const calls: Record<string, string[]> = {};
  const step = async (name: string, p: Promise<unknown>, want = "OK") => {
    const got = await outcome(p);
    calls[name] = proxy.take();
    assert.ok(want === "OK" ? got === "OK" : got.startsWith(want), `${spec.name} ${name}: ${got} (calls ${calls[name].join(", ")})`);
    return got;
  };

  mkdirSync(staging, { recursive: true }); // kubelet creates the staging directory
  await step("NodeStage", driver.nodeStage(staging));
  assert.deepEqual(env.loop.mounts(), [staging]);
  writeFileSync(path.join(staging, "data.txt"), "kept");
  await step("NodeStage again", driver.nodeStage(staging));
  // a re-stage never formats; drivers whose own check cannot see a mount point (vSphere's lstat) rely on MountVolume's idempotency
  assert.ok(!calls["NodeStage again"].includes("volume.FormatVolume"), `${spec.name}: a re-stage formatted`);
  if (spec.mountCheck !== "local-lstat") assert.ok(!calls["NodeStage again"].includes("volume.MountVolume"), `${spec.name}: a re-stage mounted again`);
  assert.deepEqual(env.loop.mounts(), [staging]);

  mkdirSync(publish, { recursive: true }); // kubelet creates the target directory
  await step("NodePublish", driver.nodePublish(staging, publish));
  await step("NodePublish again", driver.nodePublish(staging, publish));
  assert.equal(readFileSync(path.join(publish, "data.txt"), "utf8"), "kept");

  await step("NodeGetVolumeStats", driver.nodeGetVolumeStats(publish));
  await step("NodeGetVolumeStats missing path", driver.nodeGetVolumeStats(path.join(env.kubelet, "pods", "gone", "mount")), spec.statsLocalStat ? "NotFound" : "Internal");
  await step("NodeExpand at full size", driver.nodeExpand(staging));

  await step("NodeUnpublish", driver.nodeUnpublish(publish));
  await step("NodeUnpublish again", driver.nodeUnpublish(publish));
  assert.equal(readFileSync(path.join(staging, "data.txt"), "utf8"), "kept", "unpublish removed the link only");

  await step("NodeUnstage", driver.nodeUnstage(staging), expect.unstageMounted ?? "OK");
  if ((expect.unstageMounted ?? "OK") !== "OK") {
    // the refusal left the volume mounted and its data intact; kubelet keeps retrying — here the
    // operator's unmount stands in, then the driver's retry succeeds
    assert.equal(readFileSync(path.join(staging, "data.txt"), "utf8"), "kept");
    const volumeId = (await proxy.call("volume", "getVolumeIDFromTargetPath", { targetPath: staging })) as { volumeId: string };
    await proxy.call("volume", "unmountVolume", { volumeId: volumeId.volumeId, targetPath: staging });
    proxy.take();
    await step("NodeUnstage retried", driver.nodeUnstage(staging));
  }
  assert.deepEqual(env.loop.mounts(), []);
  await step("NodeUnstage again", driver.nodeUnstage(staging));

  // A stage that fails halfway: the staging directory holds a stray file, so MountVolume refuses
  // after partitioning/formatting; kubelet then calls NodeUnstage.
  await proxy.call("disk", "setDiskState", { diskNumber: env.loop.diskNumber, isOnline: true });
  proxy.take();
  const half = env.paths("pv-half").staging;
  mkdirSync(half, { recursive: true });
  writeFileSync(path.join(half, "stray"), "x");
  await step("NodeStage failing halfway", driver.nodeStage(half), "Internal");
  assert.ok(calls["NodeStage failing halfway"].includes("volume.MountVolume"));
  await step("NodeUnstage after the failed stage", driver.nodeUnstage(half), expect.unstageAfterHalfStage ?? "OK");
  rmSync(half, { recursive: true, force: true });
  assert.deepEqual(env.loop.mounts(), []);
  return calls;
}
