// A call's deadline reaches its tool and its place in the disk's queue, through the daemon on loop
// devices: FormatVolume whose mkfs hangs (SIGTERM ignored) answers DeadlineExceeded and that mkfs is
// gone 1 s later (the client's own deadline answers it, so the answer's timing against the child's
// exit is tested in run-command.test.ts); a FormatVolume queued behind it whose deadline passes while
// it waits never runs a tool; a retry afterwards formats. Tools are the fault stand-ins of fault-tools.ts.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { CANCEL_GRACE_MS } from "../../src/host/exec/run-command.ts";
import { Code } from "../../src/errors.ts";
import { checksBeforeMkfsMs, createFaultRig, codeOf, type Clients, type FaultRig } from "../helpers/fault-rig.ts";
import { processAlive } from "../helpers/process-alive.ts";

const skip = process.getuid?.() !== 0 ? "needs root (loop devices, mount namespace)" : undefined;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("a call's deadline reaches its tool and its wait for the disk", { skip }, () => {
  let rig: FaultRig;
  let c: Clients;
  before(async () => {
    rig = await createFaultRig("call-deadline");
    await rig.start();
    c = await rig.clients();
  });
  after(async () => {
    c?.close();
    await rig?.close();
  });

  async function partitionedVolume(label: string): Promise<string> {
    const loop = rig.newLoop(48, label);
    const { diskIDs } = await c.disk.listDiskIDs({});
    const found = Object.entries(diskIDs as Record<string, { serialNumber: string }>).find(([, ids]) => ids.serialNumber === loop.file);
    assert.ok(found, `disk of ${loop.file}`);
    const diskNumber = Number(found[0]);
    await c.disk.partitionDisk({ diskNumber });
    const { volumeIds } = await c.volume.listVolumesOnDisk({ diskNumber, partitionNumber: 0 });
    return volumeIds[0] as string;
  }
  const mkfsCalls = () => rig.faults.calls().filter((l) => l.startsWith("mkfs.")).length;

  it("a deadline ends the hanging mkfs (SIGTERM ignored): nothing of it is left 1 s after the answer; the retry formats", async () => {
    const volumeId = await partitionedVolume("deadline");
    // the deadline leaves the checks before mkfs 3 × the time they took just now (they slow down with the machine's load)
    const deadlineMs = 1500 + Math.round(3 * (await checksBeforeMkfsMs(rig, c.volume, volumeId)));
    rig.faults.arm("mkfs.ext4", "hang-ignoring-term");
    const pidFile = path.join(rig.dir, "faults", "hang.pid");
    const t0 = Date.now();
    const err = await c.volume.formatVolume({ volumeId }, { timeoutMs: deadlineMs }).then(() => null, (e: unknown) => e);
    const ms = Date.now() - t0;
    assert.equal(codeOf(err), Code.DeadlineExceeded, String(err));
    assert.ok(existsSync(pidFile), "the stand-in mkfs ran");
    const pid = Number(readFileSync(pidFile, "utf8"));
    // the client gives up at its own deadline; the daemon's mkfs gets SIGTERM then, SIGKILL CANCEL_GRACE_MS later
    assert.ok(ms < deadlineMs + 2500, `answered ${ms} ms after the call (deadline ${deadlineMs} ms)`);
    await sleep(1000);
    assert.ok(!processAlive(pid), `mkfs ${pid} is gone 1 s after the answer (SIGKILL ${CANCEL_GRACE_MS} ms after SIGTERM)`);
    rig.faults.reset();
    await c.volume.formatVolume({ volumeId });
    assert.equal((await c.volume.isVolumeFormatted({ volumeId })).formatted, true);
  });

  it("a FormatVolume whose deadline passes while it waits for the disk never starts mkfs", async () => {
    const volumeId = await partitionedVolume("queued");
    const checksMs = await checksBeforeMkfsMs(rig, c.volume, volumeId);
    rig.faults.arm("mkfs.ext4", "hang");
    const before = mkfsCalls();
    const first = c.volume.formatVolume({ volumeId }, { timeoutMs: 5000 + Math.round(3 * checksMs) }).then(() => null, (e: unknown) => e);
    const deadline = Date.now() + 30_000;
    while (mkfsCalls() === before && Date.now() < deadline) await sleep(20);
    assert.equal(mkfsCalls(), before + 1, "the first call's mkfs runs (and hangs)");
    const t0 = Date.now();
    const queued = await c.volume.formatVolume({ volumeId }, { timeoutMs: 1000 }).then(() => null, (e: unknown) => e);
    const ms = Date.now() - t0;
    assert.equal(codeOf(queued), Code.DeadlineExceeded, String(queued));
    assert.ok(ms < 1000 + 2500, `the queued call answered ${ms} ms after it was made`);
    assert.equal(codeOf(await first), Code.DeadlineExceeded);
    await sleep(500);
    assert.equal(mkfsCalls(), before + 1, "no second mkfs: the queued call started no tool, before or after its answer");
    rig.faults.reset();
    await c.volume.formatVolume({ volumeId });
    assert.equal(mkfsCalls(), before + 2, "the retry ran mkfs once");
  });
});
