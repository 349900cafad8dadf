import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describeLateSteps, keepLateStepsFile } from "./late-steps-file.ts";
import { KEPT_ENDED, lateSteps, noteLateStep } from "./late-steps.ts";

describe("the late-step status file (csi-proxyctl status)", () => {
  it("shows a step that outlived its call while it runs, then how it ended; the record stays bounded", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "late-steps-"));
    const errors: string[] = [];
    const stop = keepLateStepsFile(dir, (m) => void errors.push(m));
    try {
      const end = noteLateStep({ device: "/dev/loop-status", command: "sfdisk /dev/loop-status", pid: 4242, answeredAt: new Date() });
      const until = Date.now() + 5000;
      let lines: string[] = [];
      while (Date.now() < until && !(lines = await describeLateSteps(dir)).some((l) => l.includes("/dev/loop-status"))) await new Promise((r) => setTimeout(r, 10));
      assert.match(lines.find((l) => l.includes("/dev/loop-status"))!, /^running  \/dev\/loop-status sfdisk \/dev\/loop-status \(pid 4242\): outlived its call \(answered .*\); the device stays locked until it ends$/);
      end("exit status 1", false);
      while (Date.now() < until && !(lines = await describeLateSteps(dir)).some((l) => l.startsWith("ended    /dev/loop-status"))) await new Promise((r) => setTimeout(r, 10));
      assert.match(lines.find((l) => l.includes("/dev/loop-status"))!, /^ended    \/dev\/loop-status .* ended .* with exit status 1$/);
      for (let i = 0; i < KEPT_ENDED + 10; i++) noteLateStep({ device: `/dev/x${i}`, command: "c", pid: i, answeredAt: new Date() })("exit status 0", true);
      assert.equal(lateSteps().filter((s) => s.end).length, KEPT_ENDED);
      await stop();
      assert.deepEqual(errors, []);
    } finally {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("no file: nothing to say", async () => {
    assert.deepEqual(await describeLateSteps(path.join(tmpdir(), "no-such-dir-late-steps")), []);
  });
});
