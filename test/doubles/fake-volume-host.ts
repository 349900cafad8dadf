import type { FilesystemGrowth, MountedVolume, VolumeContent, VolumeHostApi, VolumeLocation, VolumeUsage, WriteCheck } from "../../src/groups/volume/host-api.ts";
import { notFound } from "../../src/errors.ts";
import { FakeStorage } from "./fake-storage.ts";

/** Paths compare like Windows paths: case-insensitive, trailing backslashes ignored. */
const key = (p: string) => p.replace(/\\+$/, "").toLowerCase();

/** Stateful fake of the volume host, in Windows' shape, over a {@link FakeStorage} (share one with a FakeDiskHost). */
export class FakeVolumeHost implements VolumeHostApi {
  readonly world: FakeStorage;

  constructor(world: FakeStorage = new FakeStorage()) {
    this.world = world;
  }

  get defaultFileSystem(): string {
    return this.world.defaultFileSystem;
  }
  get mountRequiresFilesystem(): boolean {
    return this.world.mountRequiresFilesystem;
  }
  missingPrivilege(): string | null {
    return this.world.missingPrivilege;
  }

  #mountAt(path: string): MountedVolume | null {
    for (const [mountPoint, m] of this.world.mounts) if (key(mountPoint) === key(path)) return { mountPoint, ...m };
    return null;
  }

  async listVolumes(diskNumber: number, partitionNumber: number): Promise<string[]> {
    this.world.enter("listVolumes", `${diskNumber} ${partitionNumber}`);
    const disk = this.world.disks.find((d) => d.number === diskNumber);
    return (disk?.partitions ?? []).filter((p) => p.volume && (partitionNumber === 0 || p.number === partitionNumber)).map((p) => p.volume!.id);
  }
  async locateVolume(volumeId: string): Promise<VolumeLocation> {
    this.world.enter("locateVolume", volumeId);
    const { disk, partition } = this.world.volume(volumeId);
    const name = `disk ${disk.number} partition ${partition.number}`;
    return {
      id: volumeId,
      diskNumber: disk.number,
      partitionNumber: partition.number,
      sizeBytes: partition.sizeBytes,
      name,
      diskOnline: null,
      devices: [{ name, use: this.world.partitionUse(partition) }],
      accessPaths: [...(partition.driveLetter ? [`${partition.driveLetter}:\\`] : []), ...(partition.accessPaths ?? [])],
    };
  }
  async getVolumeContent(volumeId: string): Promise<VolumeContent> {
    this.world.enter("getVolumeContent", volumeId);
    return this.#content(volumeId);
  }
  #content(volumeId: string): VolumeContent {
    const { volume } = this.world.volume(volumeId);
    const description = volume.fileSystem ?? volume.foreign ?? "no file system Windows knows";
    return { fileSystem: volume.fileSystem, empty: volume.fileSystem === null && volume.foreign === null, description };
  }
  /** As a real host: the service's check on the facts read right before the write (the worker then finds them unchanged: one thread here). */
  async #verify(volumeId: string, check: WriteCheck, content: boolean): Promise<void> {
    await check({ location: await this.locateVolume(volumeId), content: content ? this.#content(volumeId) : undefined });
  }
  async getVolumeUsage(volumeId: string): Promise<VolumeUsage> {
    this.world.enter("getVolumeUsage", volumeId);
    const { volume } = this.world.volume(volumeId);
    return { totalBytes: volume.sizeBytes, freeBytes: volume.freeBytes };
  }
  async formatVolume(volumeId: string, check: WriteCheck): Promise<void> {
    await this.#verify(volumeId, check, true);
    const { volume } = this.world.volume(volumeId);
    this.world.enter("formatVolume", volumeId, true);
    Object.assign(volume, { fileSystem: this.world.defaultFileSystem, foreign: null, freeBytes: volume.sizeBytes - 1024n * 1024n });
  }
  async flushVolume(volumeId: string): Promise<void> {
    this.world.enter("flushVolume", volumeId, true);
    this.world.volume(volumeId);
  }
  async getPartitionSupportedSize(volumeId: string): Promise<{ maxBytes: bigint; alignBytes: bigint }> {
    this.world.enter("getPartitionSupportedSize", volumeId);
    return { maxBytes: this.world.volume(volumeId).partition.maxBytes, alignBytes: 1n };
  }
  async getFilesystemGrowth(volumeId: string): Promise<FilesystemGrowth> {
    this.world.enter("getFilesystemGrowth", volumeId);
    const g = this.world.growth;
    return typeof g === "string" ? { kind: g } : g;
  }
  async resizePartition(volumeId: string, sizeBytes: bigint, check: WriteCheck): Promise<void> {
    await this.#verify(volumeId, check, false);
    this.world.enter("resizePartition", `${volumeId} ${sizeBytes}`, true);
    const { partition, volume } = this.world.volume(volumeId);
    const grownBy = sizeBytes - partition.sizeBytes;
    partition.sizeBytes = sizeBytes;
    if (this.world.growth === "none") Object.assign(volume, { sizeBytes: volume.sizeBytes + grownBy, freeBytes: volume.freeBytes + grownBy });
  }
  async growFilesystem(volumeId: string, check: WriteCheck): Promise<void> {
    await this.#verify(volumeId, check, false);
    this.world.enter("growFilesystem", volumeId, true);
    const { partition, volume } = this.world.volume(volumeId);
    Object.assign(volume, { freeBytes: volume.freeBytes + partition.sizeBytes - volume.sizeBytes, sizeBytes: partition.sizeBytes });
  }
  async mountedAt(path: string): Promise<MountedVolume | null> {
    this.world.enter("mountedAt", path);
    return this.#mountAt(path);
  }
  /** The longest mount point above `path`, else the system drive's volume for a path on it. */
  async volumeHolding(path: string): Promise<MountedVolume | null> {
    this.world.enter("volumeHolding", path);
    let best: MountedVolume | null = null;
    for (const [mountPoint, m] of this.world.mounts) {
      const k = key(mountPoint);
      if ((key(path) === k || key(path).startsWith(`${k}\\`)) && (!best || k.length > key(best.mountPoint).length)) best = { mountPoint, ...m };
    }
    if (best) return best;
    const drive = /^([A-Za-z]):/.exec(path)?.[1]?.toUpperCase();
    const root = this.world.disks.flatMap((d) => d.partitions).find((p) => drive && p.driveLetter.toUpperCase() === drive && p.volume);
    return root?.volume ? { mountPoint: `${drive}:\\`, volumeId: root.volume.id, description: `volume ${root.volume.id}` } : null;
  }
  async inspectDirectory(path: string): Promise<{ isDirectory: boolean; empty: boolean } | null> {
    this.world.enter("inspectDirectory", path);
    const entry = [...this.world.dirs].find(([p]) => key(p) === key(path));
    return entry === undefined ? null : { isDirectory: true, empty: entry[1] === 0 };
  }
  async mountVolume(volumeId: string, path: string, fileSystem: string | null, check: WriteCheck): Promise<void> {
    await this.#verify(volumeId, check, false);
    this.world.enter("mountVolume", `${volumeId} ${path}${fileSystem ? ` ${fileSystem}` : ""}`, true);
    this.world.volume(volumeId);
    if (![...this.world.dirs.keys()].some((p) => key(p) === key(path))) throw notFound(`fake SetVolumeMountPoint: ${path} does not exist`);
    this.world.mounts.set(path, { volumeId, description: `volume ${volumeId}` });
  }
  async unmountVolume(path: string): Promise<void> {
    this.world.enter("unmountVolume", path, true);
    const m = this.#mountAt(path);
    if (!m) throw notFound(`fake DeleteVolumeMountPoint: ${path} is not a mount point`);
    this.world.mounts.delete(m.mountPoint);
  }
}
