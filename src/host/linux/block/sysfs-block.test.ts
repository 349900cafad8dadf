import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { listBlockDisks, readBlockDisk } from "./sysfs-block.ts";
import type { PartitionTable } from "./block-types.ts";

const root = mkdtempSync(path.join(tmpdir(), "csi-sysfs-"));
after(() => rmSync(root, { recursive: true, force: true }));
const sys = path.join(root, "block");

function put(file: string, content: string | Uint8Array) {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, content);
}

/** A fake /sys/block: sdb (SCSI 2:0:1:5, VPD pages, one partition with a holder), loop3 (backing file), loop7 (unattached). */
function tree() {
  const sdb = path.join(sys, "sdb");
  put(path.join(sdb, "uevent"), "MAJOR=8\nMINOR=16\nDEVNAME=sdb\nDEVTYPE=disk\nDISKSEQ=4\n");
  put(path.join(sdb, "diskseq"), "4\n");
  put(path.join(sdb, "size"), "2097152\n");
  put(path.join(sdb, "ro"), "0\n");
  put(path.join(sdb, "removable"), "0\n");
  put(path.join(sdb, "queue/logical_block_size"), "512\n");
  const scsiDev = path.join(root, "devices/host2/target2:0:1/2:0:1:5");
  put(path.join(scsiDev, "state"), "running\n");
  put(path.join(scsiDev, "vpd_pg80"), Uint8Array.from([0, 0x80, 0, 3, 0x53, 0x4e, 0x31]));
  put(path.join(scsiDev, "vpd_pg83"), Uint8Array.from([0, 0x83, 0, 8, 1, 3, 0, 4, 0x60, 0x0a, 0xbc, 0xde]));
  symlinkSync(scsiDev, path.join(sdb, "device"));
  mkdirSync(path.join(sdb, "holders"));
  const p1 = path.join(sdb, "sdb1");
  put(path.join(p1, "partition"), "1\n");
  put(path.join(p1, "uevent"), "MAJOR=8\nMINOR=17\nDEVNAME=sdb1\nDEVTYPE=partition\nPARTN=1\n");
  put(path.join(p1, "start"), "2048\n");
  put(path.join(p1, "size"), "1000\n");
  put(path.join(p1, "ro"), "0\n");
  put(path.join(p1, "holders/dm-0"), "");

  const loop = path.join(sys, "loop3");
  put(path.join(loop, "uevent"), "MAJOR=7\nMINOR=3\nDEVNAME=loop3\n");
  put(path.join(loop, "diskseq"), "9\n");
  put(path.join(loop, "size"), "2048\n");
  put(path.join(loop, "ro"), "1\n");
  put(path.join(loop, "loop/backing_file"), "/images/a b.img\n");
  mkdirSync(path.join(loop, "holders"));

  const idle = path.join(sys, "loop7");
  put(path.join(idle, "uevent"), "MAJOR=7\nMINOR=7\nDEVNAME=loop7\n");
  put(path.join(idle, "size"), "0\n");
}
tree();

test("a SCSI disk: address, state, VPD pages, partitions with PARTUUIDs from the table, holders", async () => {
  const table: PartitionTable = { type: "gpt", entries: [{ number: 1, startSectors: 2048n, sizeSectors: 1000n, uuid: "aaaa", typeId: "tttt" }], backupAtEnd: true };
  const calls: string[] = [];
  const d = await readBlockDisk("sdb", {
    sysBlock: sys,
    readTable: async (dev, lbs, size) => {
      calls.push(`${dev} ${lbs} ${size}`);
      return table;
    },
  });
  assert.deepEqual(calls, ["/dev/sdb 512 1073741824"]);
  assert.equal(d.devPath, "/dev/sdb");
  assert.deepEqual([d.major, d.minor, d.diskSeq, d.sizeBytes], [8, 16, "4", 1073741824n]);
  assert.deepEqual(d.scsiAddress, { host: 2, channel: 0, target: 1, lun: 5 });
  assert.equal(d.scsiState, "running");
  assert.deepEqual([...(d.vpdPage80 ?? [])].slice(4), [0x53, 0x4e, 0x31]);
  assert.equal(d.partitions.length, 1);
  assert.deepEqual(
    { ...d.partitions[0] },
    { name: "sdb1", devPath: "/dev/sdb1", major: 8, minor: 17, number: 1, startSectors: 2048n, sizeSectors: 1000n, holders: ["dm-0"], readOnly: false, uuid: "aaaa", typeId: "tttt" },
  );
  assert.equal(d.partitionTable, table);
});

test("a loop device: backing file, read-only flag, no SCSI facts, table never read without partitions", async () => {
  const d = await readBlockDisk("loop3", {
    sysBlock: sys,
    readTable: async () => assert.fail("read the table of a disk without partitions"),
  });
  assert.equal(d.loopBackingFile, "/images/a b.img");
  assert.equal(d.readOnly, true);
  assert.equal(d.scsiAddress, null);
  assert.equal(d.scsiState, null);
  assert.equal(d.partitionTable, null);
  assert.equal(d.logicalBlockSize, 512);
});

test("every entry is listed, including devices without medium (the service filters them)", async () => {
  const names = (await listBlockDisks({ sysBlock: sys, readTable: async () => null })).map((d) => `${d.name}:${d.sizeBytes}`).sort();
  assert.deepEqual(names, ["loop3:1048576", "loop7:0", "sdb:1073741824"]);
});

test("withMedium: devices of size 0 are skipped after reading their size (nothing else of them is read)", async () => {
  const read: string[] = [];
  const names = (await listBlockDisks({ sysBlock: sys, withMedium: true, readTable: async (dev) => (read.push(dev), null) })).map((d) => d.name).sort();
  assert.deepEqual(names, ["loop3", "sdb"]);
  assert.ok(!read.some((d) => d.includes("loop7")));
});
