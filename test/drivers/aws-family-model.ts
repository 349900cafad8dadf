// The Windows node paths of AWS EBS (gRPC mode: its CSIProxyMounter over csi-proxy's v1 clients) and of
// amazon-ecs-agent's copy, restated call by call from their code (docs/driver-compat.md: facts only).
// Each step cites file:line of the commits read:
//   EBS = kubernetes-sigs/aws-ebs-csi-driver 429e202e589798e55c0f8ddcc81b2850b7f000d0
//         (pkg/driver/node.go, pkg/mounter/mount_windows.go, pkg/mounter/mount_windows_proxyV1.go)
//   ECS = aws/amazon-ecs-agent 8dfceca6cf380a83c3007349317566f2862f0673, under ecs-agent/daemonimages/csidriver/
//         (driver/node.go, driver/node_windows.go, driver/mount_windows.go, mounter/safe_mounter_windows.go)
// The CSI code each node call answers kubelet with is the driver's own (status.Error in node.go).
import { statfsSync } from "node:fs";
import { CsiError, ProxyError, type Proxy } from "./replay-harness.ts";

/** EBS mount_windows.go:152 and ECS driver/mount_windows.go:66: the "not mounted" texts of GetDeviceNameFromMount. */
export const AWS_NOT_MOUNTED = /(Get-Item -Path \S+).Target, output: , error: <nil>|because it does not exist/;

/** EBS pkg/util/util.go:40, ECS driver/mount_windows.go:126: one block tolerated between disk and filesystem size. */
const DEFAULT_BLOCK_SIZE = 4096n;

export type AwsFamily = "ebs" | "ecs";

/** Every csi-proxy call either driver makes goes through its v1 clients (EBS proxyV1.go:29-34, ECS safe_mounter_windows.go imports). */
export const AWS_VERSIONS = { disk: "v1", filesystem: "v1", volume: "v1" } as const;

export class AwsFamilyNode {
  readonly family: AwsFamily;
  readonly proxy: Proxy;
  constructor(family: AwsFamily, proxy: Proxy) {
    this.family = family;
    this.proxy = proxy;
  }

  // ---- the mounter (EBS mount_windows_proxyV1.go / ECS mounter/safe_mounter_windows.go)

  /** EBS proxyV1.go:256-265, ECS safe_mounter_windows.go:263-272: the PathExists RPC. */
  async existsPath(p: string): Promise<boolean> {
    return (await this.proxy.call<{ exists: boolean }>("filesystem", "pathExists", { path: p })).exists;
  }

  /**
   * EBS proxyV1.go:478-506 (FindDevicePath), ECS driver/node_windows.go:57-78 (findDevicePath): ListDiskIDs,
   * then the first disk whose SerialNumber contains the volume id without its dashes (Go map order).
   */
  async findDevicePath(devicePath: string, volumeId: string): Promise<string> {
    const { diskIDs } = await this.proxy.call<{ diskIDs: Record<string, { serialNumber: string }> }>("disk", "listDiskIDs", {});
    const clean = volumeId.replaceAll("-", "");
    const found = Object.entries(diskIDs).find(([, ids]) => ids.serialNumber.includes(clean));
    if (!found) throw new Error(`disk number for device path "${devicePath}" volume id "${volumeId}" not found`);
    return found[0];
  }

  /**
   * EBS mount_windows.go:124-161 over proxyV1.go:213-229; ECS driver/mount_windows.go:53-78 over
   * safe_mounter_windows.go:220-236: GetVolumeIDFromTargetPath + GetDiskNumberFromVolumeID → (disk number, 1);
   * an error matching the regexp → ("", 0); any other error is wrapped.
   */
  async getDeviceNameFromMount(p: string): Promise<{ device: string; refCount: number }> {
    try {
      const { volumeId } = await this.proxy.call<{ volumeId: string }>("volume", "getVolumeIDFromTargetPath", { targetPath: p });
      const { diskNumber } = await this.proxy.call<{ diskNumber: number }>("volume", "getDiskNumberFromVolumeID", { volumeId });
      return { device: String(diskNumber), refCount: 1 };
    } catch (e) {
      if (e instanceof ProxyError && AWS_NOT_MOUNTED.test(e.message)) return { device: "", refCount: 0 };
      throw new Error(`error getting device name from mount: ${(e as Error).message}`);
    }
  }

  /** EBS proxyV1.go:326-405, ECS safe_mounter_windows.go:333-413 (the same calls). */
  async formatAndMount(source: string, target: string): Promise<void> {
    const diskNumber = Number(source);
    await this.proxy.call("disk", "partitionDisk", { diskNumber }); // EBS :343-349
    await this.proxy.call("disk", "setDiskState", { diskNumber, isOnline: true }); // EBS :352-359
    const { volumeIds } = await this.proxy.call<{ volumeIds: string[] }>("volume", "listVolumesOnDisk", { diskNumber }); // EBS :362-368
    const volumeId = volumeIds[0]; // EBS :372 (an empty list panics the driver: index out of range)
    const { formatted } = await this.proxy.call<{ formatted: boolean }>("volume", "isVolumeFormatted", { volumeId }); // EBS :375-381
    if (!formatted) await this.proxy.call("volume", "formatVolume", { volumeId }); // EBS :384-393
    await this.proxy.call("volume", "mountVolume", { volumeId, targetPath: target }); // EBS :396-403
  }

  /** EBS proxyV1.go:456-472 (GetDeviceSize): GetDiskStats of the disk number. */
  async deviceSize(source: string): Promise<bigint> {
    return (await this.proxy.call<{ totalBytes: bigint }>("disk", "getDiskStats", { diskNumber: Number(source) })).totalBytes;
  }

  /** EBS proxyV1.go:432-453 (GetVolumeSizeInBytes): GetVolumeIDFromTargetPath + GetVolumeStats TotalBytes. */
  async volumeSize(target: string): Promise<bigint> {
    const { volumeId } = await this.proxy.call<{ volumeId: string }>("volume", "getVolumeIDFromTargetPath", { targetPath: target });
    return (await this.proxy.call<{ totalBytes: bigint }>("volume", "getVolumeStats", { volumeId })).totalBytes;
  }

  /**
   * NeedResize: EBS mount_windows.go:237-257 (Rescan, its error only logged; GetDiskStats; GetVolumeIDFromTargetPath +
   * GetVolumeStats); ECS driver/mount_windows.go:110-130 (the same without Rescan).
   */
  async needResize(source: string, target: string): Promise<boolean> {
    if (this.family === "ebs") await this.proxy.call("disk", "rescan", {}).catch(() => undefined);
    const device = await this.deviceSize(source);
    const fs = await this.volumeSize(target);
    return device <= DEFAULT_BLOCK_SIZE + fs;
  }

  /** EBS mount_windows.go:209-213 (Rescan, error only logged) → proxyV1.go:408-429 (GetVolumeIDFromTargetPath + ResizeVolume, size 0). */
  async resize(deviceMountPath: string): Promise<void> {
    await this.proxy.call("disk", "rescan", {}).catch(() => undefined);
    const { volumeId } = await this.proxy.call<{ volumeId: string }>("volume", "getVolumeIDFromTargetPath", { targetPath: deviceMountPath });
    await this.proxy.call("volume", "resizeVolume", { volumeId });
  }

  /** EBS proxyV1.go:87-133, ECS safe_mounter_windows.go:94-141: VID, UnmountVolume, Rmdir(force), GetDiskNumberFromVolumeID, SetDiskState(offline). */
  async unmount(target: string): Promise<void> {
    const { volumeId } = await this.proxy.call<{ volumeId: string }>("volume", "getVolumeIDFromTargetPath", { targetPath: target });
    await this.proxy.call("volume", "unmountVolume", { volumeId, targetPath: target });
    await this.rmdir(target);
    const { diskNumber } = await this.proxy.call<{ diskNumber: number }>("volume", "getDiskNumberFromVolumeID", { volumeId });
    await this.proxy.call("disk", "setDiskState", { diskNumber, isOnline: false });
  }

  /** EBS proxyV1.go:136-146: Rmdir with force. */
  rmdir(p: string) {
    return this.proxy.call("filesystem", "rmdir", { path: p, force: true });
  }

  /** EBS proxyV1.go:184-202: PathExists (missing → not a mount point, os.ErrNotExist), then IsSymlink. */
  async isLikelyNotMountPoint(p: string): Promise<{ notMnt: boolean; notExist: boolean }> {
    if (!(await this.existsPath(p))) return { notMnt: true, notExist: true };
    return { notMnt: !(await this.proxy.call<{ isSymlink: boolean }>("filesystem", "isSymlink", { path: p })).isSymlink, notExist: false };
  }

  // ---- the node service (EBS pkg/driver/node.go, ECS driver/node.go)

  /** EBS node.go:222-313; ECS node.go:170-290. Publish context carries the device path; the volume id is the EBS id. */
  async nodeStage(volumeId: string, devicePath: string, target: string): Promise<void> {
    let source: string;
    try {
      source = await this.findDevicePath(devicePath, volumeId);
    } catch (e) {
      // EBS node.go:222-225 NotFound; ECS node.go:169-172 Internal
      throw new CsiError(this.family === "ebs" ? "NotFound" : "Internal", `Failed to find device path ${devicePath}. ${(e as Error).message}`);
    }
    const exists = await this.existsPath(target).catch((e) => {
      throw new CsiError("Internal", `failed to check if target "${target}" exists: ${(e as Error).message}`); // EBS :228-232
    });
    if (!exists) {
      await this.proxy.call("filesystem", "mkdir", { path: target }).catch((e) => {
        throw new CsiError("Internal", `could not create target dir "${target}": ${(e as Error).message}`); // EBS :239-242 (proxyV1.go:242-253)
      });
    }
    const { device } = await this.getDeviceNameFromMount(target).catch((e) => {
      throw new CsiError("Internal", `failed to check if volume is already mounted: ${(e as Error).message}`); // EBS :246-250
    });
    if (device === source) return; // EBS :256-259: already staged
    await this.formatAndMount(source, target).catch((e) => {
      throw new CsiError("Internal", `could not format "${source}" and mount it at "${target}": ${(e as Error).message}`); // EBS :295-299
    });
    const needResize = await this.needResize(source, target).catch((e) => {
      throw new CsiError("Internal", `Could not determine if volume "${volumeId}" ("${source}") need to be resized:  ${(e as Error).message}`); // EBS :301-304
    });
    if (needResize) {
      if (this.family === "ecs") throw new Error("ECS's NewResizeFs path (resizefs/resizefs_windows.go) is not modelled: the replay's volume never needs it");
      await this.resize(target).catch((e) => {
        throw new CsiError("Internal", `Could not resize volume "${volumeId}" ("${source}"):  ${(e as Error).message}`); // EBS :306-311
      });
    }
    // ECS node.go:264-276: setMountPointPermissions is a no-op on Windows (node_windows.go:80-84)
  }

  /** EBS node.go:339-363; ECS node.go:318-342. */
  async nodeUnstage(target: string): Promise<void> {
    const { refCount } = await this.getDeviceNameFromMount(target).catch((e) => {
      throw new CsiError("Internal", `failed to check if target "${target}" is a mount point: ${(e as Error).message}`); // EBS :339-343
    });
    if (refCount === 0) return; // EBS :348-351: not staged → OK
    await this.unmount(target).catch((e) => {
      throw new CsiError("Internal", `Could not unmount target "${target}": unmount failed: ${(e as Error).message}`); // EBS :358-361, mount_windows.go:292-294
    });
  }

  /** EBS node.go:771-812 (filesystem mode). ECS has no NodePublishVolume (csi.UnimplementedNodeServer, node.go:72-74). */
  async nodePublish(staging: string, target: string): Promise<void> {
    if (this.family === "ecs") throw new CsiError("Unimplemented", "method NodePublishVolume not implemented");
    // PreparePublishTarget, mount_windows.go:48-78: PathExists; an existing target is removed (Rmdir force);
    // its error reaches kubelet as Internal with its own text (node.go:782-784)
    const exists = await this.existsPath(target).catch((e) => {
      throw new CsiError("Internal", `error checking path "${target}" exists: ${(e as Error).message}`); // mount_windows.go:54-57
    });
    if (exists) {
      await this.rmdir(target).catch((e) => {
        throw new CsiError("Internal", `error Rmdir target "${target}": ${(e as Error).message}`); // mount_windows.go:69-72
      });
    }
    // isMounted, node.go:731-769: IsLikelyNotMountPoint; a missing target is "not mounted" (node.go:759-762)
    let mounted: boolean;
    try {
      const r = await this.isLikelyNotMountPoint(target);
      mounted = !r.notMnt;
    } catch (e) {
      // node.go:750 then :787-790 (the corrupted-mount branch needs an IsCorruptedMnt error, which csi-proxy's texts never are)
      throw new CsiError("Internal", `Could not check if "${target}" is mounted: Could not check if "${target}" is a mount point: ${(e as Error).message}`);
    }
    if (mounted) return;
    // Mount, proxyV1.go:73-85: CreateSymlink(source = staging, target)
    await this.proxy.call("filesystem", "createSymlink", { sourcePath: staging, targetPath: target }).catch((e) => {
      throw new CsiError("Internal", `Could not mount "${staging}" at "${target}": ${(e as Error).message}`); // node.go:805-807
    });
  }

  /** EBS node.go:517-521 → mount_windows.go:261-277: Rmdir(force). */
  async nodeUnpublish(target: string): Promise<void> {
    if (this.family === "ecs") throw new CsiError("Unimplemented", "method NodeUnpublishVolume not implemented");
    await this.rmdir(target).catch((e) => {
      throw new CsiError("Internal", `Could not unmount "${target}": failed to remove directory: ${(e as Error).message}`);
    });
  }

  /**
   * EBS node.go:415-434 (filesystem mode; IsBlockDevice is false on Windows, mount_windows.go:81-83):
   * GetDeviceNameFromMount → FindDevicePath → Resize → GetBlockSizeBytes (GetDiskStats). Returns the capacity.
   * ECS does not expand (no EXPAND_VOLUME capability, node.go:59-62).
   */
  async nodeExpand(volumeId: string, volumePath: string): Promise<bigint> {
    if (this.family === "ecs") throw new CsiError("Unimplemented", "method NodeExpandVolume not implemented");
    const { device } = await this.getDeviceNameFromMount(volumePath).catch((e) => {
      throw new CsiError("Internal", `failed to get device name from mount ${volumePath}: ${(e as Error).message}`); // :415-418
    });
    let devicePath: string;
    try {
      devicePath = await this.findDevicePath(device, volumeId); // :420-423
    } catch (e) {
      throw new CsiError("NotFound", `failed to find device path for device name ${device} for mount ${volumePath}: ${(e as Error).message}`);
    }
    await this.resize(volumePath).catch((e) => {
      throw new CsiError("Internal", `Could not resize volume "${volumeId}" ("${devicePath}"): ${(e as Error).message}`); // :425-427
    });
    return this.deviceSize(devicePath).catch((e) => {
      throw new CsiError("Internal", `failed to get block capacity on path ${volumePath}: ${(e as Error).message}`); // :429-432
    });
  }

  /**
   * EBS node.go:534-587; ECS node.go:355-395: the PathExists RPC (missing → NotFound), then the driver's own
   * local calls only — IsBlockDevice (false / ECS util/utils_windows.go:57, a container path probe) and
   * free space (EBS GetDiskFreeSpaceEx, mount_windows.go:300-322; ECS statfs, volume/metrics.go): statfs here.
   */
  async nodeGetVolumeStats(volumePath: string): Promise<{ total: bigint; available: bigint }> {
    const exists = await this.existsPath(volumePath).catch((e) => {
      throw new CsiError("Internal", `unknown error when stat on ${volumePath}: ${(e as Error).message}`);
    });
    if (!exists) throw new CsiError("NotFound", `path ${volumePath} does not exist`);
    try {
      const s = statfsSync(volumePath, { bigint: true });
      return { total: s.blocks * s.bsize, available: s.bavail * s.bsize };
    } catch (e) {
      throw new CsiError("Internal", `failed to get fs info on path ${volumePath}: ${(e as Error).message}`);
    }
  }
}

/** An EBS-style volume id (`vol-` + 17 hex digits) unique to this process and call. */
export function ebsVolumeId(): string {
  const hex = (process.pid.toString(16) + Date.now().toString(16) + Math.random().toString(16).slice(2)).replace(/[^0-9a-f]/g, "");
  return `vol-0${hex.slice(-16).padStart(16, "0")}`;
}
