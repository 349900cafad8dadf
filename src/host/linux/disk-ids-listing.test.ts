// ListDiskIDs on the real host reads the disks once per uevent (sysfs-block.ts): a disk attached or
// detached between two calls is seen by the second, and a loop device's backing file renamed is
// named by its new path after the next uevent. Loop devices of this test's own images only.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createLinuxBlockTools } from "./block/linux-block-tools.ts";
import { LinuxDiskHost } from "./disk.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../../../test/helpers/loop-device.ts";

const skip = loopDeviceSkipReason();
if (skip) process.stderr.write(`disk id listing suite skipped: ${skip}\n`);

describe("ListDiskIDs read once per uevent", { skip: skip ?? false }, () => {
  const dir = skip ? "" : mkdtempSync(path.join(tmpdir(), "csi-proxy-disk-ids-"));
  const loops: LoopDevice[] = [];
  after(() => {
    for (const l of loops) l.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const host = () => new LinuxDiskHost(createLinuxBlockTools({ stateFile: path.join(dir, "offline-marks.json") }));

  it("a disk attached or detached between two calls is seen by the second; a renamed backing file by its new name after a uevent", async () => {
    const disks = host();
    const a = createLoopDevice(dir, 4 * 1024 * 1024, "a");
    loops.push(a);
    const withA = await disks.listDiskIds();
    assert.equal(withA.get(a.diskNumber)?.serialNumber, a.file, "attached between the calls");
    // Twice more: still there (the kept listing, or a new one after another process's uevent).
    assert.equal((await disks.listDiskIds()).get(a.diskNumber)?.serialNumber, a.file);

    const b = createLoopDevice(dir, 4 * 1024 * 1024, "b");
    loops.push(b);
    assert.ok((await disks.listDiskIds()).has(b.diskNumber), "a second disk attached");
    const renamed = `${b.file}.renamed`;
    renameSync(b.file, renamed);
    try {
      // A rename sends no uevent; the next one (here: one asked of the kernel for this device) shows the new name.
      writeFileSync(`/sys/block/${b.name}/uevent`, "change");
      assert.equal((await disks.listDiskIds()).get(b.diskNumber)?.serialNumber, renamed, "the backing file's new name after a uevent");
    } finally {
      renameSync(renamed, b.file); // the fixture's cleanup detaches only a device backed by its own file name
    }

    a.cleanup();
    const withoutA = await disks.listDiskIds();
    assert.equal(withoutA.has(a.diskNumber), false, "detached between the calls");
    assert.ok(withoutA.has(b.diskNumber));
    assert.equal((await host().listDiskIds()).get(b.diskNumber)?.serialNumber, b.file);
  });
});
