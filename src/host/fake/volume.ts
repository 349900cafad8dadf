import type { FilesystemUsage, ManagedFsType, VolumeHostApi } from "../../groups/volume/host-api.ts";
import { FakeBlockHost } from "./block-host.ts";
import { internal } from "../../errors.ts";

/** Stateful fake of the volume host: operates on its {@link FakeBlockWorld} (share one world with a FakeDiskHost). */
export class FakeVolumeHost extends FakeBlockHost implements VolumeHostApi {
  /** Devices flushed, in order (a flush must precede each unmount). */
  flushed: string[] = [];

  async makeFilesystem(devPath: string, fsType: ManagedFsType): Promise<void> {
    this.world.enter("makeFilesystem", `${devPath} ${fsType}`, true);
    this.world.makeFilesystem(devPath, fsType);
  }
  async mount(devPath: string, target: string, fsType: string): Promise<void> {
    this.world.enter("mount", `${devPath} ${target} ${fsType}`, true);
    this.world.mount(devPath, target, fsType);
  }
  async unmount(target: string): Promise<void> {
    this.world.enter("unmount", target, true);
    this.world.unmount(target);
  }
  async inspectDirectory(path: string): Promise<{ isDirectory: boolean; empty: boolean } | null> {
    this.world.enter("inspectDirectory", path);
    const entries = this.world.dirs.get(path);
    return entries === undefined ? null : { isDirectory: true, empty: entries === 0 };
  }
  async statfs(mountPoint: string): Promise<FilesystemUsage> {
    this.world.enter("statfs", mountPoint);
    return this.world.statfs(mountPoint);
  }
  async readFilesystemUsage(devPath: string, fsType: ManagedFsType): Promise<FilesystemUsage> {
    this.world.enter("readFilesystemUsage", `${devPath} ${fsType}`);
    const fs = this.world.fsOf(devPath);
    return { totalBytes: fs.sizeBytes, freeBytes: fs.sizeBytes - fs.usedBytes };
  }
  async flush(devPath: string): Promise<void> {
    this.world.enter("flush", devPath, true);
    this.flushed.push(devPath);
  }
  async relocateGptBackup(diskDevPath: string): Promise<void> {
    this.world.enter("relocateGptBackup", diskDevPath, true);
    const table = this.world.find(diskDevPath).disk.table;
    if (!table) throw internal("fake sfdisk: no table");
    table.backupAtEnd = true;
  }
  async resizePartition(diskDevPath: string, number: number, sizeSectors: bigint): Promise<void> {
    this.world.enter("resizePartition", `${diskDevPath} ${number} ${sizeSectors}`, true);
    this.world.resizePartition(diskDevPath, number, sizeSectors);
  }
  async checkFilesystem(devPath: string, fsType: ManagedFsType): Promise<void> {
    this.world.enter("checkFilesystem", `${devPath} ${fsType}`, true);
  }
  async growFilesystem(devPath: string, fsType: ManagedFsType, mountPoint: string | null): Promise<void> {
    this.world.enter("growFilesystem", `${devPath} ${fsType} ${mountPoint ?? "-"}`, true);
    this.world.growFilesystem(devPath, fsType, mountPoint);
  }
  async makeTempDir(): Promise<string> {
    this.world.enter("makeTempDir", "", true);
    return this.world.makeTempDir();
  }
  async removeTempDir(path: string): Promise<void> {
    this.world.enter("removeTempDir", path, true);
    this.world.dirs.delete(path);
  }
}
