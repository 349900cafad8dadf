// libblkid in process against the programs it replaces, on real loop devices: for every fixture
// (empty, ext4, xfs, swap, GPT and MBR disks and their partitions, a GPT written over an ext4, two
// filesystems at once, a 1 MiB disk, exFAT and FAT where their mkfs is installed) the probe must give
// `blkid -p`'s verdict and the signature list exactly `wipefs --no-act`'s (types, offsets, order).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { loadBlkid, type Blkid } from "./libblkid.ts";
import { probeWithBlkidProgram, signaturesWithWipefs } from "./signature-probe.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../../../../test/helpers/loop-device.ts";

const skip = loopDeviceSkipReason();
const MiB = 1024 * 1024;
const has = (tool: string) => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0;
const run = (file: string, args: string[], input?: string) => execFileSync(file, args, { input, stdio: ["pipe", "pipe", "pipe"] });

interface Fixture {
  name: string;
  sizeMiB: number;
  /** Builds the content on the device; returns the device nodes to compare (the disk and/or its partitions). */
  make(dev: string): string[];
  needs?: string;
}

const gpt = (dev: string, script: string) => {
  run("sfdisk", ["--quiet", "--wipe", "never", "--no-reread", "--no-tell-kernel", dev], script);
  run("partx", ["--update", "--nr", "1:8", dev]);
};

const fixtures: Fixture[] = [
  { name: "all zeros", sizeMiB: 64, make: (d) => [d] },
  { name: "ext4 on the whole disk", sizeMiB: 64, make: (d) => (run("mkfs.ext4", ["-q", d]), [d]) },
  { name: "xfs on the whole disk", sizeMiB: 320, make: (d) => (run("mkfs.xfs", ["-q", d]), [d]) },
  { name: "swap", sizeMiB: 64, make: (d) => (run("mkswap", [d]), [d]) },
  {
    name: "GPT, p1 ext4, p2 empty",
    sizeMiB: 64,
    make: (d) => {
      gpt(d, "label: gpt\nsize=20MiB\nsize=20MiB\n");
      run("mkfs.ext4", ["-q", `${d}p1`]);
      return [d, `${d}p1`, `${d}p2`];
    },
  },
  {
    name: "MBR, p1 empty",
    sizeMiB: 64,
    make: (d) => {
      gpt(d, "label: dos\nsize=20MiB, type=83\n");
      return [d, `${d}p1`];
    },
  },
  {
    name: "GPT written over an ext4 (the filesystem's superblock still there)",
    sizeMiB: 64,
    make: (d) => {
      run("mkfs.ext4", ["-q", d]);
      run("sfdisk", ["--quiet", "--wipe", "never", "--no-reread", "--no-tell-kernel", d], "label: gpt\n");
      return [d];
    },
  },
  {
    name: "xfs superblock copied in front of an ext4 (ambivalent)",
    sizeMiB: 320,
    make: (d) => {
      run("mkfs.xfs", ["-q", d]);
      const sector = run("dd", [`if=${d}`, "bs=512", "count=1", "status=none"]);
      run("mkfs.ext4", ["-q", "-F", d]);
      execFileSync("dd", [`of=${d}`, "bs=512", "count=1", "conv=notrunc", "status=none"], { input: sector });
      return [d];
    },
  },
  { name: "1 MiB disk with an MBR (blkid's small-disk rule)", sizeMiB: 1, make: (d) => (run("sfdisk", ["--quiet", "--no-reread", "--no-tell-kernel", d], "label: dos\nstart=64, type=83\n"), [d]) },
  { name: "1 MiB disk with ext4", sizeMiB: 1, make: (d) => (run("mkfs.ext4", ["-q", d]), [d]) },
  { name: "exFAT on the whole disk (libblkid also sees a dos table)", sizeMiB: 64, make: (d) => (run("mkfs.exfat", [d]), [d]), needs: "mkfs.exfat" },
  { name: "FAT32 on the whole disk", sizeMiB: 64, make: (d) => (run("mkfs.vfat", ["-F", "32", d]), [d]), needs: "mkfs.vfat" },
];

describe("libblkid in process gives blkid -p's and wipefs --no-act's answers", { skip: skip ?? false }, () => {
  let dir: string;
  let blkid: Blkid;
  const loops: LoopDevice[] = [];
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "csi-libblkid-"));
    blkid = await loadBlkid();
  });
  after(() => {
    for (const l of loops) l.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const f of fixtures) {
    it(f.name, { skip: f.needs && !has(f.needs) ? `${f.needs} missing` : false }, async () => {
      const loop = createLoopDevice(dir, f.sizeMiB * MiB, "libblkid");
      loops.push(loop);
      for (const dev of f.make(loop.device)) {
        const [ours, theirs] = await Promise.all([blkid.probe(dev), probeWithBlkidProgram(dev)]);
        assert.equal(ours.kind, theirs.kind, `${dev}: probe kind`);
        if (ours.kind === "found") assert.deepEqual(ours, theirs, `${dev}: probe`);
        assert.deepEqual(await blkid.signatures(dev), await signaturesWithWipefs(dev), `${dev}: signatures`);
      }
    });
  }

  it("the fixtures cover each verdict: empty, found, ambivalent, and several signatures at once", async () => {
    // Guards the comparison above against fixtures that all look alike.
    const kinds = new Set<string>();
    let most = 0;
    for (const l of loops) {
      kinds.add((await blkid.probe(l.device)).kind);
      most = Math.max(most, (await blkid.signatures(l.device)).length);
    }
    assert.deepEqual([...kinds].sort(), ["ambivalent", "empty", "found"]);
    assert.ok(most >= 2, `at most ${most} signature(s) on one device`);
  });

  it("a device that cannot be opened is an error, never empty", async () => {
    await assert.rejects(blkid.probe(path.join(dir, "no-such-device")), /cannot probe/);
    await assert.rejects(blkid.signatures(path.join(dir, "no-such-device")), /cannot probe/);
  });
});
