// One sample request and the acceptable status codes for each of the 139 RPCs, used by the
// integration tests that call every RPC through our typed client and through Python grpcio.
// Requests are proto3 JSON (json names), so both clients send exactly the same messages.
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import * as path from "node:path";

export type CodeName = "OK" | "INVALID_ARGUMENT" | "NOT_FOUND" | "PERMISSION_DENIED" | "FAILED_PRECONDITION" | "UNIMPLEMENTED" | "ALREADY_EXISTS";
export interface MatrixEntry {
  request: Record<string, unknown>;
  expect: CodeName[];
}

/** Groups whose host layer is not in this build yet: they may also answer UNIMPLEMENTED. */
export const pendingGroups = new Set<string>();

/** A disk number no machine has, and a well-formed volume id no machine has. */
const NO_DISK = 4000000000;
const NO_VOLUME = "\\\\?\\Volume{00000000-0000-0000-0000-00000000dead}\\";

/** Lays out the kubelet dir the filesystem requests expect. */
export function prepareKubeletDir(kubelet: string): void {
  rmSync(kubelet, { recursive: true, force: true });
  mkdirSync(path.join(kubelet, "exists"), { recursive: true });
  mkdirSync(path.join(kubelet, "src"));
  symlinkSync(path.join(kubelet, "src"), path.join(kubelet, "link-existing"));
  mkdirSync(path.join(kubelet, "contents/sub"), { recursive: true });
  writeFileSync(path.join(kubelet, "contents/file"), "x");
  for (const v of ["v1alpha1", "v1beta1", "v1beta2", "v1", "v2alpha1"]) mkdirSync(path.join(kubelet, `rm-${v}/inner`), { recursive: true });
}

export function matrixEntry(group: string, version: string, method: string, kubelet: string): MatrixEntry {
  const k = (p: string) => path.join(kubelet, p);
  const legacyDisk = ["v1alpha1", "v1beta1", "v1beta2"].includes(version);
  const disk = legacyDisk ? { diskID: String(NO_DISK) } : { diskNumber: NO_DISK };
  const root = process.getuid?.() === 0;
  const privileged = (codes: CodeName[]): CodeName[] => (root ? codes : ["PERMISSION_DENIED"]);
  const table: Record<string, Record<string, MatrixEntry>> = {
    filesystem: {
      PathExists: { request: { path: k("exists") }, expect: ["OK"] },
      Mkdir: { request: { path: k(`mk-${version}/a/b`) }, expect: ["OK"] },
      Rmdir: { request: { path: k(`rm-${version}`), force: true }, expect: ["OK"] },
      RmdirContents: { request: { path: k("contents") }, expect: ["OK"] },
      LinkPath: { request: { sourcePath: k("src"), targetPath: k(`ln-${version}`) }, expect: ["OK"] },
      CreateSymlink: { request: { sourcePath: k("src"), targetPath: k(`ln-${version}`) }, expect: ["OK"] },
      IsMountPoint: { request: { path: k("link-existing") }, expect: ["OK"] },
      IsSymlink: { request: { path: k("link-existing") }, expect: ["OK"] },
    },
    disk: {
      ListDiskLocations: { request: {}, expect: privileged(["OK"]) },
      PartitionDisk: { request: disk, expect: privileged(["NOT_FOUND"]) },
      Rescan: { request: {}, expect: privileged(["OK"]) },
      GetDiskNumberByName: { request: { diskName: "csi-proxy-test-no-such-page83" }, expect: privileged(["NOT_FOUND"]) },
      ListDiskIDs: { request: {}, expect: privileged(["OK"]) },
      DiskStats: { request: disk, expect: privileged(["NOT_FOUND"]) },
      GetDiskStats: { request: disk, expect: privileged(["NOT_FOUND"]) },
      SetAttachState: { request: { ...disk, isOnline: true }, expect: privileged(["NOT_FOUND"]) },
      SetDiskState: { request: { ...disk, isOnline: true }, expect: privileged(["NOT_FOUND"]) },
      GetAttachState: { request: disk, expect: privileged(["NOT_FOUND"]) },
      GetDiskState: { request: disk, expect: privileged(["NOT_FOUND"]) },
    },
    volume: {
      ListVolumesOnDisk: { request: legacyDisk ? { diskId: String(NO_DISK) } : { diskNumber: NO_DISK }, expect: privileged(["OK"]) },
      MountVolume: { request: { volumeId: "", [legacyDisk ? "path" : "targetPath"]: k("exists") }, expect: ["INVALID_ARGUMENT"] },
      DismountVolume: { request: { volumeId: "", path: k("exists") }, expect: ["INVALID_ARGUMENT"] },
      UnmountVolume: { request: { volumeId: "", targetPath: k("exists") }, expect: ["INVALID_ARGUMENT"] },
      IsVolumeFormatted: { request: { volumeId: NO_VOLUME }, expect: privileged(["NOT_FOUND"]) },
      FormatVolume: { request: { volumeId: NO_VOLUME }, expect: privileged(["NOT_FOUND"]) },
      ResizeVolume: { request: { volumeId: NO_VOLUME }, expect: privileged(["NOT_FOUND"]) },
      VolumeStats: { request: { volumeId: NO_VOLUME }, expect: privileged(["NOT_FOUND"]) },
      GetVolumeStats: { request: { volumeId: NO_VOLUME }, expect: privileged(["NOT_FOUND"]) },
      GetVolumeDiskNumber: { request: { volumeId: NO_VOLUME }, expect: privileged(["NOT_FOUND"]) },
      GetDiskNumberFromVolumeID: { request: { volumeId: NO_VOLUME }, expect: privileged(["NOT_FOUND"]) },
      GetVolumeIDFromMount: { request: { mount: k("exists") }, expect: privileged(["NOT_FOUND"]) },
      GetVolumeIDFromTargetPath: { request: { targetPath: k("exists") }, expect: privileged(["NOT_FOUND"]) },
      GetClosestVolumeIDFromTargetPath: { request: { targetPath: k("exists") }, expect: privileged(["OK", "NOT_FOUND"]) },
      WriteVolumeCache: { request: { volumeId: NO_VOLUME }, expect: privileged(["NOT_FOUND"]) },
    },
    smb: {
      NewSmbGlobalMapping: { request: { remotePath: "", localPath: "", username: "", password: "" }, expect: ["INVALID_ARGUMENT"] },
      RemoveSmbGlobalMapping: { request: { remotePath: "\\\\csi-proxy-no-such-server\\share" }, expect: ["NOT_FOUND"] },
    },
    iscsi: {
      AddTargetPortal: { request: {}, expect: ["INVALID_ARGUMENT"] },
      DiscoverTargetPortal: { request: {}, expect: ["INVALID_ARGUMENT"] },
      RemoveTargetPortal: { request: {}, expect: ["INVALID_ARGUMENT"] },
      ListTargetPortals: { request: {}, expect: ["OK", "FAILED_PRECONDITION"] },
      ConnectTarget: { request: { iqn: "iqn.2026-11.test:x" }, expect: ["INVALID_ARGUMENT"] },
      DisconnectTarget: { request: { iqn: "iqn.2026-11.test:x" }, expect: ["INVALID_ARGUMENT"] },
      GetTargetDisks: { request: { iqn: "iqn.2026-11.test:x" }, expect: ["INVALID_ARGUMENT"] },
      SetMutualChapSecret: { request: { MutualChapSecret: "" }, expect: ["OK", "INVALID_ARGUMENT"] },
    },
    system: {
      GetBIOSSerialNumber: { request: {}, expect: ["OK", "NOT_FOUND", "FAILED_PRECONDITION"] },
      GetService: { request: { name: "csi-proxy-no-such-service" }, expect: ["NOT_FOUND", "FAILED_PRECONDITION"] },
      StartService: { request: { name: "csi-proxy-no-such-service" }, expect: ["PERMISSION_DENIED"] },
      StopService: { request: { name: "csi-proxy-no-such-service" }, expect: ["PERMISSION_DENIED"] },
    },
  };
  const entry = table[group]?.[method];
  if (!entry) throw new Error(`no matrix entry for ${group}/${version}/${method}`);
  return pendingGroups.has(group) ? { ...entry, expect: [...entry.expect, "UNIMPLEMENTED"] } : entry;
}
