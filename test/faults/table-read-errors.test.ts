// An unreadable partition table is an error, never "not found", and a mounted volume stays usable.
// The disk is a loop device over an image on slow-fuse.ts with direct_io (every read of the loop
// device reaches the FUSE daemon), whose reads fail with EIO in chosen byte ranges. One GPT
// partition, formatted and mounted through the daemon; then:
// - primary and backup GPT both failing, in the daemon that read the table before: WriteVolumeCache
//   by the volume's PARTUUID id answers OK (the table last read off the same medium);
// - the same in a restarted daemon (no table kept): IsVolumeFormatted and ListVolumesOnDisk answer
//   Unavailable naming the device and EIO (before: NotFound, and OK with a dev- id), and the daemon logs it;
// - the primary GPT alone failing: WriteVolumeCache and UnmountVolume answer OK from the backup GPT
//   (before: NotFound, the volume stayed mounted);
// - the unmounted partition's superblock failing: IsVolumeFormatted answers Unavailable (libblkid's
//   read error; before: FailedPrecondition "libblkid failed to read it").
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { Code } from "../../src/errors.ts";
import { createFaultRig, codeOf, type Clients, type FaultRig } from "../helpers/fault-rig.ts";
import { startSlowFuse, slowFuseSkipReason, type SlowFuse } from "../helpers/slow-fuse.ts";

const skip = slowFuseSkipReason();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const IMAGE_BYTES = 64 * 1024 * 1024;
/** LBA 0–33 (protective MBR, primary GPT header and entries) and the last 33 LBAs (backup entries and header). */
const PRIMARY = { kind: "eio" as const, start: 0, end: 34 * 512 };
const BACKUP = { kind: "eio" as const, start: IMAGE_BYTES - 33 * 512, end: IMAGE_BYTES };

describe("a partition table that fails to read: an error, never NotFound; a mounted volume stays usable", { skip }, () => {
  let rig: FaultRig;
  let c: Clients;
  let fuse: SlowFuse | undefined;
  let loop = "";
  before(async () => {
    rig = await createFaultRig("table-eio");
    await rig.start();
    c = await rig.clients();
    fuse = await startSlowFuse(path.join(rig.dir, "eio"), { directIo: true, wrapper: rig.ns.enter, mountinfo: `/proc/${rig.ns.enter[2]}/mountinfo` });
    const image = path.join(fuse.source, "image");
    writeFileSync(image, "");
    execFileSync("truncate", ["-s", String(IMAGE_BYTES), image]);
    execFileSync("sfdisk", ["-q", image], { input: "label: gpt\n,,L\n", stdio: ["pipe", "ignore", "pipe"] });
    loop = rig.exec("losetup", ["--find", "--show", "--partscan", path.join(fuse.mountpoint, "image")]).trim();
    if (!existsSync(`${loop}p1`)) rig.exec("partx", ["-a", loop]);
    for (const t0 = Date.now(); !existsSync(`${loop}p1`) && Date.now() - t0 < 10_000; ) await sleep(20);
  });
  after(async () => {
    c?.close();
    fuse?.faults([]);
    if (loop) {
      for (const m of rig.mounts().filter((x) => x.source.startsWith(loop))) {
        try {
          rig.exec("umount", ["-l", m.mountPoint]);
        } catch {
          // gone meanwhile
        }
      }
      try {
        rig.exec("losetup", ["--detach", loop]);
      } catch {
        // already detached
      }
    }
    fuse?.remove();
    await rig?.close();
  });

  /** Sets the faults and drops the loop device's cached blocks, so the next read reaches the image. */
  const fail = (ranges: (typeof PRIMARY)[]) => {
    fuse!.faults(ranges);
    rig.exec("blockdev", ["--flushbufs", loop]);
  };
  /** Whether reading LBA 1 (the primary GPT header) of the loop device fails now. */
  const headerFails = () => {
    try {
      rig.exec("dd", [`if=${loop}`, "of=/dev/null", "bs=512", "skip=1", "count=1", "iflag=direct", "status=none"]);
      return false;
    } catch {
      return true;
    }
  };

  it("EIO on the GPT: flush from the kept table; Unavailable naming the device without one; flush and unmount from the backup GPT", async () => {
    const { diskIDs } = await c.disk.listDiskIDs({});
    const found = Object.entries(diskIDs as Record<string, { serialNumber: string }>).find(([, ids]) => ids.serialNumber === path.join(fuse!.mountpoint, "image"));
    assert.ok(found, `disk of ${loop}`);
    const diskNumber = Number(found[0]);
    const volumeId = (await c.volume.listVolumesOnDisk({ diskNumber, partitionNumber: 0 })).volumeIds[0] as string;
    assert.match(volumeId, /^\\\\\?\\Volume\{[0-9a-f]{8}-[0-9a-f]{4}-/, "a PARTUUID id");
    await c.volume.formatVolume({ volumeId }, { timeoutMs: 120_000 });
    const target = rig.target("eio-target");
    await c.volume.mountVolume({ volumeId, targetPath: target });
    writeFileSync(rig.inNs(path.join(target, "data")), "written before the fault\n");
    const mounted = () => rig.mounts().some((m) => m.mountPoint === target);
    assert.ok(mounted());

    // Both tables unreadable, in the daemon that read them before: the table it last read off this medium.
    fail([PRIMARY, BACKUP]);
    assert.ok(headerFails(), "the fault is in place: LBA 1 reads EIO");
    await c.volume.writeVolumeCache({ volumeId });

    // Restarted: nothing kept, nothing readable. Unavailable naming the device and the errno, never NotFound.
    await rig.restart();
    c.close();
    c = await rig.clients();
    fail([PRIMARY, BACKUP]);
    const formatted = await c.volume.isVolumeFormatted({ volumeId }).then(() => null, (e: unknown) => e);
    assert.equal(codeOf(formatted), Code.Unavailable, String(formatted));
    assert.match(String(formatted), new RegExp(`${path.basename(loop)}\\b.*EIO`), "names the device and the errno");
    const listed = await c.volume.listVolumesOnDisk({ diskNumber, partitionNumber: 0 }).then((r: unknown) => r, (e: unknown) => e);
    assert.equal(codeOf(listed), Code.Unavailable, `ListVolumesOnDisk: ${JSON.stringify(listed, (_, v) => (typeof v === "bigint" ? String(v) : v))}`);
    assert.match(rig.daemon().stderr(), new RegExp(`cannot read the partition table of ${loop}: bytes \\d+–\\d+ fail with EIO`), "logged");
    assert.ok(mounted(), "nothing was changed");

    // The backup GPT reads: the volume resolves from it (as the kernel's parser does); flush and unmount work.
    fail([PRIMARY]);
    assert.ok(headerFails());
    await c.volume.writeVolumeCache({ volumeId });
    await c.volume.unmountVolume({ volumeId, targetPath: target });
    assert.equal(mounted(), false, "unmounted");

    // The superblock area of the unmounted partition (it starts at 1 MiB) unreadable: the probe's read
    // error is the answer (Unavailable naming the device), never "not formatted" or a refusal.
    fuse!.faults([{ kind: "eio", start: 1024 * 1024, end: 2 * 1024 * 1024 }]);
    rig.exec("blockdev", ["--flushbufs", `${loop}p1`]);
    const probed = await c.volume.isVolumeFormatted({ volumeId }).then((r: unknown) => r, (e: unknown) => e);
    assert.equal(codeOf(probed), Code.Unavailable, `IsVolumeFormatted: ${JSON.stringify(probed)}`);
    assert.match(String(probed), new RegExp(`${path.basename(loop)}p1`));
    fuse!.faults([]);
  });
});
