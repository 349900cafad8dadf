// Values kept until the next uevent (uevent-keyed.ts), and the block reads that use them: a disk or
// loop device added, removed, resized or repartitioned between two calls is seen by the second call,
// also where the kernel sends no uevent (a partition resized in place); a write's verification never
// uses a kept value. The real cases run on loop devices of this test's own images under /var/tmp.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import * as path from "node:path";
import { UeventKeyed } from "./uevent-keyed.ts";
import { SnapshotSessions } from "./snapshot-session.ts";
import { takeSnapshot, type SnapshotSources } from "./block-snapshot.ts";
import type { SnapshotOptions } from "./block-snapshot.ts";
import { createLinuxBlockTools } from "./linux-block-tools.ts";
import { LinuxDiskHost } from "../disk.ts";
import { LinuxVolumeHost } from "../volume.ts";
import { Code, CsiProxyError } from "../../../errors.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../../../../test/helpers/loop-device.ts";

describe("UeventKeyed", () => {
  it("keeps the value while the count is unchanged, builds again after a uevent, with fresh, or without a count", () => {
    let seq: string | null = "10";
    let builds = 0;
    const kept = new UeventKeyed<number>(() => seq);
    const build = () => ++builds;
    assert.equal(kept.get(build), 1);
    assert.equal(kept.get(build), 1, "no uevent: kept");
    seq = "11";
    assert.equal(kept.get(build), 2, "a uevent: built again");
    assert.equal(kept.get(build), 2);
    assert.equal(kept.get(build, true), 3, "fresh: built again");
    assert.equal(kept.get(build), 3, "and kept for the answers after it");
    seq = null;
    assert.equal(kept.get(build), 4, "no count: every use builds");
    assert.equal(kept.get(build), 5);
  });

  it("a build that rejects is not kept", async () => {
    let n = 0;
    const kept = new UeventKeyed<Promise<number>>(() => "7");
    await assert.rejects(kept.get(() => Promise.reject(new Error(`failed ${++n}`))));
    assert.equal(await kept.get(async () => ++n), 2);
    assert.equal(await kept.get(async () => ++n), 2);
  });

  it("a session's reads may use the kept loop list; a write's verification reads it fresh", async () => {
    const asked: (boolean | undefined)[] = [];
    const sources: SnapshotSources = {
      listDisks: async () => [],
      findDisk: async () => null,
      readMounts: async () => [],
      listLoops: async (options) => {
        asked.push(options?.fresh);
        return [];
      },
      readSwapDevices: async () => [],
      deviceOpeners: async () => [],
      readOfflineMarks: async () => [],
    };
    const sessions = new SnapshotSessions((dev, options?: SnapshotOptions) => takeSnapshot(sources, dev, options));
    await sessions.read();
    await sessions.read({ major: 7, minor: 0 });
    await sessions.fresh();
    await sessions.fresh({ major: 7, minor: 0 }, { openers: true });
    assert.deepEqual(asked, [false, false, true, true]);
  });
});

const skip = loopDeviceSkipReason();
if (skip) process.stderr.write(`uevent-keyed block reads suite skipped: ${skip}\n`);

const MiB = 1024 * 1024;
const sh = (file: string, args: string[], input?: string) => execFileSync(file, args, { input, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"] }).trim();
/** The partition devices the kernel shows for a loop disk, by number. */
const partitionSectors = (l: LoopDevice, n: number) => BigInt(sh("cat", [`/sys/block/${l.name}/${l.name}p${n}/size`]));

describe("block reads kept until the next uevent, on real loop devices", { skip: skip ?? false }, () => {
  mkdirSync("/var/tmp", { recursive: true });
  const dir = skip ? "" : mkdtempSync("/var/tmp/csi-proxy-uevent-keyed-");
  const loops: LoopDevice[] = [];
  const extra: string[] = [];
  after(() => {
    // Stacked loop devices first (they hold the fixtures' devices), each only if still on the device this test made.
    for (const dev of extra.reverse()) {
      try {
        execFileSync("losetup", ["--detach", dev], { stdio: "ignore" });
      } catch {
        // already detached
      }
    }
    for (const l of loops) l.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const tools = () => createLinuxBlockTools({ stateFile: path.join(dir, "offline-marks.json") });
  const disk = (bytes: number, label: string) => {
    const l = createLoopDevice(dir, bytes, label);
    loops.push(l);
    return l;
  };
  /** A loop device over `backing` (a block device of this test), detached by `after` if the test does not. */
  const stack = (backing: string, ...args: string[]) => {
    const dev = sh("losetup", ["--find", "--show", ...args, backing]);
    extra.push(dev);
    return dev;
  };
  const detach = (dev: string) => {
    sh("losetup", ["--detach", dev]);
    extra.splice(extra.indexOf(dev), 1);
  };
  const busyOf = async (host: LinuxDiskHost, l: LoopDevice) => (await host.getDisk(l.diskNumber)).use.busy.join("; ");

  it("a loop device stacked on a disk, and its removal, are seen by the next call (the loop list is kept only until a uevent)", async () => {
    const host = new LinuxDiskHost(tools());
    const a = disk(16 * MiB, "stacked-on");
    assert.doesNotMatch(await busyOf(host, a), /loop device/);
    assert.doesNotMatch(await busyOf(host, a), /loop device/, "twice: the kept list");
    const b = stack(a.device);
    assert.match(await busyOf(host, a), new RegExp(`in use by ${b} \\(a loop device on ${a.device}`), "attached between the calls");
    detach(b);
    assert.doesNotMatch(await busyOf(host, a), /loop device/, "detached between the calls");
  });

  it("a stacked loop device resized (losetup -c) between two calls is seen by the second", async () => {
    const vols = new LinuxVolumeHost(tools(), { defaultFileSystem: "ext4" });
    const a = disk(18 * MiB, "grown-under");
    // b: a loop device over disk a from byte 16 MiB on: 2 MiB while a is 18 MiB.
    const b = stack(a.device, "--offset", String(16 * MiB));
    a.resize(32 * MiB);
    sh("losetup", ["--set-capacity", a.device]);
    // Partition 2 at 20–28 MiB of the grown disk: beyond b's bytes until b is resized too.
    sh("sfdisk", ["--quiet", "--no-reread", "--no-tell-kernel", a.device], "label: gpt\nstart=2048, size=16384\nstart=40960, size=16384\n");
    sh("partx", ["--update", "--nr", "1:256", a.device]);
    const [id] = await vols.listVolumes(a.diskNumber, 2);
    assert.ok(id, "partition 2 is a volume");
    const busy = async () => (await vols.locateVolume(id)).devices[0].use.busy.join("; ");
    assert.doesNotMatch(await busy(), /loop device/, "b ends at 18 MiB");
    assert.doesNotMatch(await busy(), /loop device/, "twice: the kept list");
    sh("losetup", ["--set-capacity", b]);
    assert.match(await busy(), new RegExp(`in use by ${b} \\(a loop device on ${a.device}, bytes ${16 * MiB}–${32 * MiB}\\)`), "b grown to the end of a between the calls");
    detach(b);
    assert.doesNotMatch(await busy(), /loop device/);
  });

  it("a disk resized (losetup -c) between two calls: its size; a partition resized in place (BLKPG, no uevent) and one added: the volumes", async () => {
    const host = new LinuxDiskHost(tools());
    const vols = new LinuxVolumeHost(tools(), { defaultFileSystem: "ext4" });
    const a = disk(16 * MiB, "resized");
    assert.equal((await host.getDisk(a.diskNumber)).sizeBytes, BigInt(16 * MiB));
    a.resize(24 * MiB);
    sh("losetup", ["--set-capacity", a.device]);
    assert.equal((await host.getDisk(a.diskNumber)).sizeBytes, BigInt(24 * MiB), "resized between the calls");

    sh("sfdisk", ["--quiet", "--no-reread", "--no-tell-kernel", a.device], "label: gpt\nstart=2048, size=4096\n");
    sh("partx", ["--update", "--nr", "1:256", a.device]);
    const [id] = await vols.listVolumes(a.diskNumber, 0);
    assert.equal((await vols.locateVolume(id)).sizeBytes, 4096n * 512n);
    // The table and the kernel's partition grown in place: BLKPG_RESIZE_PARTITION sends no uevent.
    sh("sfdisk", ["--quiet", "--no-reread", "--no-tell-kernel", "-N", "1", a.device], ", 8192\n");
    const before = sh("cat", ["/sys/kernel/uevent_seqnum"]);
    sh("partx", ["--update", "--nr", "1", a.device]); // BLKPG_RESIZE_PARTITION, as resizepart (gone from util-linux 2.41) did
    assert.equal(partitionSectors(a, 1), 8192n);
    assert.equal((await vols.locateVolume(id)).sizeBytes, 8192n * 512n, `a partition resized in place between the calls (uevent count ${before} → ${sh("cat", ["/sys/kernel/uevent_seqnum"])})`);
    assert.equal((await host.getDisk(a.diskNumber)).sizeBytes, BigInt(24 * MiB));

    sh("sfdisk", ["--quiet", "--no-reread", "--no-tell-kernel", "--append", a.device], "size=4096\n");
    sh("partx", ["--update", "--nr", "1:256", a.device]);
    assert.equal((await vols.listVolumes(a.diskNumber, 0)).length, 2, "a partition added between the calls");
    sh("sfdisk", ["--quiet", "--no-reread", "--no-tell-kernel", "--delete", a.device, "2"]);
    sh("partx", ["--delete", "--nr", "2", a.device]);
    assert.deepEqual(await vols.listVolumes(a.diskNumber, 0), [id], "a partition removed between the calls");
  });

  it("GetVolumeStats' disk hint: a clone attached between two calls makes the id ambiguous; detached, it answers again", async () => {
    const vols = new LinuxVolumeHost(tools(), { defaultFileSystem: "ext4" });
    const a = disk(32 * MiB, "original");
    sh("sfdisk", ["--quiet", "--no-reread", "--no-tell-kernel", a.device], "label: gpt\nstart=2048, size=49152\n");
    sh("partx", ["--update", "--nr", "1:256", a.device]);
    sh("mkfs.ext4", ["-q", "-F", `${a.device}p1`]);
    const [id] = await vols.listVolumes(a.diskNumber, 1);
    const total = (await vols.getVolumeUsage(id)).totalBytes;
    assert.ok(total > 0n);
    assert.equal((await vols.getVolumeUsage(id)).totalBytes, total, "twice: from the one disk it was found on");
    const cloneFile = path.join(dir, "clone.img");
    copyFileSync(a.file, cloneFile);
    const clone = stack(cloneFile);
    // BLKPG: this kernel may have no GPT parser for a partition scan.
    sh("partx", ["--update", "--nr", "1:256", clone]);
    await assert.rejects(vols.getVolumeUsage(id), (e: unknown) => e instanceof CsiProxyError && e.code === Code.FailedPrecondition && /ambiguous/.test(e.message), "a clone attached between the calls");
    detach(clone);
    assert.equal((await vols.getVolumeUsage(id)).totalBytes, total, "the clone detached between the calls");
  });
});
