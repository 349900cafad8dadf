// kill -9 of the daemon at every host step of the driver's stage flow, and faults injected into
// those steps (a tool failing, hanging past -host-command-timeout, finishing and then hanging, the
// device detached under it): after the restart, the driver's retry of the same call sequence must
// converge — the volume mounted at the target, one partition, no second format (the filesystem
// UUID and a file written after the first format survive) — and a neighbouring disk keeps every
// byte. Real daemon, real tools (stand-ins only decide when to fail or kill: test/helpers/fault-tools.ts),
// loop devices only. docs/reliability.md reports these figures.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { KILL_GRACE_MS } from "../../src/host/exec/run-command.ts";
import { createFaultRig, createNeighbour, faultRigSkipReason, type FaultCase as Case, HANG_TIMEOUT_S, codeOf, driverStage, fsUuid, kernelPartitions, writeMarkerOffline, type FaultRig, type Neighbour } from "../helpers/fault-rig.ts";
import type { LoopDevice } from "../helpers/loop-device.ts";

const skip = faultRigSkipReason();
const Code = { DeadlineExceeded: 4, NotFound: 5, FailedPrecondition: 9, Unavailable: 14 };


/** sfdisk argv: the label step ends with the device (after its flags), the append step has --append. */
const LABEL = "--no-tell-kernel /dev/loop[0-9]+$";
const APPEND = "--append";

// A kill before step N leaves what a kill after step N-1 leaves (every step is one tool run), so
// "after" points plus "during" for the long steps cover every state a crash can leave; the
// first step's "before" leaves nothing at all.
const killCases: Case[] = [
  { name: "kill after writing the partition table (sfdisk label)", tool: "sfdisk", action: "kill-after", pattern: LABEL },
  { name: "kill after adding the partition, before the kernel is told (sfdisk --append)", tool: "sfdisk", action: "kill-after", pattern: APPEND },
  { name: "kill after the kernel is told (partx --update)", tool: "partx", action: "kill-after" },
  { name: "kill during mkfs (mkfs finishes as an orphan)", tool: "mkfs.ext4", action: "kill-during" },
  { name: "kill after mkfs", tool: "mkfs.ext4", action: "kill-after" },
];

const faultCases: Case[] = [
  { name: "sfdisk --append exits non-zero", tool: "sfdisk", action: "fail", pattern: APPEND, code: Code.FailedPrecondition },
  { name: "partx exits non-zero", tool: "partx", action: "fail", code: Code.FailedPrecondition },
  { name: "mkfs exits non-zero", tool: "mkfs.ext4", action: "fail", code: Code.FailedPrecondition },
  { name: "mkfs finishes, then hangs (killed by the timeout)", tool: "mkfs.ext4", action: "hang-after", code: Code.DeadlineExceeded },
];

export const rows: string[] = [];

describe("stage flow: kill points and tool faults", { skip: skip ?? false }, () => {
  let rig: FaultRig;
  let neighbour: Neighbour;
  before(async () => {
    rig = await createFaultRig("stage-faults");
    // A disk the calls do not name: a filesystem with data, checked byte for byte after every case.
    neighbour = createNeighbour(rig);
    await rig.start();
  });
  after(async () => {
    await rig?.close();
    if (rows.length) process.stdout.write(`# stage flow figures\n${rows.map((r) => `# ${r}`).join("\n")}\n`);
  });

  /** Runs the stage sequence until it succeeds (at most 3 attempts); returns how many it took. */
  async function converge(loop: LoopDevice, target: string): Promise<number> {
    const c = await rig.clients();
    let last: unknown;
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        await driverStage(c, loop.file, target);
        return attempt;
      } catch (e) {
        last = e;
      }
    }
    throw new Error(`the retry did not converge in 3 attempts: ${String(last)}`);
  }

  function assertStaged(loop: LoopDevice, target: string, uuid: string, marker: string | null): void {
    const part = `${loop.device}p1`;
    const at = rig.mounts().filter((m) => m.mountPoint === target);
    assert.equal(at.length, 1, `one mount at the target, found ${JSON.stringify(at)}`);
    assert.equal(at[0].source, part);
    assert.deepEqual(kernelPartitions(loop), [`${loop.name}p1`], "exactly one partition");
    if (uuid) assert.equal(fsUuid(part), uuid, "no second format: the filesystem UUID is the first format's");
    if (marker !== null) assert.equal(readFileSync(rig.inNs(`${target}/marker.txt`), "utf8"), marker, "the file written after the first format survives");
    neighbour.assertIntact();
  }

  for (const k of killCases) {
    it(k.name, async () => {
      const loop = rig.newLoop(48, "kill");
      const target = rig.target(`kill-${loop.name}`);
      rig.faults.arm(k.tool, k.action, { pattern: k.pattern });
      const c = await rig.clients();
      const first = await driverStage(c, loop.file, target).then(() => null, (e) => e);
      assert.ok(first !== null, "the first attempt cannot succeed: the daemon was killed");
      assert.ok(rig.faults.fired(k.tool), "the fault fired");
      if (k.action !== "kill-before") await rig.faults.waitDone();
      const restartMs = await rig.restartAfterKill();
      // What the first attempt left: a filesystem (then a file is written into it, as a workload would after staging).
      const part = `${loop.device}p1`;
      const uuid = existsSync(part) ? fsUuid(part) : "";
      let marker: string | null = null;
      if (uuid) {
        marker = `written after the first format (${k.name})`;
        const mounted = rig.mounts().some((m) => m.mountPoint === target);
        if (mounted) writeFileSync(rig.inNs(`${target}/marker.txt`), marker);
        else writeMarkerOffline(part, marker, rig.dir);
      }
      const attempts = await converge(loop, target);
      assertStaged(loop, target, uuid, marker);
      rows.push(`${k.tool} ${k.action}${k.pattern ? ` /${k.pattern}/` : ""} | first answer ${codeOf(first) ?? "?"} | restart ${restartMs} ms | retries to converge ${attempts} | fs before retry ${uuid ? "yes" : "no"} | UUID kept ${uuid ? "yes" : "n/a"} | file kept ${marker ? "yes" : "n/a"} | neighbour intact yes`);
    });
  }

  // MountVolume is mount(2) through a held directory handle (no process to fault): the crash that
  // matters after it is the one that loses the answer — the volume is mounted, the driver saw an error.
  it("kill right after the mount (the answer lost)", async () => {
    const loop = rig.newLoop(48, "lost");
    const target = rig.target(`lost-${loop.name}`);
    await driverStage(await rig.clients(), loop.file, target);
    rig.kill9();
    const restartMs = await rig.restartAfterKill();
    const part = `${loop.device}p1`;
    const uuid = fsUuid(part);
    const marker = "written after the first stage (the answer lost)";
    writeFileSync(rig.inNs(`${target}/marker.txt`), marker);
    const attempts = await converge(loop, target);
    assertStaged(loop, target, uuid, marker);
    rows.push(`mount(2) answer lost (kill -9 after the mount) | first answer OK, lost | restart ${restartMs} ms | retries to converge ${attempts} | fs before retry yes | UUID kept yes | file kept yes | neighbour intact yes`);
  });

  for (const f of faultCases) {
    it(f.name, async () => {
      const loop = rig.newLoop(48, "fault");
      const target = rig.target(`fault-${loop.name}`);
      const hangs = f.action.startsWith("hang");
      if (hangs) {
        // The steps before the hanging one on the main daemon; the hanging call on the daemon with the short bound.
        const main = await rig.clients();
        await main.disk.partitionDisk({ diskNumber: loop.diskNumber });
        if (f.tool === "mount") await main.volume.formatVolume({ volumeId: (await main.volume.listVolumesOnDisk({ diskNumber: loop.diskNumber, partitionNumber: 0 })).volumeIds[0] });
      }
      rig.faults.arm(f.tool, f.action, { pattern: f.pattern });
      const c = hangs ? await rig.hangClients() : await rig.clients();
      const t0 = Date.now();
      const first = await driverStage(c, loop.file, target).then(() => null, (e) => e);
      const ms = Date.now() - t0;
      assert.ok(rig.faults.fired(f.tool), "the fault fired");
      assert.equal(codeOf(first), f.code, `first answer: ${String(first)}`);
      // The hang (sleep) ends on the timeout's SIGTERM; a tool ignoring it would get SIGKILL KILL_GRACE_MS later.
      if (hangs) assert.ok(ms < HANG_TIMEOUT_S * 1000 + KILL_GRACE_MS + 10_000, `the timeout ended the hang (${ms} ms)`);
      assert.ok(!rig.mounts().some((m) => m.mountPoint === target) || f.tool !== "mount", "a failed mount leaves nothing mounted");
      const part = `${loop.device}p1`;
      const uuid = existsSync(part) ? fsUuid(part) : "";
      let marker: string | null = null;
      if (uuid) {
        marker = `written after the first format (${f.name})`;
        writeMarkerOffline(part, marker, rig.dir);
      }
      const attempts = await converge(loop, target);
      assertStaged(loop, target, uuid, marker);
      rows.push(`${f.tool} ${f.action} | first answer ${codeOf(first)} after ${ms} ms | retries to converge ${attempts} | UUID kept ${uuid ? "yes" : "n/a"} | file kept ${marker ? "yes" : "n/a"} | neighbour intact yes`);
    });
  }

  it("the device disappears during mkfs (loop detached): a coded answer, nothing else touched, the daemon keeps serving", async () => {
    const loop = rig.newLoop(48, "gone");
    const target = rig.target(`gone-${loop.name}`);
    rig.faults.arm("mkfs.ext4", "detach", { device: loop.device });
    const c = await rig.clients();
    const first = await driverStage(c, loop.file, target).then(() => null, (e) => e);
    assert.ok(rig.faults.fired("mkfs.ext4"));
    assert.ok([Code.FailedPrecondition, Code.NotFound].includes(codeOf(first)!), `first answer: ${String(first)}`);
    // The retry finds no disk with this serial; the disk number answers NotFound.
    await assert.rejects(driverStage(c, loop.file, target), /no disk with serial/);
    await assert.rejects(c.disk.getDiskStats({ diskNumber: loop.diskNumber }), (e) => codeOf(e) === Code.NotFound || codeOf(e) === undefined);
    neighbour.assertIntact();
    rows.push(`mkfs.ext4 detach | first answer ${codeOf(first)} | retry: disk gone (no serial) | neighbour intact yes`);
  });
});
