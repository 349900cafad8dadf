// A graceful stop ends the daemon's host commands; a crash does not. SIGTERM to a daemon whose mkfs
// hangs with SIGTERM ignored: stopping cancels the calls, so the call's mkfs gets SIGTERM, then SIGKILL
// after CANCEL_GRACE_MS (the daemon's own sweep of what is left would wait KILL_GRACE_MS); the waiting
// call is answered, the daemon exits 0 and leaves no child behind. (kill -9 of the daemon leaves a running mkfs
// to finish on its own: the kill-during cases of stage-kill-points.test.ts.)
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { CANCEL_GRACE_MS, KILL_GRACE_MS } from "../../src/host/exec/run-command.ts";
import { createFaultRig, codeOf, driverStage, type FaultRig } from "../helpers/fault-rig.ts";
import { Code } from "../../src/errors.ts";
import { processAlive } from "../helpers/process-alive.ts";

const skip = process.getuid?.() !== 0 ? "needs root (loop devices, mount namespace)" : undefined;

const alive = processAlive;

describe("graceful stop with a host command running", { skip }, () => {
  let rig: FaultRig;
  before(async () => {
    rig = await createFaultRig("graceful-stop");
    await rig.start();
  });
  after(() => rig?.close());

  it(`SIGTERM ends a hanging mkfs that ignores SIGTERM after ${CANCEL_GRACE_MS} ms, then the daemon exits 0`, async () => {
    const loop = rig.newLoop(48, "stop");
    const target = rig.target(`stop-${loop.name}`);
    rig.faults.arm("mkfs.ext4", "hang-ignoring-term");
    const c = await rig.clients();
    const call = driverStage(c, loop.file, target).then(() => null, (e) => e);
    const pidFile = path.join(rig.dir, "faults", "hang.pid");
    const deadline = Date.now() + 60_000;
    while (!existsSync(pidFile) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const pid = Number(readFileSync(pidFile, "utf8"));
    assert.ok(alive(pid), "mkfs hangs");
    const daemon = rig.daemon();
    const t0 = Date.now();
    const exitCode = await daemon.stop();
    const ms = Date.now() - t0;
    assert.equal(exitCode, 0);
    assert.ok(!alive(pid), "the hanging mkfs is gone once the daemon has exited");
    assert.ok(ms >= CANCEL_GRACE_MS - 100 && ms < KILL_GRACE_MS + 15_000, `stopped in ${ms} ms`);
    assert.match(daemon.stderr(), /Ended the running host commands/);
    const answer = await call;
    assert.ok(answer !== null, "the waiting call failed");
    assert.notEqual(codeOf(answer), Code.Internal);
    await rig.start(); // close() stops a running daemon
  });
});
