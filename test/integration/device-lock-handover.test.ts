// The device lock passes to the tool (src/state/node-locks.ts, src/host/exec/run-command.ts): a tool
// that writes a device holds the device's lock descriptor itself, so the lock lasts as long as the
// tool — past the death of the csi-proxy process that started it — and a retry from a new process
// waits for the orphaned tool instead of racing it. Steps that do not write a device get no lock.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { repoRoot } from "../helpers/daemon-process.ts";
import { createNodeLocks } from "../../src/state/node-locks.ts";
import { runCommand } from "../../src/host/exec/run-command.ts";

/** Running (an exited orphan may stay a zombie until its new parent reaps it). */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
};

test("kill -9 of the process holding a disk's lock while its tool runs: a new process's lock waits for the orphaned tool", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-handover-"));
  const ready = path.join(dir, "tool-pid");
  try {
    const holder = spawn(process.execPath, [path.join(repoRoot, "test/helpers/device-lock-child.ts"), path.join(dir, "locks"), ready], { stdio: "ignore" });
    for (const until = Date.now() + 30_000; !existsSync(ready) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
    const toolPid = Number(readFileSync(ready, "utf8"));
    holder.kill("SIGKILL");
    await new Promise((r) => holder.once("exit", r));
    assert.ok(alive(toolPid), "the tool outlives its csi-proxy process");
    const locks = createNodeLocks({ dir: path.join(dir, "locks"), platform: "linux" });
    const toolAliveAtGrant = await locks.run("disk:5", async () => alive(toolPid));
    assert.equal(toolAliveAtGrant, false, "the lock was granted only once the orphaned tool had ended");
    // Another disk is not held by it (a lock file per disk, no shared stripes).
    assert.equal(await locks.run("disk:6", async () => "free"), "free");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("only a step that writes the device is handed the lock descriptor; reads get none", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-handover-"));
  try {
    const locks = createNodeLocks({ dir, platform: "linux" });
    const lockFile = path.join(dir, "disk.8.lock");
    const opened = (step: "mkfs" | "probe") =>
      locks.run("disk:8", () => runCommand("/bin/sh", ["-c", 'for f in /proc/$$/fd/*; do echo "${f##*/} $(readlink "$f")"; done'], { step })).then((r) => r.stdout.split("\n").filter((l) => l.endsWith(` ${lockFile}`)));
    assert.deepEqual(await opened("probe"), [], "a read holds no lock");
    assert.deepEqual(await opened("mkfs"), [`3 ${lockFile}`], "the lock is the writer's fd 3");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
