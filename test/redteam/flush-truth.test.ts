// A flush tells the truth: WriteVolumeCache and the flush inside UnmountVolume on a loop device
// whose writes fail. The backing image made immutable (chattr +i) makes every write of the loop
// device fail with EIO; 8 MiB written without sync to the mounted volume then cannot reach the disk.
// Expected, on ext4, xfs and btrfs alike: the first flush answers DataLoss naming the volume; the
// same mount's next flush answers OK (the failure was reported once, as the kernel's errseq does);
// an UnmountVolume whose flush fails answers DataLoss and leaves the volume mounted, the next one
// unmounts. Only this suite's own images and loop devices are touched (block-lab.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { statfsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Lab, hasTool, labSkipReason, run, type Loop } from "./block-lab.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";
import { Code } from "../../src/errors.ts";

const skip = labSkipReason() ?? (hasTool("chattr") ? null : "chattr missing (e2fsprogs)");
if (skip) process.stderr.write(`flush red-team suite skipped: ${skip}\n`);

/**
 * A directory on a filesystem that refuses writes to an immutable file: the temporary directory, or
 * /var/tmp when that is a tmpfs (Debian 13 mounts /tmp as one). tmpfs takes `chattr +i` (Linux ≥ 6.0)
 * but its write path does not check the flag, so the loop device's writes would go on succeeding.
 */
function imageBaseDir(): string {
  const TMPFS_MAGIC = 0x01021994;
  return [tmpdir(), "/var/tmp"].find((dir) => statfsSync(dir).type !== TMPFS_MAGIC) ?? tmpdir();
}

const FILESYSTEMS = [
  { fs: "ext4", mkfs: ["mkfs.ext4", "-q"] },
  { fs: "xfs", mkfs: ["mkfs.xfs", "-q", "-f"] },
  { fs: "btrfs", mkfs: ["mkfs.btrfs", "-q", "-f"] },
] as const;

/** A whole-disk filesystem on a loop device of a fresh image, mounted by MountVolume inside the kubelet dir; `fail()` makes every write of the device fail. */
async function mountedVolume(lab: Lab, mkfs: readonly string[], name: string) {
  const image = lab.image(320, name);
  const loop: Loop = lab.attach(image);
  run(mkfs[0], [...mkfs.slice(1), loop.device]);
  const volumeId = lab.devId(loop);
  const target = lab.target("kubelet", name);
  await lab.services.volume.mountVolume({ volumeId: lab.guardVolume(volumeId), targetPath: target });
  lab.adoptMount(target);
  const mounted = () => loop.device.length > 0 && run("findmnt", ["-n", "-o", "TARGET", "--mountpoint", target]).trim() === target;
  return {
    image,
    volumeId,
    target,
    mounted: () => {
      try {
        return mounted();
      } catch {
        return false; // findmnt exits 1 when nothing is mounted there
      }
    },
    /** 8 MiB in the page cache only (no sync). */
    writeUnsynced: () => writeFileSync(path.join(target, "unsynced.bin"), randomBytes(8 * 1024 * 1024)),
    fail: () => run("chattr", ["+i", image]),
    heal: () => run("chattr", ["-i", image]),
  };
}

describe("flush on a device whose writes fail (ext4, xfs, btrfs)", { skip: skip ?? false }, () => {
  for (const { fs, mkfs } of FILESYSTEMS) {
    it(`${fs}: WriteVolumeCache answers DataLoss once; UnmountVolume after a failed flush stays mounted, the next one unmounts`, { skip: !hasTool(mkfs[0]) && `${mkfs[0]} missing` }, async () => {
      const lab = await Lab.create("ext4", imageBaseDir());
      const vols: Awaited<ReturnType<typeof mountedVolume>>[] = [];
      try {
        // WriteVolumeCache.
        const a = await mountedVolume(lab, mkfs, `${fs}-cache`);
        vols.push(a);
        await lab.services.volume.writeVolumeCache({ volumeId: a.volumeId }); // healthy: OK
        a.writeUnsynced();
        a.fail();
        const err = await rejectsWithCode(lab.services.volume.writeVolumeCache({ volumeId: a.volumeId }), Code.DataLoss);
        assert.ok(err.message.includes(a.volumeId), `names the volume: ${err.message}`);
        assert.match(err.message, /not yet on disk may be lost/);
        // The same mount's next flush: the failure was reported (answered once).
        await lab.services.volume.writeVolumeCache({ volumeId: a.volumeId });
        // Its UnmountVolume: the failure already reported, it unmounts.
        await lab.services.volume.unmountVolume({ volumeId: a.volumeId, targetPath: a.target });
        assert.equal(a.mounted(), false, "unmounted");

        // UnmountVolume whose own flush meets the failure.
        const b = await mountedVolume(lab, mkfs, `${fs}-unmount`);
        vols.push(b);
        b.writeUnsynced();
        b.fail();
        const first = await rejectsWithCode(lab.services.volume.unmountVolume({ volumeId: b.volumeId, targetPath: b.target }), Code.DataLoss, /before unmounting.*not yet on disk may be lost/);
        assert.ok(first.message.includes(b.volumeId), `names the volume: ${first.message}`);
        assert.equal(b.mounted(), true, "a failed flush leaves the volume mounted");
        await lab.services.volume.unmountVolume({ volumeId: b.volumeId, targetPath: b.target });
        assert.equal(b.mounted(), false, "the next UnmountVolume unmounts");
      } finally {
        for (const v of vols) v.heal();
        lab.cleanup();
      }
    });
  }
});
