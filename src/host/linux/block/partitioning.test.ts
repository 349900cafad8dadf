// Partition table writes on a loop device of this test's own: sfdisk writes, partx tells the kernel.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createPartitioning } from "./partitioning.ts";
import { loopDeviceSkipReason, withLoopDevice } from "../../../../test/helpers/loop-device.ts";

const MiB = 1024 * 1024;
const LINUX_FS = "0fc63daf-8483-4772-8e79-3d69d8477de4";
const table = (dev: string) =>
  JSON.parse(execFileSync("sfdisk", ["--json", dev], { encoding: "utf8" })).partitiontable as { label: string; lastlba: number; partitions: { start: number; size: number; type: string }[] };
const sectors = (name: string, part: string) => Number(readFileSync(`/sys/block/${name}/${part}/size`, "utf8"));

describe("partition table writes", { skip: loopDeviceSkipReason() ?? false }, () => {
  it("an empty GPT, a partition appended and shown by the kernel, resized, the backup header moved after the disk grew", () =>
    withLoopDevice(16 * MiB, "parts", async (loop) => {
      const parts = createPartitioning();
      await parts.createGptTable(loop.device);
      assert.equal(table(loop.device).label, "gpt");
      assert.equal(table(loop.device).partitions?.length ?? 0, 0);

      await parts.appendPartition(loop.device, LINUX_FS);
      const [p] = table(loop.device).partitions;
      assert.equal(p.type.toLowerCase(), LINUX_FS);
      assert.ok(existsSync(`/sys/block/${loop.name}/${loop.name}p1`), "the kernel shows the new partition (partx)");

      await parts.resizePartition(loop.device, 1, 8192n);
      assert.equal(table(loop.device).partitions[0].size, 8192);
      assert.equal(sectors(loop.name, `${loop.name}p1`), 8192, "the kernel shows the new size");

      loop.resize(32 * MiB);
      execFileSync("losetup", ["--set-capacity", loop.device]);
      const before = table(loop.device).lastlba;
      await parts.relocateGptBackup(loop.device);
      assert.ok(table(loop.device).lastlba > before, "the table now reaches the grown disk's end");
      assert.ok(existsSync(`/sys/block/${loop.name}/${loop.name}p1`), "the kernel kept the partition");
      await parts.syncPartitions(loop.device);
      assert.equal(sectors(loop.name, `${loop.name}p1`), 8192);
    }));
});
