// Red-team suite for the block-device RPCs (wrong device or region, and their neighbours), on loop devices
// only. Each case builds the trap from scratch, makes the call through the in-process Linux services,
// and asserts the answer code AND that every byte the call does not own is unchanged: sha256 of the
// image regions (unmounted) and of every file (mounted filesystems). Every destructive call is guarded
// to this suite's own devices (block-lab.ts).
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, openSync, writeSync, closeSync, mkdtempSync } from "node:fs";
import * as path from "node:path";
import { Lab, MiB, hasTool, hashFiles, hashRegion, labSkipReason, run, writeFiles, writeTable, type Loop } from "./block-lab.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";
import { watchGcClosedFds } from "../helpers/gc-closed-fds.ts";
import { Code } from "../../src/errors.ts";

const skip = labSkipReason();
if (skip) process.stderr.write(`block red-team suite skipped: ${skip}\n`);

// Every descriptor the in-process services open is closed by its owner, on refusals too: once all
// cases ran and their labs were dropped, a forced collection finds none to close.
const gcClosedFds = watchGcClosedFds();
after(async () => {
  assert.deepEqual(await gcClosedFds.check(), [], "descriptors left open for garbage collection to close");
});

const sysAttr = (loop: Loop, part: number, attr: string) => readFileSync(`/sys/block/${loop.name}/${loop.name}p${part}/${attr}`, "utf8").trim();
const wholeImage = (img: string, mib: number) => hashRegion(img, 0, mib * MiB);

/** Runs `fn` with a fresh lab, always cleaned up. */
async function withLab(fn: (lab: Lab) => Promise<void>, fsType: "ext4" | "xfs" = "ext4"): Promise<void> {
  const lab = await Lab.create(fsType);
  try {
    await fn(lab);
  } finally {
    lab.cleanup();
  }
}

/** An ext4 with `files` files written through a loop device attached at `offset`/`sizelimit` of `backing`; unmounted and detached again. */
function ext4At(lab: Lab, backing: string, files: number, opts: { offset?: number; sizelimit?: number } = {}): Map<string, string> {
  const l = lab.attach(backing, opts);
  run("mkfs.ext4", ["-q", l.device]);
  const dir = lab.target("outside", `setup-${l.name}`);
  lab.mount(l.device, dir);
  writeFiles(dir, files, "setup");
  const hashes = hashFiles(dir);
  lab.umount(dir);
  lab.detach(l);
  return hashes;
}

/** fsck -n says the filesystem on `device` is clean. */
const fsckClean = (device: string) => assert.doesNotThrow(() => run("e2fsck", ["-f", "-n", device]), `${device} is damaged`);

describe("block red team: wrong device or region", { skip: skip ?? false }, () => {
  it("case 1: stale kernel partitions (kernel p1 at 1–299 MiB, table p1 at 150–200 MiB, ext4 in table p2 at 40–100 MiB)", () =>
    withLab(async (lab) => {
      const img = lab.image(300, "stale");
      writeTable(img, "gpt", ["start=1MiB,size=298MiB"]);
      const disk = lab.attach(img, { partscan: true });
      assert.equal(sysAttr(disk, 1, "start"), String(MiB / 512));
      // The table changes behind the kernel's back (as when a second image takes over a loop number attached without partition scan).
      writeTable(img, "gpt", ["start=150MiB,size=50MiB", "start=40MiB,size=60MiB"]);
      const files = ext4At(lab, img, 20, { offset: 40 * MiB, sizelimit: 60 * MiB });
      run("blockdev", ["--flushbufs", disk.device]);
      const before = wholeImage(img, 300);

      const [volumeId] = await lab.volumesOf(disk.diskNumber);
      await rejectsWithCode(lab.services.volume.formatVolume({ volumeId: lab.guardVolume(volumeId) }), Code.FailedPrecondition, /kernel.*partition table|partition table.*kernel/);
      // ResizeVolume: the stale partition already reaches the disk's end, so there is nothing to grow (OK, no change: upstream's no-op rule).
      await lab.services.volume.resizeVolume({ volumeId: lab.guardVolume(volumeId), sizeBytes: 0n });
      await rejectsWithCode(
        lab.services.volume.mountVolume({ volumeId: lab.guardVolume(volumeId), targetPath: lab.target("kubelet", "c1") }),
        Code.FailedPrecondition,
      );
      await rejectsWithCode(lab.services.disk.setDiskState({ diskNumber: lab.guardDisk(disk.diskNumber), isOnline: false }), Code.FailedPrecondition, /kernel/);
      assert.equal(wholeImage(img, 300), before, "image changed");
      const check = lab.attach(img, { offset: 40 * MiB, sizelimit: 60 * MiB });
      fsckClean(check.device);
      const dir = lab.target("outside", "c1check");
      lab.mount(check.device, dir, "ro");
      assert.deepEqual(hashFiles(dir), files);
    }));

  describe("case 2: storage in use through another block device", () => {
    /** A 256 MiB disk with p1 = 100 MiB holding ext4, a loop stacked on p1 (at `offset`) mounted outside with `n` files. */
    async function stackedOnPartition(lab: Lab, opts: { offset?: number; n?: number; mkfsPartition?: boolean } = {}) {
      const img = lab.image(256, "stack");
      writeTable(img, "gpt", ["start=1MiB,size=100MiB"]);
      const disk = lab.attach(img, { partscan: true });
      const p1 = `${disk.device}p1`;
      const stacked = lab.attach(p1, { offset: opts.offset });
      run("mkfs.ext4", ["-q", stacked.device]);
      const dir = lab.target("outside", `stacked-${stacked.name}`);
      lab.mount(stacked.device, dir);
      writeFiles(dir, opts.n ?? 20, "stacked");
      const files = hashFiles(dir);
      const [volumeId] = await lab.volumesOf(disk.diskNumber);
      return { img, disk, p1, stacked, dir, files, volumeId };
    }

    it("FormatVolume of a partition holding a mounted filesystem through a loop at offset 1 MiB", () =>
      withLab(async (lab) => {
        const s = await stackedOnPartition(lab, { offset: MiB });
        const head = hashRegion(s.img, 0, 2 * MiB);
        await rejectsWithCode(lab.services.volume.formatVolume({ volumeId: lab.guardVolume(s.volumeId) }), Code.FailedPrecondition, new RegExp(`in use by ${s.stacked.device}`));
        assert.deepEqual(hashFiles(s.dir), s.files);
        assert.equal(hashRegion(s.img, 0, 2 * MiB), head);
        assert.equal(run("blkid", ["-p", "-s", "TYPE", "-o", "value", s.p1]).trim() || "", "", "p1 got a filesystem");
      }));

    it("ResizeVolume of a partition whose filesystem is mounted through a stacked loop (no offset)", () =>
      withLab(async (lab) => {
        const s = await stackedOnPartition(lab);
        const size = sysAttr(s.disk, 1, "size");
        await rejectsWithCode(lab.services.volume.resizeVolume({ volumeId: lab.guardVolume(s.volumeId), sizeBytes: 0n }), Code.FailedPrecondition, /in use by/);
        assert.equal(sysAttr(s.disk, 1, "size"), size, "partition grew");
        assert.deepEqual(hashFiles(s.dir), s.files);
      }));

    it("MountVolume of a partition whose filesystem is already mounted through a stacked loop", () =>
      withLab(async (lab) => {
        const s = await stackedOnPartition(lab);
        const target = lab.target("kubelet", "second");
        await rejectsWithCode(lab.services.volume.mountVolume({ volumeId: lab.guardVolume(s.volumeId), targetPath: target }), Code.FailedPrecondition, /in use by/);
        assert.ok(!readFileSync("/proc/self/mountinfo", "utf8").includes(` ${target} `), "mounted a second time");
        assert.deepEqual(hashFiles(s.dir), s.files);
      }));

    it("SetDiskState offline of a disk whose partition backs a mounted loop", () =>
      withLab(async (lab) => {
        const s = await stackedOnPartition(lab);
        await rejectsWithCode(lab.services.disk.setDiskState({ diskNumber: lab.guardDisk(s.disk.diskNumber), isOnline: false }), Code.FailedPrecondition, /in use by/);
        assert.equal(readFileSync(`/sys/block/${s.disk.name}/ro`, "utf8").trim(), "0");
        writeFileSync(path.join(s.dir, "after.txt"), "still writable");
        assert.deepEqual(new Map([...hashFiles(s.dir)].filter(([k]) => k !== "after.txt")), s.files);
      }));

    it("one image attached twice: the dev- id of the second copy's partition is refused like its PARTUUID", () =>
      withLab(async (lab) => {
        const img = lab.image(256, "twice");
        writeTable(img, "gpt", ["start=1MiB,size=100MiB"]);
        const first = lab.attach(img, { partscan: true });
        run("mkfs.ext4", ["-q", `${first.device}p1`]);
        const dir = lab.target("outside", "first");
        lab.mount(`${first.device}p1`, dir);
        writeFiles(dir, 20, "first");
        const files = hashFiles(dir);
        const second = lab.attach(img, { partscan: true });
        const [uuidId] = await lab.volumesOf(second.diskNumber);
        await rejectsWithCode(lab.services.volume.getDiskNumberFromVolumeId({ volumeId: uuidId }), Code.FailedPrecondition, /ambiguous/);
        const devId = lab.devId(second, 1);
        const target = lab.target("kubelet", "copy");
        await rejectsWithCode(lab.services.volume.mountVolume({ volumeId: lab.guardVolume(devId), targetPath: target }), Code.FailedPrecondition, /ambiguous|in use by/);
        await rejectsWithCode(lab.services.volume.resizeVolume({ volumeId: lab.guardVolume(devId), sizeBytes: 0n }), Code.FailedPrecondition, /ambiguous|in use by/);
        assert.equal(sysAttr(second, 1, "size"), String((100 * MiB) / 512));
        assert.deepEqual(hashFiles(dir), files);
      }));

    it("PartitionDisk on a raw disk backing a loop at offset 2 MiB that is mounted (108 files)", () =>
      withLab(async (lab) => {
        const img = lab.image(128, "raw");
        const raw = lab.attach(img, { partscan: true });
        const stacked = lab.attach(raw.device, { offset: 2 * MiB });
        run("mkfs.ext4", ["-q", stacked.device]);
        const dir = lab.target("outside", "offset2");
        lab.mount(stacked.device, dir);
        writeFiles(dir, 108, "offset");
        const files = hashFiles(dir);
        const head = hashRegion(img, 0, 2 * MiB);
        const tail = hashRegion(img, 127 * MiB, MiB);
        await rejectsWithCode(lab.services.disk.partitionDisk({ diskNumber: lab.guardDisk(raw.diskNumber) }), Code.FailedPrecondition, new RegExp(`in use by ${stacked.device}`));
        assert.equal(hashRegion(img, 0, 2 * MiB), head);
        assert.equal(hashRegion(img, 127 * MiB, MiB), tail);
        assert.deepEqual(hashFiles(dir), files);
      }));

    it("MountVolume of a loop disk whose backing partition is mounted outside (the reverse stacking)", () =>
      withLab(async (lab) => {
        const img = lab.image(128, "rev");
        writeTable(img, "gpt", ["start=1MiB,size=100MiB"]);
        const disk = lab.attach(img, { partscan: true });
        run("mkfs.ext4", ["-q", `${disk.device}p1`]);
        const dir = lab.target("outside", "rev");
        lab.mount(`${disk.device}p1`, dir);
        writeFiles(dir, 20, "rev");
        const files = hashFiles(dir);
        const upper = lab.attach(`${disk.device}p1`);
        const [volumeId] = await lab.volumesOf(upper.diskNumber);
        const target = lab.target("kubelet", "rev");
        await rejectsWithCode(lab.services.volume.mountVolume({ volumeId: lab.guardVolume(volumeId), targetPath: target }), Code.FailedPrecondition, /mounted at|in use/);
        assert.deepEqual(hashFiles(dir), files);
      }));
  });

  describe("case 3: a filesystem behind a partition-table signature", () => {
    it("whole-disk exFAT (blkid also reports PTTYPE=dos): PartitionDisk refused, every byte intact", { skip: !hasTool("mkfs.exfat") && "mkfs.exfat missing (exfatprogs)" }, () =>
      withLab(async (lab) => {
        const img = lab.image(64, "exfat");
        run("mkfs.exfat", [img]);
        const disk = lab.attach(img, { partscan: true });
        const before = wholeImage(img, 64);
        await rejectsWithCode(lab.services.disk.partitionDisk({ diskNumber: lab.guardDisk(disk.diskNumber) }), Code.FailedPrecondition, /exfat/);
        assert.equal(wholeImage(img, 64), before);
      }));

    it("whole-disk ext4 with an empty MBR in sector 0: PartitionDisk refused, files intact", () =>
      withLab(async (lab) => {
        const img = lab.image(64, "mbrfs");
        const src = mkdtempSync(path.join(lab.dir, "src-"));
        writeFiles(src, 20, "mbrfs");
        run("mkfs.ext4", ["-q", "-d", src, img]);
        const fd = openSync(img, "r+");
        writeSync(fd, Buffer.from([0x55, 0xaa]), 0, 2, 510);
        closeSync(fd);
        const disk = lab.attach(img, { partscan: true });
        const before = wholeImage(img, 64);
        await rejectsWithCode(lab.services.disk.partitionDisk({ diskNumber: lab.guardDisk(disk.diskNumber) }), Code.FailedPrecondition, /ext4/);
        assert.equal(wholeImage(img, 64), before);
      }));
  });
});

describe("block red team: neighbours (claims, sizes, answers)", { skip: skip ?? false }, () => {
  /** A disk with a GPT p1 of `p1Mib` MiB at 1 MiB, p1's kernel device, its volume id. */
  async function gptDisk(lab: Lab, mib: number, p1Mib: number) {
    const img = lab.image(mib, "gpt");
    writeTable(img, "gpt", [`start=1MiB,size=${p1Mib}MiB`]);
    const disk = lab.attach(img, { partscan: true });
    const [volumeId] = await lab.volumesOf(disk.diskNumber);
    return { img, disk, p1: `${disk.device}p1`, volumeId };
  }

  it("a partition another program holds open O_EXCL: FormatVolume refused (the kernel's claim), formatted once released", () =>
    withLab(async (lab) => {
      const d = await gptDisk(lab, 128, 100);
      const fd = openSync(d.p1, (await import("node:fs")).constants.O_RDONLY | (await import("node:fs")).constants.O_EXCL);
      try {
        await rejectsWithCode(lab.services.volume.formatVolume({ volumeId: lab.guardVolume(d.volumeId) }), Code.FailedPrecondition, /exclusive claim|in use/);
      } finally {
        closeSync(fd);
      }
      assert.equal(run("wipefs", ["--no-act", "--noheadings", d.p1]).trim(), "", "p1 was written while claimed");
      await lab.services.volume.formatVolume({ volumeId: lab.guardVolume(d.volumeId) });
      assert.equal(run("blkid", ["-p", "-s", "TYPE", "-o", "value", d.p1]).trim(), "ext4");
    }));

  it("btrfs (mountinfo shows an anonymous 0:NN device) mounted outside: offline and a second mount refused; our own btrfs mount resolved and unmounted", { skip: !hasTool("mkfs.btrfs") && "mkfs.btrfs missing (btrfs-progs)" }, () =>
    withLab(async (lab) => {
      const d = await gptDisk(lab, 256, 200);
      run("mkfs.btrfs", ["-q", d.p1]);
      const outside = lab.target("outside", "btrfs");
      lab.mount(d.p1, outside);
      writeFiles(outside, 20, "btrfs");
      const files = hashFiles(outside);
      await rejectsWithCode(lab.services.disk.setDiskState({ diskNumber: lab.guardDisk(d.disk.diskNumber), isOnline: false }), Code.FailedPrecondition, /mounted at/);
      const target = lab.target("kubelet", "btrfs");
      await rejectsWithCode(lab.services.volume.mountVolume({ volumeId: lab.guardVolume(d.volumeId), targetPath: target }), Code.FailedPrecondition, /mounted at .*outside/);
      assert.deepEqual(hashFiles(outside), files);
      lab.umount(outside);
      await lab.services.volume.mountVolume({ volumeId: lab.guardVolume(d.volumeId), targetPath: target });
      lab.adoptMount(target);
      assert.equal((await lab.services.volume.getVolumeIdFromTargetPath({ targetPath: target })).volumeId, d.volumeId);
      assert.deepEqual(hashFiles(target), files);
      await lab.services.volume.unmountVolume({ volumeId: d.volumeId, targetPath: target });
      assert.ok(!readFileSync("/proc/self/mountinfo", "utf8").includes(` ${target} `));
    }));

  it("ResizeVolume by a dev- id: the partition is re-created with a new minor, the filesystem still grows, OK", () =>
    withLab(async (lab) => {
      const d = await gptDisk(lab, 512, 100);
      run("mkfs.ext4", ["-q", d.p1]);
      const devId = lab.devId(d.disk, 1);
      await lab.services.volume.resizeVolume({ volumeId: lab.guardVolume(devId), sizeBytes: 300n * BigInt(MiB) });
      assert.equal(sysAttr(d.disk, 1, "size"), String((300 * MiB) / 512));
      const blocks = /Block count:\s+(\d+)/.exec(run("dumpe2fs", ["-h", d.p1]))?.[1];
      const blockSize = /Block size:\s+(\d+)/.exec(run("dumpe2fs", ["-h", d.p1]))?.[1];
      assert.equal(BigInt(blocks!) * BigInt(blockSize!), 300n * BigInt(MiB), "the filesystem did not grow");
    }));

  it("MBR logical partition: the maximum size ends at its extended container, the neighbours' bytes unchanged", () =>
    withLab(async (lab) => {
      const img = lab.image(256, "mbr");
      // p1 1–51 MiB, p2 extended 60–210 MiB, p5 logical 61–101 MiB; 210–256 MiB free outside the container.
      writeTable(img, "dos", ["start=2048,size=102400,type=83", "start=122880,size=307200,type=5", "start=124928,size=81920,type=83"]);
      const disk = lab.attach(img, { partscan: true });
      run("mkfs.ext4", ["-q", `${disk.device}p5`]);
      const ids = await lab.volumesOf(disk.diskNumber);
      const p5 = ids.find((id) => id.endsWith("-05}\\"));
      assert.ok(p5, `no logical volume in ${ids.join(" ")}`);
      const head = hashRegion(img, 0, 60 * MiB);
      const tail = hashRegion(img, 210 * MiB, 46 * MiB);
      await lab.services.volume.resizeVolume({ volumeId: lab.guardVolume(p5), sizeBytes: 0n });
      assert.equal(sysAttr(disk, 5, "size"), String(430080 - 124928));
      assert.equal(hashRegion(img, 0, 60 * MiB), head);
      assert.equal(hashRegion(img, 210 * MiB, 46 * MiB), tail);
      fsckClean(`${disk.device}p5`);
    }));

  it("vfat without kernel support: MountVolume is FailedPrecondition naming the module, not Internal", { skip: (!hasTool("mkfs.vfat") && "mkfs.vfat missing (dosfstools)") || (readFileSync("/proc/filesystems", "utf8").includes("\tvfat") && "this kernel has vfat") }, () =>
    withLab(async (lab) => {
      const d = await gptDisk(lab, 128, 100);
      run("mkfs.vfat", [d.p1]);
      await rejectsWithCode(
        lab.services.volume.mountVolume({ volumeId: lab.guardVolume(d.volumeId), targetPath: lab.target("kubelet", "vfat") }),
        Code.FailedPrecondition,
        /does not support vfat; load its module \(modprobe vfat\)/,
      );
    }));

  it("volume ids compare case-insensitively, keyword included", () =>
    withLab(async (lab) => {
      const d = await gptDisk(lab, 64, 32);
      for (const id of [d.volumeId.replace("Volume", "VOLUME"), d.volumeId.replace("Volume", "volume").toUpperCase(), lab.devId(d.disk, 1).replace("dev-", "DEV-")]) {
        assert.equal((await lab.services.volume.getDiskNumberFromVolumeId({ volumeId: id })).diskNumber, d.disk.diskNumber, id);
      }
    }));
});

describe("block red team: what held keeps holding (foreign content is never overwritten)", { skip: skip ?? false }, () => {
  const makers: { name: string; tool: string; make: (dev: string) => void }[] = [
    { name: "ext4", tool: "mkfs.ext4", make: (dev) => run("mkfs.ext4", ["-q", "-F", dev]) },
    { name: "xfs", tool: "mkfs.xfs", make: (dev) => run("mkfs.xfs", ["-q", "-f", dev]) },
    { name: "btrfs", tool: "mkfs.btrfs", make: (dev) => run("mkfs.btrfs", ["-q", "-f", dev]) },
    { name: "vfat", tool: "mkfs.vfat", make: (dev) => run("mkfs.vfat", [dev]) },
    { name: "exfat", tool: "mkfs.exfat", make: (dev) => run("mkfs.exfat", [dev]) },
    { name: "swap", tool: "mkswap", make: (dev) => run("mkswap", [dev]) },
  ];
  for (const m of makers) {
    it(`whole-disk ${m.name}: PartitionDisk refused, every byte intact`, { skip: !hasTool(m.tool) && `${m.tool} missing` }, () =>
      withLab(async (lab) => {
        const img = lab.image(320, `whole-${m.name}`); // mkfs.xfs needs 300 MB
        m.make(img);
        const disk = lab.attach(img, { partscan: true });
        const before = wholeImage(img, 320);
        await rejectsWithCode(lab.services.disk.partitionDisk({ diskNumber: lab.guardDisk(disk.diskNumber) }), Code.FailedPrecondition, new RegExp(m.name, "i"));
        assert.equal(wholeImage(img, 320), before);
      }));
    for (const label of ["gpt", "dos"] as const) {
      it(`${m.name} on a ${label} partition: FormatVolume (default xfs, or ext4 for xfs) refused, every byte intact`, { skip: !hasTool(m.tool) && `${m.tool} missing` }, () =>
        withLab(
          async (lab) => {
            const img = lab.image(336, `part-${m.name}`);
            writeTable(img, label, [label === "gpt" ? "start=1MiB,size=320MiB" : "start=2048,size=655360,type=83"]);
            const disk = lab.attach(img, { partscan: true });
            m.make(`${disk.device}p1`);
            const [volumeId] = await lab.volumesOf(disk.diskNumber);
            const before = wholeImage(img, 336);
            await rejectsWithCode(lab.services.volume.formatVolume({ volumeId: lab.guardVolume(volumeId) }), Code.FailedPrecondition, /already holds|signatures/);
            assert.equal(wholeImage(img, 336), before);
          },
          m.name === "xfs" ? "ext4" : "xfs",
        ));
    }
  }
});
