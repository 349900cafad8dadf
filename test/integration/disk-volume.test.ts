// The disk and volume groups on real block devices (loop devices this file creates), through the
// real daemon (src/main.ts as a child process) and the typed client: the full driver stage flow on
// v1 (ext4) and again on v1beta1 (xfs, string disk ids, old method names), every refusal with its
// status code and the data still intact, and a daemon without root.
// Runs only as root; skipped with the reason otherwise. Touches no block device but its own loops:
// the root disk is only named by its disk number, and the daemon refuses before touching it.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { connectGroup } from "../../src/client/connect-group.ts";
import { nodeBinary, repoRoot, startDaemonProcess, type DaemonProcess } from "../helpers/daemon-process.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../helpers/loop-device.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";

const skip = loopDeviceSkipReason();
if (skip) process.stderr.write(`disk-volume integration tests skipped: ${skip}\n`);

const MiB = 1024 * 1024;
const Code = { InvalidArgument: 3, NotFound: 5, PermissionDenied: 7, FailedPrecondition: 9 };
const VOLUME_ID = /^\\\\\?\\Volume\{[\w-]*\}\\$/;

/** CAP_SYS_RESOURCE (bit 24) in this process's effective set: needed to grow a mounted ext4. */
function hasCapSysResource(): boolean {
  const m = /^CapEff:\s*([0-9a-f]+)/m.exec(readFileSync("/proc/self/status", "utf8"));
  return m !== null && ((BigInt(`0x${m[1]}`) >> 24n) & 1n) === 1n;
}

/** The device number ("major:minor") holding `/`, from mountinfo. */
function rootDevice(): { major: number; minor: number } | null {
  for (const line of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
    const f = line.split(" ");
    if (f[4] === "/") {
      const [major, minor] = f[2].split(":").map(Number);
      return major === 0 ? null : { major, minor };
    }
  }
  return null;
}

/** The whole disk a block device belongs to (itself, or the parent of a partition), via sysfs only. */
function wholeDiskOf(dev: { major: number; minor: number }): { major: number; minor: number } | null {
  try {
    const link = execFileSync("readlink", ["-f", `/sys/dev/block/${dev.major}:${dev.minor}`], { encoding: "utf8" }).trim();
    const isPartition = (() => {
      try {
        readFileSync(path.join(link, "partition"));
        return true;
      } catch {
        return false;
      }
    })();
    const diskDir = isPartition ? path.dirname(link) : link;
    const [major, minor] = readFileSync(path.join(diskDir, "dev"), "utf8").trim().split(":").map(Number);
    return { major, minor };
  } catch {
    return null;
  }
}

const run = (file: string, args: string[]) => execFileSync(file, args, { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
/** blkid's view of a device ("" when it finds nothing). */
const probe = (dev: string, tag = "TYPE") => spawnSync("blkid", ["-p", "-s", tag, "-o", "value", dev], { encoding: "utf8" }).stdout.trim();

/** Mounts `dev` read-only at a temporary directory, runs fn(dir), unmounts. */
function withReadOnlyMount<T>(dev: string, fn: (dir: string) => T): T {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-it-ro-"));
  try {
    run("mount", ["-o", "ro", dev, dir]);
    try {
      return fn(dir);
    } finally {
      run("umount", [dir]);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function writeMarker(dir: string, text: string): void {
  writeFileSync(path.join(dir, "marker.txt"), text);
  run("sync", ["-f", path.join(dir, "marker.txt")]);
}
const readMarker = (dir: string) => readFileSync(path.join(dir, "marker.txt"), "utf8");

/** The partition device node of a volume created on `loop` (partition 1). */
const partitionOf = (loop: LoopDevice) => `${loop.device}p1`;

describe("disk and volume groups on loop devices", { skip: skip ?? false }, () => {
  let ext4: DaemonProcess;
  let xfs: DaemonProcess;
  let images: string;
  const loops: LoopDevice[] = [];
  const newLoop = (mib: number, label: string) => {
    const l = createLoopDevice(images, mib * MiB, label);
    loops.push(l);
    return l;
  };

  before(async () => {
    images = mkdtempSync(path.join(tmpdir(), "csi-it-images-"));
    ext4 = await startDaemonProcess();
    xfs = await startDaemonProcess({ args: ["-default-fs-type", "xfs"] });
  });
  after(async () => {
    for (const l of loops.reverse()) l.cleanup();
    await ext4?.stop();
    await xfs?.stop();
    rmSync(images, { recursive: true, force: true });
  });

  const clients = async (d: DaemonProcess) => {
    const disk = await connectGroup("disk", { socketDir: d.socketDir, versions: ["v1"] });
    const volume = await connectGroup("volume", { socketDir: d.socketDir, versions: ["v1"] });
    const v2 = await connectGroup("volume", { socketDir: d.socketDir, versions: ["v2alpha1"] });
    if (disk.version !== "v1" || volume.version !== "v1" || v2.version !== "v2alpha1") throw new Error("unexpected versions");
    return { disk: disk.client, volume: volume.client, v2: v2.client, close: () => [disk, volume, v2].forEach((c) => c.close()) };
  };

  it("v1: the full driver stage flow on ext4", async () => {
    const c = await clients(ext4);
    try {
      const loop = newLoop(256, "v1");
      // find the disk by its serial number (= the backing file)
      const { diskIDs } = await c.disk.listDiskIDs({});
      const found = Object.entries(diskIDs).find(([, ids]) => ids.serialNumber === loop.file);
      assert.ok(found, `no disk with serial ${loop.file} in ${JSON.stringify(diskIDs)}`);
      const diskNumber = Number(found[0]);
      assert.equal(diskNumber, loop.diskNumber);
      assert.equal(found[1].page83, "");
      assert.equal((await c.disk.getDiskStats({ diskNumber })).totalBytes, BigInt(256 * MiB));
      assert.equal(diskNumber in (await c.disk.listDiskLocations({})).diskLocations, false, "loop devices have no SCSI location");

      await c.disk.setDiskState({ diskNumber, isOnline: true });
      assert.equal((await c.disk.getDiskState({ diskNumber })).isOnline, true);
      await c.disk.partitionDisk({ diskNumber });
      await c.disk.partitionDisk({ diskNumber }); // idempotent

      const { volumeIds } = await c.volume.listVolumesOnDisk({ diskNumber, partitionNumber: 0 });
      assert.equal(volumeIds.length, 1);
      const [volumeId] = volumeIds;
      assert.match(volumeId, VOLUME_ID);
      const partuuid = probe(partitionOf(loop), "PART_ENTRY_UUID");
      assert.equal(volumeId.toLowerCase(), `\\\\?\\volume{${partuuid}}\\`, "volume id = PARTUUID");

      assert.equal((await c.volume.isVolumeFormatted({ volumeId })).formatted, false);
      await c.volume.formatVolume({ volumeId });
      assert.equal((await c.volume.isVolumeFormatted({ volumeId })).formatted, true);
      assert.equal(probe(partitionOf(loop)), "ext4");
      // Nothing uses it: formatted again (OK means formatted), a new filesystem.
      const firstUuid = probe(partitionOf(loop), "UUID");
      await c.volume.formatVolume({ volumeId });
      assert.equal(probe(partitionOf(loop)), "ext4");
      assert.notEqual(probe(partitionOf(loop), "UUID"), firstUuid, "FormatVolume answered OK without formatting");

      const stage = path.join(ext4.kubeletDir, "plugins", "kubernetes.io", "csi", "pv", "v1", "globalmount");
      mkdirSync(stage, { recursive: true });
      await c.volume.mountVolume({ volumeId, targetPath: stage });
      await c.volume.mountVolume({ volumeId, targetPath: stage }); // idempotent
      assert.deepEqual(loop.mounts(), [stage]);
      writeMarker(stage, "v1 data");
      // In use (mounted, even in the kubelet dir): refused naming the mount, nothing written.
      await rejectsWithCode(c.volume.formatVolume({ volumeId }), Code.FailedPrecondition, new RegExp(`is mounted at ${stage.replace(/[.]/g, "\\.")}; unmount it first`));
      assert.equal(readMarker(stage), "v1 data");

      const stats = await c.volume.getVolumeStats({ volumeId });
      assert.ok(stats.totalBytes > BigInt(200 * MiB) && stats.totalBytes <= BigInt(256 * MiB), `total ${stats.totalBytes}`);
      assert.ok(stats.usedBytes > 0n && stats.usedBytes < stats.totalBytes);

      assert.equal((await c.volume.getVolumeIDFromTargetPath({ targetPath: stage })).volumeId, volumeId);
      assert.equal((await c.volume.getDiskNumberFromVolumeID({ volumeId })).diskNumber, diskNumber);
      mkdirSync(path.join(stage, "a", "b"), { recursive: true });
      assert.equal((await c.v2.getClosestVolumeIDFromTargetPath({ targetPath: path.join(stage, "a", "b") })).volumeId, volumeId);
      await c.volume.writeVolumeCache({ volumeId });

      // grow the backing file, rescan, resize
      loop.resize(512 * MiB);
      await c.disk.rescan({});
      assert.equal((await c.disk.getDiskStats({ diskNumber })).totalBytes, BigInt(512 * MiB));
      if (hasCapSysResource()) {
        await c.volume.resizeVolume({ volumeId, sizeBytes: 0n });
      } else {
        // Growing a mounted ext4 needs CAP_SYS_RESOURCE; refused before any change, then done offline.
        await rejectsWithCode(c.volume.resizeVolume({ volumeId, sizeBytes: 0n }), Code.PermissionDenied, /CAP_SYS_RESOURCE/);
        assert.equal(readMarker(stage), "v1 data");
        await c.volume.unmountVolume({ volumeId, targetPath: stage });
        await c.volume.resizeVolume({ volumeId, sizeBytes: 0n });
        await c.volume.mountVolume({ volumeId, targetPath: stage });
      }
      const grown = await c.volume.getVolumeStats({ volumeId });
      assert.ok(grown.totalBytes > stats.totalBytes + BigInt(200 * MiB), `after resize ${grown.totalBytes}, before ${stats.totalBytes}`);
      await c.volume.resizeVolume({ volumeId, sizeBytes: 0n }); // already full: no-op
      assert.equal(readMarker(stage), "v1 data");

      await c.volume.unmountVolume({ volumeId, targetPath: stage });
      assert.deepEqual(loop.mounts(), []);
      await rejectsWithCode(c.volume.unmountVolume({ volumeId, targetPath: stage }), Code.NotFound, /not a mount point/);
      const unmounted = await c.volume.getVolumeStats({ volumeId }); // from the superblock (dumpe2fs)
      assert.ok(unmounted.totalBytes >= grown.totalBytes && unmounted.totalBytes <= BigInt(512 * MiB), `unmounted total ${unmounted.totalBytes}`);
      withReadOnlyMount(partitionOf(loop), (dir) => assert.equal(readMarker(dir), "v1 data"));

      // offline: mounts refused, read-only device; back online
      await c.disk.setDiskState({ diskNumber, isOnline: false });
      assert.equal((await c.disk.getDiskState({ diskNumber })).isOnline, false);
      assert.equal(readFileSync(`/sys/block/${loop.name}/ro`, "utf8").trim(), "1");
      await rejectsWithCode(c.volume.mountVolume({ volumeId, targetPath: stage }), Code.FailedPrecondition, /offline/);
      await c.disk.setDiskState({ diskNumber, isOnline: true });
      assert.equal((await c.disk.getDiskState({ diskNumber })).isOnline, true);
      assert.equal(readFileSync(`/sys/block/${loop.name}/ro`, "utf8").trim(), "0");
    } finally {
      c.close();
    }
  });

  it("v1beta1: the same flow with string disk ids and old method names, on xfs", async () => {
    const disk = await connectGroup("disk", { socketDir: xfs.socketDir, versions: ["v1beta1"] });
    const volume = await connectGroup("volume", { socketDir: xfs.socketDir, versions: ["v1beta1"] });
    if (disk.version !== "v1beta1" || volume.version !== "v1beta1") throw new Error("unexpected versions");
    try {
      const loop = newLoop(512, "v1beta1");
      const { diskIDs } = await disk.client.listDiskIDs({});
      const found = Object.entries(diskIDs).find(([, ids]) => ids.identifiers.serialNumber === loop.file);
      assert.ok(found);
      const diskID = found[0];
      assert.equal(diskID, String(loop.diskNumber));
      assert.deepEqual(Object.keys(found[1].identifiers).sort(), ["page83", "serialNumber"]);
      assert.equal((await disk.client.diskStats({ diskID })).diskSize, BigInt(512 * MiB));
      // (v1beta1 has no SetDiskState: the disk is online from the start)
      await disk.client.partitionDisk({ diskID });

      const { volumeIds } = await volume.client.listVolumesOnDisk({ diskId: diskID });
      assert.equal(volumeIds.length, 1);
      const [volumeId] = volumeIds;
      assert.match(volumeId, VOLUME_ID);
      assert.equal((await volume.client.isVolumeFormatted({ volumeId })).formatted, false);
      await volume.client.formatVolume({ volumeId });
      assert.equal((await volume.client.isVolumeFormatted({ volumeId })).formatted, true);
      assert.equal(probe(partitionOf(loop)), "xfs");

      const stage = path.join(xfs.kubeletDir, "plugins", "v1beta1", "globalmount");
      mkdirSync(stage, { recursive: true });
      await volume.client.mountVolume({ volumeId, path: stage });
      await volume.client.mountVolume({ volumeId, path: stage });
      writeMarker(stage, "v1beta1 data");
      const stats = await volume.client.volumeStats({ volumeId });
      assert.ok(stats.volumeSize > BigInt(400 * MiB) && stats.volumeSize <= BigInt(512 * MiB), `size ${stats.volumeSize}`);
      assert.equal((await volume.client.getVolumeIDFromMount({ mount: stage })).volumeId, volumeId);
      assert.equal((await volume.client.getVolumeDiskNumber({ volumeId })).diskNumber, BigInt(loop.diskNumber));
      // (v1beta1 has no WriteVolumeCache)

      loop.resize(1024 * MiB);
      await disk.client.rescan({});
      assert.equal((await disk.client.diskStats({ diskID })).diskSize, BigInt(1024 * MiB));
      await volume.client.resizeVolume({ volumeId, size: 0n }); // mounted xfs grows online
      const grown = await volume.client.volumeStats({ volumeId });
      assert.ok(grown.volumeSize > stats.volumeSize + BigInt(400 * MiB), `after ${grown.volumeSize}, before ${stats.volumeSize}`);
      assert.equal(readMarker(stage), "v1beta1 data");

      await volume.client.dismountVolume({ volumeId, path: stage });
      assert.deepEqual(loop.mounts(), []);
      const unmounted = await volume.client.volumeStats({ volumeId }); // from the superblock (xfs_db)
      assert.ok(unmounted.volumeSize > BigInt(900 * MiB) && unmounted.volumeSize <= BigInt(1024 * MiB), `unmounted size ${unmounted.volumeSize}`);
      withReadOnlyMount(partitionOf(loop), (dir) => assert.equal(readMarker(dir), "v1beta1 data"));
      await rejectsWithCode(disk.client.diskStats({ diskID: "not-a-number" }), Code.InvalidArgument);
    } finally {
      disk.close();
      volume.close();
    }
  });

  describe("refusals: status code and the data still intact", () => {
    it("PartitionDisk on a disk holding a filesystem without partition table (non-empty disk)", async () => {
      const c = await clients(ext4);
      try {
        const loop = newLoop(64, "wholefs");
        run("mkfs.ext4", ["-q", loop.device]);
        const dir = mkdtempSync(path.join(tmpdir(), "csi-it-w-"));
        run("mount", [loop.device, dir]);
        writeMarker(dir, "whole-disk data");
        run("umount", [dir]);
        rmSync(dir, { recursive: true });
        await rejectsWithCode(c.disk.partitionDisk({ diskNumber: loop.diskNumber }), Code.FailedPrecondition, /no partition table but holds ext4/);
        assert.equal(probe(loop.device), "ext4");
        withReadOnlyMount(loop.device, (d) => assert.equal(readMarker(d), "whole-disk data"));
        // Its one volume is the whole disk; formatting it (another type) and resizing it are refused too.
        const { volumeIds } = await c.volume.listVolumesOnDisk({ diskNumber: loop.diskNumber, partitionNumber: 0 });
        assert.deepEqual(volumeIds, [`\\\\?\\Volume{dev-${loop.major}-${loop.minor}}\\`]);
        await rejectsWithCode(c.volume.resizeVolume({ volumeId: volumeIds[0], sizeBytes: 0n }), Code.FailedPrecondition, /whole-disk/);
      } finally {
        c.close();
      }
    });

    it("FormatVolume on a volume holding another filesystem (foreign filesystem)", async () => {
      const c = await clients(ext4);
      try {
        const loop = newLoop(512, "foreign");
        await c.disk.partitionDisk({ diskNumber: loop.diskNumber });
        const [volumeId] = (await c.volume.listVolumesOnDisk({ diskNumber: loop.diskNumber, partitionNumber: 0 })).volumeIds;
        run("mkfs.xfs", ["-q", partitionOf(loop)]);
        const dir = mkdtempSync(path.join(tmpdir(), "csi-it-f-"));
        run("mount", [partitionOf(loop), dir]);
        writeMarker(dir, "xfs data");
        run("umount", [dir]);
        rmSync(dir, { recursive: true });
        assert.equal((await c.volume.isVolumeFormatted({ volumeId })).formatted, true);
        await rejectsWithCode(c.volume.formatVolume({ volumeId }), Code.FailedPrecondition, /already holds xfs; formatting would destroy/);
        assert.equal(probe(partitionOf(loop)), "xfs");
        withReadOnlyMount(partitionOf(loop), (d) => assert.equal(readMarker(d), "xfs data"));
      } finally {
        c.close();
      }
    });

    it("FormatVolume (-default-fs-type xfs) replaces an unused xfs: its data gone, a new filesystem UUID", async () => {
      const c = await clients(xfs);
      try {
        const loop = newLoop(512, "xfs-again");
        await c.disk.partitionDisk({ diskNumber: loop.diskNumber });
        const [volumeId] = (await c.volume.listVolumesOnDisk({ diskNumber: loop.diskNumber, partitionNumber: 0 })).volumeIds;
        await c.volume.formatVolume({ volumeId });
        const dir = mkdtempSync(path.join(tmpdir(), "csi-it-x-"));
        run("mount", [partitionOf(loop), dir]);
        writeMarker(dir, "tenant 1");
        run("umount", [dir]);
        rmSync(dir, { recursive: true });
        const before = probe(partitionOf(loop), "UUID");
        await c.volume.formatVolume({ volumeId });
        assert.equal(probe(partitionOf(loop)), "xfs");
        assert.notEqual(probe(partitionOf(loop), "UUID"), before);
        withReadOnlyMount(partitionOf(loop), (d) => assert.throws(() => readMarker(d), /ENOENT/));
      } finally {
        c.close();
      }
    });

    it("FormatVolume of an ext4 volume mounted only in another mount namespace: refused naming the mount and its pid, data intact", async () => {
      const c = await clients(ext4);
      const loop = newLoop(256, "other-ns");
      let holder: ReturnType<typeof spawn> | undefined;
      const dir = mkdtempSync(path.join(tmpdir(), "csi-it-ns-"));
      try {
        await c.disk.partitionDisk({ diskNumber: loop.diskNumber });
        const [volumeId] = (await c.volume.listVolumesOnDisk({ diskNumber: loop.diskNumber, partitionNumber: 0 })).volumeIds;
        await c.volume.formatVolume({ volumeId });
        // A process in a private mount namespace mounts it (invisible in the daemon's mount table) and writes a file.
        holder = spawn("unshare", ["--mount", "--propagation", "private", "--", "sh", "-c", 'mount "$0" "$1" && echo data > "$1/marker.txt" && sync && echo ready && exec sleep 600', partitionOf(loop), dir], {
          stdio: ["ignore", "pipe", "inherit"],
        });
        await new Promise<void>((resolve, reject) => {
          holder!.stdout!.on("data", (d: Buffer) => d.toString().includes("ready") && resolve());
          holder!.on("exit", (code) => reject(new Error(`unshare exited ${code}`)));
        });
        assert.deepEqual(loop.mounts(), [], "the mount is not in this namespace");
        await rejectsWithCode(
          c.volume.formatVolume({ volumeId }),
          Code.FailedPrecondition,
          new RegExp(`refusing to format ${partitionOf(loop)}: it is mounted at ${dir} \\(mount namespace of pid \\d+\\)`),
        );
        holder.kill("SIGKILL");
        await new Promise((r) => holder!.once("exit", r));
        holder = undefined;
        withReadOnlyMount(partitionOf(loop), (d) => assert.equal(readMarker(d), "data\n"));
      } finally {
        if (holder && holder.exitCode === null) holder.kill("SIGKILL");
        c.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("the root disk, named only by its disk number", async (t) => {
      const root = rootDevice();
      const disk = root && wholeDiskOf(root);
      if (!root || !disk) return t.skip("/ is not on a block device here");
      const c = await clients(ext4);
      try {
        const diskNumber = disk.major * 2 ** 20 + disk.minor;
        const listed = await c.disk.listDiskIDs({});
        if (!(diskNumber in listed.diskIDs)) return t.skip(`the root disk ${disk.major}:${disk.minor} is not a listed disk`);
        await rejectsWithCode(c.disk.partitionDisk({ diskNumber }), Code.FailedPrecondition, /root filesystem \//);
        await rejectsWithCode(c.disk.setDiskState({ diskNumber, isOnline: false }), Code.FailedPrecondition, /root filesystem \//);
        assert.equal((await c.disk.getDiskState({ diskNumber })).isOnline, true);
        const rootVolume = `\\\\?\\Volume{dev-${root.major}-${root.minor}}\\`;
        await rejectsWithCode(c.volume.formatVolume({ volumeId: rootVolume }), Code.FailedPrecondition, /root filesystem \//);
        const stage = path.join(ext4.kubeletDir, "root-mount");
        mkdirSync(stage, { recursive: true });
        await rejectsWithCode(c.volume.mountVolume({ volumeId: rootVolume, targetPath: stage }), Code.FailedPrecondition, /root filesystem \//);
      } finally {
        c.close();
      }
    });

    it("a volume mounted outside the kubelet dir (mounted elsewhere)", async () => {
      const c = await clients(ext4);
      const elsewhere = mkdtempSync(path.join(tmpdir(), "csi-it-elsewhere-"));
      try {
        const loop = newLoop(256, "elsewhere");
        const diskNumber = loop.diskNumber;
        await c.disk.partitionDisk({ diskNumber });
        const [volumeId] = (await c.volume.listVolumesOnDisk({ diskNumber, partitionNumber: 0 })).volumeIds;
        await c.volume.formatVolume({ volumeId });
        const partitionSize = readFileSync(`/sys/block/${loop.name}/${loop.name}p1/size`, "utf8");
        run("mount", [partitionOf(loop), elsewhere]);
        writeMarker(elsewhere, "admin data");
        loop.resize(512 * MiB);
        await c.disk.rescan({});
        const stage = path.join(ext4.kubeletDir, "elsewhere-stage");
        mkdirSync(stage);
        const outside = new RegExp(`mounted at ${elsewhere.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}, outside`);
        await rejectsWithCode(c.disk.partitionDisk({ diskNumber }), Code.FailedPrecondition, outside);
        await rejectsWithCode(c.volume.formatVolume({ volumeId }), Code.FailedPrecondition, outside);
        await rejectsWithCode(c.volume.resizeVolume({ volumeId, sizeBytes: 0n }), Code.FailedPrecondition, outside);
        await rejectsWithCode(c.disk.setDiskState({ diskNumber, isOnline: false }), Code.FailedPrecondition, outside);
        await rejectsWithCode(c.volume.mountVolume({ volumeId, targetPath: stage }), Code.FailedPrecondition, outside);
        await rejectsWithCode(c.volume.unmountVolume({ volumeId, targetPath: elsewhere }), Code.PermissionDenied, /not within the allowed directories/);
        assert.deepEqual(loop.mounts(), [elsewhere]);
        assert.equal(readMarker(elsewhere), "admin data");
        assert.equal(readFileSync(`/sys/block/${loop.name}/${loop.name}p1/size`, "utf8"), partitionSize, "partition not grown");
      } finally {
        try {
          run("umount", [elsewhere]);
        } catch {
          // not mounted (the loop cleanup also unmounts)
        }
        rmSync(elsewhere, { recursive: true, force: true });
        c.close();
      }
    });

    it("target paths outside the kubelet dir, and a foreign mount inside it", async () => {
      const c = await clients(ext4);
      const outsideDir = mkdtempSync(path.join(tmpdir(), "csi-it-outside-"));
      try {
        const loop = newLoop(64, "policy");
        await c.disk.partitionDisk({ diskNumber: loop.diskNumber });
        const [volumeId] = (await c.volume.listVolumesOnDisk({ diskNumber: loop.diskNumber, partitionNumber: 0 })).volumeIds;
        await c.volume.formatVolume({ volumeId });
        writeFileSync(path.join(outsideDir, "keep.txt"), "outside data");
        await rejectsWithCode(c.volume.mountVolume({ volumeId, targetPath: outsideDir }), Code.PermissionDenied, /not within the allowed directories/);
        await rejectsWithCode(c.volume.mountVolume({ volumeId, targetPath: path.join(ext4.kubeletDir, "..", path.basename(outsideDir)) }), Code.PermissionDenied);
        const link = path.join(ext4.kubeletDir, "link-out");
        symlinkSync(outsideDir, link);
        await rejectsWithCode(c.volume.mountVolume({ volumeId, targetPath: link }), Code.PermissionDenied, /resolved to/);
        await rejectsWithCode(c.volume.getVolumeIDFromTargetPath({ targetPath: "/" }), Code.PermissionDenied);
        await rejectsWithCode(c.volume.mountVolume({ volumeId: "", targetPath: link }), Code.InvalidArgument, /VolumeId is empty/);
        await rejectsWithCode(c.volume.mountVolume({ volumeId: "-1", targetPath: ext4.kubeletDir }), Code.InvalidArgument, /not of the form/);
        assert.deepEqual(loop.mounts(), []);
        assert.equal(readFileSync(path.join(outsideDir, "keep.txt"), "utf8"), "outside data");

        // A non-empty target and someone else's mount inside the kubelet dir.
        const full = path.join(ext4.kubeletDir, "full");
        mkdirSync(full);
        writeFileSync(path.join(full, "x"), "x");
        await rejectsWithCode(c.volume.mountVolume({ volumeId, targetPath: full }), Code.FailedPrecondition, /not empty/);
        const foreign = path.join(ext4.kubeletDir, "foreign");
        mkdirSync(foreign);
        run("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", foreign]);
        try {
          writeFileSync(path.join(foreign, "f.txt"), "tmpfs data");
          await rejectsWithCode(c.volume.unmountVolume({ volumeId, targetPath: foreign }), Code.FailedPrecondition, /refusing to unmount/);
          await rejectsWithCode(c.volume.mountVolume({ volumeId, targetPath: foreign }), Code.FailedPrecondition, /already mounted there/);
          await rejectsWithCode(c.volume.getVolumeIDFromTargetPath({ targetPath: foreign }), Code.NotFound, /tmpfs/);
          assert.equal(readFileSync(path.join(foreign, "f.txt"), "utf8"), "tmpfs data");
        } finally {
          run("umount", [foreign]);
        }
      } finally {
        rmSync(outsideDir, { recursive: true, force: true });
        c.close();
      }
    });
  });

  it("a daemon that is not root answers every disk/volume call with PermissionDenied naming root", async (t) => {
    const canRun = spawnSync("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--", nodeBinary, "-e", "require('fs').accessSync(process.argv[1], 4)", path.join(repoRoot, "src/main.ts")]);
    if (canRun.status !== 0) return t.skip(`user nobody cannot run ${nodeBinary} on ${repoRoot} (a parent directory is private): ${String(canRun.stderr).trim().split("\n")[0]}`);
    const root = mkdtempSync(path.join(tmpdir(), "csi-it-nobody-"));
    chmodSync(root, 0o755);
    const socketDir = path.join(root, "sockets");
    const kubeletDir = path.join(root, "kubelet");
    mkdirSync(socketDir);
    mkdirSync(kubeletDir);
    chownSync(socketDir, 65534, 65534); // only nobody (and root) can write the socket dir
    chmodSync(socketDir, 0o700);
    const child = spawn(
      "setpriv",
      ["--reuid=65534", "--regid=65534", "--clear-groups", "--", nodeBinary, path.join(repoRoot, "src/main.ts"), "-socket-dir", socketDir, "-kubelet-path", kubeletDir],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let log = "";
    child.stderr.setEncoding("utf8").on("data", (s: string) => (log += s));
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    const loop = newLoop(16, "nobody");
    try {
      const deadline = Date.now() + 20_000;
      while (!/Serving 23 endpoints/.test(log)) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`daemon as nobody did not start:\n${log}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const disk = await connectGroup("disk", { socketDir, versions: ["v1"] });
      const volume = await connectGroup("volume", { socketDir, versions: ["v1"] });
      if (disk.version !== "v1" || volume.version !== "v1") throw new Error("unexpected versions");
      try {
        const root = /must run as root.*uid 65534/;
        await rejectsWithCode(disk.client.listDiskIDs({}), Code.PermissionDenied, root);
        await rejectsWithCode(disk.client.partitionDisk({ diskNumber: loop.diskNumber }), Code.PermissionDenied, root);
        await rejectsWithCode(disk.client.getDiskStats({ diskNumber: loop.diskNumber }), Code.PermissionDenied, root);
        await rejectsWithCode(disk.client.rescan({}), Code.PermissionDenied, root);
        await rejectsWithCode(volume.client.listVolumesOnDisk({ diskNumber: loop.diskNumber, partitionNumber: 0 }), Code.PermissionDenied, root);
        await rejectsWithCode(volume.client.formatVolume({ volumeId: "\\\\?\\Volume{dev-7-0}\\" }), Code.PermissionDenied, root);
        await rejectsWithCode(volume.client.mountVolume({ volumeId: "\\\\?\\Volume{dev-7-0}\\", targetPath: kubeletDir }), Code.PermissionDenied, root);
        assert.equal(probe(loop.device, "PTTYPE"), "", "the disk was not touched");
      } finally {
        disk.close();
        volume.close();
      }
    } finally {
      child.kill("SIGTERM");
      await exited;
      rmSync(root, { recursive: true, force: true });
    }
  });
});
