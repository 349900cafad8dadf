import { describe, test, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { guidToString, readPartitionTable } from "./partition-table.ts";

const dir = mkdtempSync(path.join(tmpdir(), "csi-pt-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const MiB = 1024 * 1024;

/** A sparse image file partitioned by sfdisk (works on plain files, no root needed). */
function image(name: string, sizeMiB: number, script: string): string {
  const file = path.join(dir, name);
  const fd = openSync(file, "w");
  ftruncateSync(fd, sizeMiB * MiB);
  closeSync(fd);
  execFileSync("sfdisk", ["--quiet", file], { input: script });
  return file;
}

const sfdiskJson = (file: string) =>
  JSON.parse(execFileSync("sfdisk", ["--json", file], { encoding: "utf8" })).partitiontable as {
    label: string;
    id: string;
    partitions: { start: number; size: number; type: string; uuid?: string }[];
  };

const haveSfdisk = (() => {
  try {
    execFileSync("sfdisk", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

describe("partition tables read from the device", { skip: haveSfdisk ? false : "sfdisk not installed (scripts/install-linux-tools.sh)" }, () => {
  test("GPT: entries, PARTUUIDs and types as sfdisk wrote them; backup header at the end", async () => {
    const file = image("gpt.img", 64, "label: gpt\nsize=10MiB, type=0fc63daf-8483-4772-8e79-3d69d8477de4\ntype=e3c9e316-0b5c-4db8-817d-f92df00215ae\n");
    const table = await readPartitionTable(file, 512, BigInt(64 * MiB));
    const want = sfdiskJson(file);
    assert.equal(table?.type, "gpt");
    assert.deepEqual(
      table!.entries.map((e) => ({ start: Number(e.startSectors), size: Number(e.sizeSectors), uuid: e.uuid, type: e.typeId })),
      want.partitions.map((p) => ({ start: p.start, size: p.size, uuid: p.uuid!.toLowerCase(), type: p.type.toLowerCase() })),
    );
    assert.equal(table!.backupAtEnd, true);
    assert.equal(table!.trailerSectors, 33n);
    assert.equal(table!.lastUsableSectors, BigInt(64 * 2048 - 34));
  });

  test("GPT on a grown disk: the backup header is no longer at the end", async () => {
    const file = image("grown.img", 32, "label: gpt\ntype=0fc63daf-8483-4772-8e79-3d69d8477de4\n");
    const table = await readPartitionTable(file, 512, BigInt(64 * MiB));
    assert.equal(table!.backupAtEnd, false);
  });

  test("MBR: PARTUUID = <disk signature>-<nn>, type as 0x..", async () => {
    const file = image("mbr.img", 32, "label: dos\nlabel-id: 0x0badcafe\nsize=8MiB, type=83\ntype=7\n");
    const table = await readPartitionTable(file, 512, BigInt(32 * MiB));
    assert.equal(table?.type, "dos");
    assert.deepEqual(
      table!.entries.map((e) => [e.number, e.uuid, e.typeId]),
      [
        [1, "0badcafe-01", "0x83"],
        [2, "0badcafe-02", "0x7"],
      ],
    );
  });

  test("MBR logical partitions: the EBR chain, with where each EBR sits", async () => {
    const file = image("logical.img", 64, "label: dos\nlabel-id: 0x0badcafe\nstart=2048,size=8192,type=83\nstart=12288,size=90112,type=5\nstart=14336,size=20480,type=83\nstart=36864,size=20480,type=7\n");
    const table = await readPartitionTable(file, 512, BigInt(64 * MiB));
    const want = sfdiskJson(file).partitions.filter((p) => p.type !== "5");
    const logical = table!.entries.filter((e) => e.number >= 5);
    assert.deepEqual(
      logical.map((e) => [e.number, Number(e.startSectors), Number(e.sizeSectors), e.uuid, e.typeId]),
      [
        [5, want[1].start, want[1].size, "0badcafe-05", "0x83"],
        [6, want[2].start, want[2].size, "0badcafe-06", "0x7"],
      ],
    );
    assert.equal(logical[0].ebrSectors, 12288n, "the first EBR is the container's first sector");
    assert.ok(logical[1].ebrSectors! > logical[0].startSectors + logical[0].sizeSectors - 1n && logical[1].ebrSectors! < logical[1].startSectors);
  });

  test("a plain filesystem image is no partition table", async () => {
    const file = path.join(dir, "fs.img");
    const fd = openSync(file, "w");
    ftruncateSync(fd, 16 * MiB);
    closeSync(fd);
    execFileSync("mkfs.ext4", ["-q", "-F", file]);
    assert.equal(await readPartitionTable(file, 512, BigInt(16 * MiB)), null);
  });
});

test("GUIDs: mixed-endian on disk", () => {
  const bytes = Uint8Array.from([0xaf, 0x3d, 0xc6, 0x0f, 0x83, 0x84, 0x72, 0x47, 0x8e, 0x79, 0x3d, 0x69, 0xd8, 0x47, 0x7d, 0xe4]);
  assert.equal(guidToString(bytes), "0fc63daf-8483-4772-8e79-3d69d8477de4");
});
