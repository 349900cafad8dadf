// FormatVolume's reads do not grow with the number of disks: through the volume service on the real
// host, the partition tables read off devices per FormatVolume are the same with 3 disks as with 3 + 12
// (the volume's own disk is read in full each time; the other disks' tables are kept while their
// medium and partitions are unchanged: block-reads.ts). Counted: the opens of this test's own loop
// devices (and their partitions) through node:fs/promises, where partition tables are read
// (partition-table.ts); other processes' devices are not counted, so loop devices that other tests
// attach meanwhile change nothing. Loop devices of this test's own images only.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fsPromises from "node:fs/promises";
import { mkdtempSync, rmSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createLinuxBlockTools } from "./block/linux-block-tools.ts";
import { LinuxVolumeHost } from "./volume.ts";
import { createVolumeService } from "../../groups/volume/volume-service.ts";
import { createPathPolicy } from "../../policy/path-policy.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../../../test/helpers/loop-device.ts";

const MiB = 1024 * 1024;
const skip = loopDeviceSkipReason();
if (skip) process.stderr.write(`volume disk-scale suite skipped: ${skip}\n`);

describe("FormatVolume's device reads do not grow with the number of disks", { skip: skip ?? false }, () => {
  const dir = skip ? "" : mkdtempSync(path.join(tmpdir(), "csi-proxy-disk-scale-"));
  const loops: LoopDevice[] = [];
  const realOpen = fsPromises.open;
  after(() => {
    fsPromises.open = realOpen;
    syncBuiltinESMExports();
    for (const l of loops) l.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A loop disk with a GPT and one partition of its own random GUID. */
  const addDisk = () => {
    const loop = createLoopDevice(dir, 16 * MiB, `d${loops.length}`);
    loops.push(loop);
    execFileSync("sfdisk", ["--quiet", loop.device], { input: "label: gpt\n,8MiB\n" });
    execFileSync("partx", ["--update", loop.device]);
    return loop;
  };

  /** Device nodes opened through fs/promises while `fn` runs, of this test's own disks only: node → count. */
  async function opensDuring(fn: () => Promise<unknown>): Promise<Map<string, number>> {
    const own = (p: string) => loops.some((l) => p === l.device || p.startsWith(`${l.device}p`));
    const opened = new Map<string, number>();
    fsPromises.open = ((file: Parameters<typeof realOpen>[0], ...rest: unknown[]) => {
      const p = String(file);
      if (own(p)) opened.set(p, (opened.get(p) ?? 0) + 1);
      return (realOpen as (...a: unknown[]) => ReturnType<typeof realOpen>)(file, ...rest);
    }) as typeof realOpen;
    syncBuiltinESMExports();
    try {
      await fn();
    } finally {
      fsPromises.open = realOpen;
      syncBuiltinESMExports();
    }
    return opened;
  }

  it("the same opens per FormatVolume with 3 disks as with 15, none of a disk the call does not name", async () => {
    for (let i = 0; i < 3; i++) addDisk();
    const target = loops[0];
    execFileSync("mkfs.ext4", ["-q", `${target.device}p1`]);
    const host = new LinuxVolumeHost(createLinuxBlockTools({ stateFile: path.join(dir, "offline-marks.json") }), { defaultFileSystem: "ext4" });
    const volume = createVolumeService({ host, policy: createPathPolicy({ platform: "linux", allowedDirs: [dir], resolve: async (p) => p }), locks: createKeyedMutex() });
    const [volumeId] = (await volume.listVolumesOnDisk({ diskNumber: target.diskNumber, partitionNumber: 0 })).volumeIds;
    assert.ok(volumeId, "the target's partition is a volume");

    // The first FormatVolume after a change of the disk set reads what changed; the second is the steady state.
    const steady = async () => {
      await volume.formatVolume({ volumeId });
      return opensDuring(() => volume.formatVolume({ volumeId }));
    };
    const few = await steady();
    for (let i = 0; i < 12; i++) addDisk();
    const many = await steady();

    const others = [...many.keys()].filter((p) => p !== target.device && !p.startsWith(`${target.device}p`));
    assert.deepEqual(others, [], "no other disk's node is opened");
    const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    assert.ok(total(few) > 0, "the volume's own disk is read off the device (the count sees the reads)");
    assert.equal(total(many), total(few), `opens with 15 disks ${JSON.stringify([...many])} vs 3 disks ${JSON.stringify([...few])}`);
  });
});
