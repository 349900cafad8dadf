// Must-finish steps (host-steps.ts) are never signalled — not by the call's deadline, not by their
// bound or -host-command-timeout, not by the daemon's graceful stop — and the call is answered
// naming them while they run on, holding the device's lock; stoppable steps keep being stopped.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { runCommand, setHostCommandTimeoutCap } from "./run-command.ts";
import { HOST_STEPS, hostStep } from "./host-steps.ts";
import { lateSteps, runningLateStepsByDevice } from "./late-steps.ts";
import { Code, CsiProxyError } from "../../errors.ts";
import { runInCall } from "../../util/call-scope.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";

const node = process.execPath;
/** A tool that takes `ms`, then writes "done" to `file` and exits 0 (SIGTERM would end it at once). */
const slowTool = (ms: number, file: string) => ["-e", `setTimeout(() => require("fs").writeFileSync(${JSON.stringify(file)}, "done"), ${ms})`];
const waitFor = async (ok: () => boolean, ms: number) => {
  for (const until = Date.now() + ms; !ok() && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
};

describe("host steps: stoppable or must-finish", () => {
  it("the table names every metadata rewrite must-finish and mkfs of the volume being formatted stoppable", () => {
    for (const s of ["e2fsck -p", "resize2fs offline", "sfdisk", "partx"] as const) assert.equal(HOST_STEPS[s].kind, "must-finish", s);
    for (const s of ["mkfs", "resize2fs online", "xfs_growfs", "probe"] as const) assert.equal(HOST_STEPS[s].kind, "stoppable", s);
    assert.equal(hostStep(undefined).kind, "stoppable");
  });

  it("a must-finish step at its call's deadline: answered at once naming it and its pid, never signalled, it runs to its end; the lock is held until then", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "must-finish-"));
    const marker = path.join(dir, "done");
    const mutex = createKeyedMutex();
    const controller = new AbortController();
    try {
      const t0 = Date.now();
      const run = runInCall({ signal: controller.signal }, () =>
        mutex.run("disk:7", () => runCommand(node, slowTool(1500, marker), { step: "resize2fs offline", device: "/dev/test-mf" }), { what: "ResizeVolume of volume V" }),
      );
      setTimeout(() => controller.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded")), 300);
      const err = await run.catch((e) => e);
      const answeredAfter = Date.now() - t0;
      assert.equal(err.code, Code.DeadlineExceeded, String(err));
      assert.match(err.message, /deadline exceeded: a step that must finish \(resize2fs offline, pid \d+\) is still running after \d+ ms; it is not stopped .*; the device stays locked until it ends$/);
      assert.ok(answeredAfter < 1200, `answered at the deadline, not at the step's end (${answeredAfter} ms)`);
      assert.equal(existsSync(marker), false);
      assert.equal(runningLateStepsByDevice().get("/dev/test-mf"), 1, "counted as outliving its call, per device");
      const retry = await mutex.run("disk:7", async () => "second tool").catch((e) => e);
      assert.equal(retry.code, Code.Aborted, "a later call on the device is refused while it runs");
      assert.match(retry.message, /resize2fs offline|pid \d+/);
      await waitFor(() => mutex.size === 0, 10_000);
      assert.equal(readFileSync(marker, "utf8"), "done", "the step ran to its end: never signalled");
      const late = lateSteps().find((s) => s.device === "/dev/test-mf");
      assert.deepEqual([late?.end?.how, late?.end?.ok], ["exit status 0", true], "its end is kept");
      assert.equal(runningLateStepsByDevice().get("/dev/test-mf"), undefined);
      assert.equal(await mutex.run("disk:7", async () => "later"), "later");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("its bound (the step's, capped by -host-command-timeout) answers DeadlineExceeded without signalling it", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "must-finish-"));
    const marker = path.join(dir, "done");
    setHostCommandTimeoutCap(300);
    try {
      const err = await runCommand(node, slowTool(1200, marker), { step: "sfdisk", timeoutMs: 60_000 }).catch((e) => e);
      assert.equal(err.code, Code.DeadlineExceeded, String(err));
      assert.match(err.message, /ran past its bound of 300 ms: a step that must finish \(sfdisk, pid \d+\) is still running/);
      await waitFor(() => existsSync(marker), 10_000);
      assert.equal(readFileSync(marker, "utf8"), "done");
      // A stoppable step under the same cap is still stopped.
      const stopped = await runCommand(node, slowTool(1200, marker + "2"), { step: "mkfs" }).catch((e) => e);
      assert.match(stopped.message, /timed out after 300 ms/);
    } finally {
      setHostCommandTimeoutCap(0);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a graceful stop waits for must-finish steps (logging each), ends the stoppable ones, and gives up after its bound leaving them running", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "must-finish-"));
    try {
      // In its own process: the stop is process-wide and final.
      const script = `
        import { runCommand, stopHostCommands } from ${JSON.stringify(new URL("./run-command.ts", import.meta.url).href)};
        const outcome = (p) => p.then(() => "resolved", (e) => [e.code, e.message.replace(/^.*: /, "")]);
        const tool = (ms, f) => ["-e", "setTimeout(() => require('fs').writeFileSync(" + JSON.stringify(f) + ", 'done'), " + ms + ")"];
        const short = outcome(runCommand(process.execPath, tool(1000, ${JSON.stringify(path.join(dir, "short"))}), { step: "e2fsck -p" }));
        const long = outcome(runCommand(process.execPath, tool(4000, ${JSON.stringify(path.join(dir, "long"))}), { step: "sfdisk" }));
        const probe = outcome(runCommand("/bin/sh", ["-c", "exec sleep 60"]));
        await new Promise((r) => setTimeout(r, 300));
        const waited = [];
        const t0 = Date.now();
        const left = await stopHostCommands({ onWait: (w) => waited.push(w), mustFinishWaitMs: 2000 });
        console.log(JSON.stringify({ ms: Date.now() - t0, waited: waited.length, left: left.length, short: await short, probe: await probe }));`;
      const { stdout } = await runCommand(node, ["--input-type=module", "-e", script], { timeoutMs: 30_000 });
      const r = JSON.parse(stdout);
      assert.equal(r.waited, 2, "each running must-finish step is logged");
      assert.equal(r.short, "resolved", "the short one ran to its end: not signalled");
      assert.deepEqual(r.probe, [Code.Unavailable, "ended because csi-proxy is stopping (SIGTERM)"]);
      assert.equal(r.left, 1, "the long one is still running when the bound passes");
      assert.ok(r.ms >= 1900 && r.ms < 3500, `${r.ms} ms`);
      await waitFor(() => existsSync(path.join(dir, "long")), 10_000);
      assert.equal(readFileSync(path.join(dir, "long"), "utf8"), "done", "the step left running finished although the daemon exited");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
