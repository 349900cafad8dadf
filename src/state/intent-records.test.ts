import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { IntentRecords, toolMayRun, type IntentRecord } from "./intent-records.ts";
import { runCommand } from "../host/exec/run-command.ts";
import { Code } from "../errors.ts";

const intent = { deviceKey: "loop:/var/tmp/x.img@0", devPath: "/dev/loop9", operation: "write an empty GPT partition table", writes: ["gpt", "PMBR"], before: "no signature", command: "sfdisk /dev/loop9" };

describe("intent records", () => {
  it("written (with the tool's pid, start time and boot id) before the step runs, removed once its end is seen", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "intents-"));
    try {
      const records = new IntentRecords(path.join(dir, "intents"));
      let during: IntentRecord | undefined;
      await records.during(intent, async (spawned) => {
        await runCommand("/bin/sh", ["-c", "sleep 0.2"], { onSpawn: spawned });
        during = JSON.parse(readFileSync(records.fileOf(intent.deviceKey), "utf8")) as IntentRecord;
      });
      assert.equal(during?.operation, intent.operation);
      assert.ok(typeof during?.pid === "number" && during.pidStart && during.bootId, JSON.stringify(during));
      assert.equal(toolMayRun(during!), false, "its tool has exited");
      assert.equal(existsSync(records.fileOf(intent.deviceKey)), false);
      assert.equal(await records.find(intent.deviceKey), null);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a live tool of this boot may run; another boot's may not", () => {
    const stat = readFileSync(`/proc/${process.pid}/stat`, "latin1");
    const pidStart = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    const bootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const r: IntentRecord = { ...intent, pid: process.pid, pidStart, bootId, startedAt: new Date().toISOString() };
    assert.equal(toolMayRun(r), true);
    assert.equal(toolMayRun({ ...r, bootId: "another-boot" }), false);
    assert.equal(toolMayRun({ ...r, pidStart: "1" }), false, "a reused pid");
  });

  it("a directory others may write is refused, failing closed: the step is not started", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "intents-"));
    try {
      chmodSync(dir, 0o777);
      let ran = false;
      const err = await new IntentRecords(dir).during(intent, async () => void (ran = true)).catch((e: unknown) => e);
      assert.equal((err as { code?: Code }).code, Code.FailedPrecondition);
      assert.match(String(err), /cannot use the intent-record directory .*: group or others may write it \(mode 777\); no destructive step is started without its record/);
      assert.equal(ran, false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
