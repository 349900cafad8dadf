// The reads of block-reads.ts against this machine's kernel: the mount table and /proc/filesystems
// everywhere, and (as root) a loop device this test attaches to its own image.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { createBlockReads } from "./block-reads.ts";
import { loopDeviceSkipReason, withLoopDevice } from "../../../../test/helpers/loop-device.ts";

const MiB = 1024 * 1024;

it("the mount table holds / and /proc; the kernel's filesystems include proc", async () => {
  const reads = createBlockReads();
  const mounts = await reads.readMounts();
  assert.ok(mounts.some((m) => m.mountPoint === "/"));
  const proc = mounts.find((m) => m.mountPoint === "/proc");
  assert.equal(proc?.fsType, "proc");
  assert.equal(await reads.readMounts(), mounts, "one answer per mount table version");
  assert.ok((await reads.kernelFilesystems()).has("proc"));
});

it("no disk and no whole disk for a device number the kernel does not have", async () => {
  const reads = createBlockReads();
  assert.equal(await reads.findDisk({ major: 4095, minor: 1048575 }), null);
  assert.equal(reads.diskOfDevice!({ major: 4095, minor: 1048575 }), null);
});

describe("a loop device of this test's own", { skip: loopDeviceSkipReason() ?? false }, () => {
  it("is listed with its size, found by number, its partition mapped to it, its backing file identified", () =>
    withLoopDevice(16 * MiB, "reads", async (loop) => {
      execFileSync("sfdisk", ["--quiet", loop.device], { input: "label: gpt\n,4MiB\n" });
      execFileSync("partx", ["--update", loop.device]);
      const reads = createBlockReads();
      const dev = { major: loop.major, minor: loop.minor };
      const listed = (await reads.listDisks()).find((d) => d.name === loop.name);
      assert.equal(listed?.sizeBytes, BigInt(16 * MiB));
      assert.equal(listed?.partitions.length, 1);
      assert.equal(listed?.partitionTable?.type, "gpt");
      const bare = (await reads.listDisks({ tables: false })).find((d) => d.name === loop.name);
      assert.equal(bare?.partitionTable, null);
      const idOnly = (await reads.listDisks({ partitions: false })).find((d) => d.name === loop.name);
      assert.deepEqual(idOnly?.partitions, []);
      assert.equal((await reads.findDisk(dev))?.name, loop.name);
      const part = listed!.partitions[0];
      assert.equal(await reads.findDisk(part), null, "a partition is no whole disk");
      assert.deepEqual(reads.diskOfDevice!(part), dev);
      assert.deepEqual(reads.diskOfDevice!(dev), dev);
      const seq = readFileSync(`/sys/block/${loop.name}/diskseq`, "utf8").trim();
      const key = reads.diskSetKey!(); // undefined where some device has no diskseq
      if (key !== undefined) assert.match(key, new RegExp(`(^| )${loop.name}=${seq}( |$)`));
      const table = await reads.readPartitionTable(listed!);
      assert.equal(table?.entries[0].sizeSectors, BigInt((4 * MiB) / 512));
      const st = statSync(loop.file, { bigint: true });
      const looped = (await reads.listLoops()).find((l) => l.name === loop.name);
      assert.equal(looped?.backingFile, loop.file);
      assert.equal(looped?.sizeBytes, BigInt(16 * MiB));
      assert.deepEqual(looped?.backing?.kind === "file" ? looped.backing.ino : null, st.ino);
    }));
});
