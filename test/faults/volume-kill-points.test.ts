// kill -9 and tool faults in the steps after staging: ResizeVolume
// (sfdisk -N, partx, resize2fs on the mounted ext4) and SetDiskState (blockdev --setro/--setrw and
// the offline mark). After the restart the driver's retry must converge: unmounted (or grown, or
// offline/online) as asked, the file written before still there, the filesystem UUID unchanged, a
// neighbouring disk byte-for-byte intact. docs/reliability.md reports these figures.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createFaultRig, createNeighbour, faultRigSkipReason, type FaultCase as Case, codeOf, driverStage, fsUuid, MiB, type Clients, type FaultRig, type Neighbour } from "../helpers/fault-rig.ts";
import type { LoopDevice } from "../helpers/loop-device.ts";

const skip = faultRigSkipReason();
const Code = { DeadlineExceeded: 4, NotFound: 5, FailedPrecondition: 9 };
const rows: string[] = [];


/** ext4 size from its superblock, in bytes. */
function ext4Bytes(dev: string): number {
  const out = execFileSync("dumpe2fs", ["-h", dev], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  return Number(/^Block count:\s+(\d+)/m.exec(out)![1]) * Number(/^Block size:\s+(\d+)/m.exec(out)![1]);
}
const partitionBytes = (loop: LoopDevice) => Number(readFileSync(`/sys/block/${loop.name}/${loop.name}p1/size`, "utf8").trim()) * 512;

describe("unstage, resize and disk state: kill points and tool faults", { skip: skip ?? false }, () => {
  let rig: FaultRig;
  let neighbour: Neighbour;
  let vol: LoopDevice;
  let volumeId: string;
  let target: string;
  let uuid: string;
  const marker = "written while staged";
  before(async () => {
    rig = await createFaultRig("volume-faults");
    neighbour = createNeighbour(rig);
    await rig.start();
    vol = rig.newLoop(48, "vol");
    target = rig.target("staged");
    volumeId = await driverStage(await rig.clients(), vol.file, target);
    uuid = fsUuid(`${vol.device}p1`);
    writeFileSync(rig.inNs(`${target}/marker.txt`), marker);
  });
  after(async () => {
    await rig?.close();
    if (rows.length) process.stdout.write(`# unstage/resize/disk-state figures\n${rows.map((r) => `# ${r}`).join("\n")}\n`);
  });

  const mounted = () => rig.mounts().some((m) => m.mountPoint === target);
  function assertIntact(): void {
    assert.equal(fsUuid(`${vol.device}p1`), uuid, "same filesystem (no format)");
    neighbour.assertIntact("neighbour intact");
  }
  /** First attempt with the fault armed; returns its error (null: it succeeded) and whether the daemon was restarted. */
  async function firstAttempt(k: Case, call: (c: Clients) => Promise<unknown>): Promise<{ first: unknown; restartMs: number | null }> {
    rig.faults.arm(k.tool, k.action, { pattern: k.pattern });
    const first = await call(k.action.startsWith("hang") ? await rig.hangClients() : await rig.clients()).then(() => null, (e) => e);
    assert.ok(rig.faults.fired(k.tool), `the fault fired (first answer: ${String(first)}; tool calls: ${rig.faults.calls().slice(-6).join(" | ")})`);
    if (!k.action.startsWith("kill")) return { first, restartMs: null };
    if (k.action !== "kill-before") await rig.faults.waitDone();
    return { first, restartMs: await rig.restartAfterKill() };
  }

  // UnmountVolume runs no tool any more: its flush is syncfs(2) and its unmount umount2(2), both in
  // process (test/redteam/flush-truth.test.ts covers a failing flush), so no stand-in can fail,
  // hang or kill at its steps.

  const resizeCases: Case[] = [
    { name: "kill after the partition entry grew, before the kernel is told (sfdisk -N)", tool: "sfdisk", action: "kill-after", pattern: "-N 1" },
    { name: "kill after the kernel is told (partx --nr)", tool: "partx", action: "kill-after", pattern: "--nr" },
    { name: "kill during e2fsck (it finishes as an orphan)", tool: "e2fsck", action: "kill-during" },
    { name: "kill during resize2fs (it finishes as an orphan)", tool: "resize2fs", action: "kill-during" },
    { name: "resize2fs exits non-zero", tool: "resize2fs", action: "fail", code: Code.FailedPrecondition },
  ];
  let size = 48 * MiB;
  for (const k of resizeCases) {
    it(`ResizeVolume (offline): ${k.name}; the retry grows partition and filesystem`, async () => {
      size += 128 * MiB;
      vol.resize(size);
      const c0 = await rig.clients();
      await c0.disk.rescan({});
      // Offline growth (a mounted ext4 needs CAP_SYS_RESOURCE, which a container's root may lack).
      if (mounted()) await c0.volume.unmountVolume({ volumeId, targetPath: target });
      const { first, restartMs } = await firstAttempt(k, (c) => c.volume.resizeVolume({ volumeId, sizeBytes: 0n }));
      if (k.code !== undefined) assert.equal(codeOf(first), k.code, String(first));
      const c = await rig.clients();
      await c.volume.resizeVolume({ volumeId, sizeBytes: 0n });
      const part = partitionBytes(vol);
      assert.ok(part > size - 2 * MiB, `partition grown to the end: ${part} of ${size}`);
      const fsBytes = ext4Bytes(`${vol.device}p1`);
      assert.ok(part - fsBytes < 4 * MiB, `filesystem grown to the partition: ${fsBytes} of ${part}`);
      await driverStage(c, vol.file, target);
      assert.equal(readFileSync(rig.inNs(`${target}/marker.txt`), "utf8"), marker);
      assertIntact();
      rows.push(`ResizeVolume (offline) ${k.tool} ${k.action} | first answer ${codeOf(first) ?? "OK"} | restart ${restartMs ?? "-"} ms | retry OK: partition ${(part / MiB).toFixed(1)} MiB, filesystem ${(fsBytes / MiB).toFixed(1)} MiB | file kept, UUID kept, neighbour intact`);
    });
  }

  const stateCases: (Case & { online: boolean })[] = [
    { name: "going offline: kill after the offline mark is written, before the read-only flag is set", tool: "blockdev", action: "kill-before", pattern: "--setro", online: false },
    { name: "going offline: kill after the read-only flag is set", tool: "blockdev", action: "kill-after", pattern: "--setro", online: false },
    { name: "going online: kill before the read-only flag is cleared", tool: "blockdev", action: "kill-before", pattern: "--setrw", online: true },
    { name: "going online: kill after the read-only flag is cleared, before the mark is removed", tool: "blockdev", action: "kill-after", pattern: "--setrw", online: true },
  ];
  for (const k of stateCases) {
    it(`SetDiskState: ${k.name}; the retry converges`, async () => {
      const d = rig.newLoop(16, "state");
      const c0 = await rig.clients();
      if (k.online) await c0.disk.setDiskState({ diskNumber: d.diskNumber, isOnline: false });
      const { first, restartMs } = await firstAttempt(k, (c) => c.disk.setDiskState({ diskNumber: d.diskNumber, isOnline: k.online }));
      const c = await rig.clients();
      await c.disk.setDiskState({ diskNumber: d.diskNumber, isOnline: k.online });
      assert.equal((await c.disk.getDiskState({ diskNumber: d.diskNumber })).isOnline, k.online);
      const ro = () => readFileSync(`/sys/block/${d.name}/ro`, "utf8").trim();
      assert.equal(ro(), k.online ? "0" : "1");
      // and back: the other direction restores the read-only flag as it was (writable)
      await c.disk.setDiskState({ diskNumber: d.diskNumber, isOnline: true });
      assert.equal(ro(), "0", "online again: writable again");
      neighbour.assertIntact();
      rows.push(`SetDiskState(${k.online ? "online" : "offline"}) blockdev ${k.action} ${k.pattern} | first answer ${codeOf(first) ?? "OK"} | restart ${restartMs} ms | retry OK, state ${k.online ? "online" : "offline"}, then online and writable`);
    });
  }
});
