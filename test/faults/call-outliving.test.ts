// Through the daemon: a tool that outlives its call. FormatVolume's mkfs (a fault stand-in) ignores
// SIGTERM and then sits in the kernel on a held FUSE lookup (slow-fuse.ts), where SIGKILL cannot end
// it until the lookup is answered — what a tool in uninterruptible sleep on a dead device does. The
// call (its deadline 1.5 s + 3 × the same run's time for the checks before mkfs) is answered
// (DeadlineExceeded) without it; the disk stays locked while it lives: a second call
// on the disk is refused with Aborted naming the work (which call, since when, the tool's pid), and
// no second tool runs. Once the tool has exited, the disk is free and a retry formats.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { Code } from "../../src/errors.ts";
import { checksBeforeMkfsMs, createFaultRig, codeOf, type Clients, type FaultRig } from "../helpers/fault-rig.ts";
import { processAlive } from "../helpers/process-alive.ts";
import { startSlowFuse, slowFuseSkipReason, type SlowFuse } from "../helpers/slow-fuse.ts";

const skip = slowFuseSkipReason();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const processState = (pid: number) => {
  try {
    return /^State:\s+(\S)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? "?";
  } catch {
    return "gone";
  }
};

describe("a tool that outlives its answered call keeps its disk locked", { skip }, () => {
  let rig: FaultRig;
  let c: Clients;
  let fuse: SlowFuse | undefined;
  let pid = 0;
  before(async () => {
    rig = await createFaultRig("call-outliving");
    await rig.start();
    c = await rig.clients();
    fuse = await startSlowFuse(path.join(rig.dir, "stuck"), { wrapper: rig.ns.enter, mountinfo: `/proc/${rig.ns.enter[2]}/mountinfo` });
  });
  after(async () => {
    fuse?.release();
    c?.close();
    if (pid && processAlive(pid)) await sleep(500);
    fuse?.remove();
    await rig?.close();
  });

  it("Aborted, naming the answered call, since when and the pid; no second mkfs; free once it exited", async () => {
    const loop = rig.newLoop(48, "outliving");
    const { diskIDs } = await c.disk.listDiskIDs({});
    const diskNumber = Number(Object.entries(diskIDs as Record<string, { serialNumber: string }>).find(([, ids]) => ids.serialNumber === loop.file)![0]);
    await c.disk.partitionDisk({ diskNumber });
    const volumeId = (await c.volume.listVolumesOnDisk({ diskNumber, partitionNumber: 0 })).volumeIds[0] as string;
    const mkfsCalls = () => rig.faults.calls().filter((l) => l.startsWith("mkfs.")).length;

    // the deadline leaves the checks before mkfs 3 × the time they took just now (they slow down with the machine's load)
    const deadlineMs = 1500 + Math.round(3 * (await checksBeforeMkfsMs(rig, c.volume, volumeId)));
    const formatted = mkfsCalls();
    fuse!.hold();
    rig.faults.arm("mkfs.ext4", "hang-in-kernel", { device: fuse!.heldPath });
    const pidFile = path.join(rig.dir, "faults", "hang.pid");
    const first = await c.volume.formatVolume({ volumeId }, { timeoutMs: deadlineMs }).then(() => null, (e: unknown) => e);
    assert.equal(codeOf(first), Code.DeadlineExceeded, String(first));
    assert.ok(existsSync(pidFile), "the stand-in mkfs ran");
    pid = Number(readFileSync(pidFile, "utf8"));
    const calls = mkfsCalls();

    // The daemon sends SIGTERM at the deadline and SIGKILL 0.5 s later, answers 1 s after that; the tool stays (D state).
    await sleep(2500);
    assert.ok(processAlive(pid), `mkfs ${pid} is still there (state ${processState(pid)})`);
    assert.equal(processState(pid), "D", "in uninterruptible sleep, SIGKILL pending");

    for (const [method, call] of [
      ["FormatVolume", () => c.volume.formatVolume({ volumeId }, { timeoutMs: 10_000 })],
      ["ResizeVolume", () => c.volume.resizeVolume({ volumeId, sizeBytes: 0n }, { timeoutMs: 10_000 })],
    ] as const) {
      const t0 = Date.now();
      const refused = await call().then(() => null, (e: unknown) => e);
      assert.equal(codeOf(refused), Code.Aborted, String(refused));
      assert.ok(Date.now() - t0 < 5000, "refused at once, not queued behind the work");
      const msg = (refused as Error).message;
      // the disk's node-wide lock (one file per stripe of disk numbers): what holds it, since when, answered when
      assert.match(msg, new RegExp(`cannot ${method} of volume .*: an operation is pending on disk\\.\\d+\\.lock: FormatVolume of volume .* \\(started \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\) was answered [\\d.]+ s ago`), msg);
      assert.match(msg, new RegExp(`but mkfs\\.ext4 -q /dev/\\S+ \\(pid ${pid}\\) is still running; nothing was done`), msg);
    }
    assert.equal(mkfsCalls(), calls, "no second tool ran on the disk");

    // The lookup is answered: the tool dies of its pending SIGKILL, the disk is free, a retry formats.
    fuse!.release();
    for (const t0 = Date.now(); processAlive(pid) && Date.now() - t0 < 10_000; ) await sleep(20);
    assert.equal(processAlive(pid), false, "the tool exited once released");
    rig.faults.reset();
    let retry: unknown = "not tried";
    for (const t0 = Date.now(); Date.now() - t0 < 10_000; await sleep(100)) {
      retry = await c.volume.formatVolume({ volumeId }).then(() => null, (e: unknown) => e);
      if (retry === null || codeOf(retry) !== Code.Aborted) break;
    }
    assert.equal(retry, null, String(retry));
    assert.equal(mkfsCalls(), calls + 1, "the retry ran mkfs once");
    assert.equal(calls, formatted + 1, "the cut call ran mkfs once");
    assert.equal((await c.volume.isVolumeFormatted({ volumeId })).formatted, true);
  });
});
