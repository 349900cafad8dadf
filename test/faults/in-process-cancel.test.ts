// The in-process API (csi-proxy-ts/in-process) passes the caller's signal to the service as the
// daemon's adapters do: a FormatVolume cancelled through its AbortSignal (typed API) or call.cancel()
// (grpc-style client) while its mkfs hangs with SIGTERM ignored answers Canceled only after
// that mkfs has exited (SIGTERM, SIGKILL CANCEL_GRACE_MS later). The driver runs in a child process
// in the fault rig's mount namespace (in-process-format-child.ts), on a loop device.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { Code } from "../../src/errors.ts";
import { CANCEL_EXIT_WAIT_MS, CANCEL_GRACE_MS } from "../../src/host/exec/run-command.ts";
import { createFaultRig, type FaultRig } from "../helpers/fault-rig.ts";
import { processAlive } from "../helpers/process-alive.ts";

const skip = process.getuid?.() !== 0 ? "needs root (loop devices, mount namespace)" : undefined;
const child = fileURLToPath(new URL("../helpers/in-process-format-child.ts", import.meta.url));

describe("in-process: the caller's signal reaches the tool", { skip }, () => {
  let rig: FaultRig;
  const pids: number[] = [];
  before(async () => {
    rig = await createFaultRig("in-process-cancel");
  });
  after(async () => {
    for (const pid of pids) if (processAlive(pid)) process.kill(pid, "SIGKILL");
    await rig?.close();
  });

  for (const client of ["typed", "grpc"] as const) {
    it(`${client === "typed" ? "typed API, AbortSignal" : "grpc-style client, cancel()"}: FormatVolume answers Canceled once its hanging mkfs has exited`, async () => {
      const loop = rig.newLoop(48, `inproc-${client}`);
      const pidFile = path.join(rig.dir, "faults", "hang.pid");
      rig.faults.reset();
      execFileSync("rm", ["-f", pidFile]);
      rig.faults.arm("mkfs.ext4", "hang-ignoring-term");
      const args = { kubelet: rig.kubelet, stateDir: path.join(rig.dir, `state-${client}`), socketDir: path.join(rig.dir, `sock-${client}`), loopFile: loop.file, pidFile, abortMs: 300, client };
      const out = execFileSync(rig.ns.enter[0], [...rig.ns.enter.slice(1), process.execPath, child, JSON.stringify(args)], { encoding: "utf8", timeout: 60_000 });
      const r = JSON.parse(out.trim().split("\n").pop()!) as { code?: number; message?: string; ms: number; pid: number; aliveAtAnswer: boolean | null; aliveAfter1s: boolean | null };
      if (r.pid) pids.push(r.pid);
      assert.equal(r.code, Code.Canceled, JSON.stringify(r));
      assert.match(r.message ?? "", /cancel/i);
      assert.ok(r.pid > 0, `the stand-in mkfs ran: ${JSON.stringify(r)}`);
      assert.equal(r.aliveAtAnswer, false, `mkfs ${r.pid} had exited when the call answered: ${JSON.stringify(r)}`);
      assert.equal(r.aliveAfter1s, false);
      // the answer came after the kill (SIGKILL CANCEL_GRACE_MS after SIGTERM), not after the stand-in's 300 s sleep
      assert.ok(r.ms >= CANCEL_GRACE_MS - 50 && r.ms < CANCEL_GRACE_MS + CANCEL_EXIT_WAIT_MS + 3000, `answered ${r.ms} ms after the cancel`);
      assert.ok(rig.faults.fired("mkfs.ext4"));
    });
  }
});
