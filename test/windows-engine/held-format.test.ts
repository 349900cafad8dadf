/**
 * A Format handed to Windows is never cut short: on pwsh, the storage worker script runs
 * volume.format against a stand-in MSFT_Volume.Format that takes 4 s. The call's timeout, its
 * cancel and pool.close() each answer the caller at once saying it is still running, while the
 * worker process is left alive to finish (the stand-in records the method done, by that pid); the
 * work is recorded as outliving the call until the worker answers (what keeps the disk lock); other
 * calls meanwhile run on an extra worker.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createEngine, engineSkipReason, STORAGE, type World } from "./engine.ts";
import { runCollectingOutliving } from "../../src/util/call-scope.ts";
import { WorkerHeldError } from "../../src/host/windows/powershell/powershell-worker.ts";
import { Code } from "../../src/errors.ts";
import { processAlive } from "../helpers/process-alive.ts";

const skip = engineSkipReason();
const VOLUME = "\\\\?\\Volume{0b7e4a52-0000-0000-0000-100000000000}\\";
const FORMAT_MS = 4000;

const world: World = {
  instances: [
    { id: "d1", ns: STORAGE, class: "MSFT_Disk", props: { Number: 1, Location: "", Path: "\\\\?\\scsi#disk#1", SerialNumber: "SN1", Size: "10737418240", IsOffline: false, PartitionStyle: 2 } },
    { id: "p1", ns: STORAGE, class: "MSFT_Partition", props: { DiskNumber: 1, PartitionNumber: 2, GptType: "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}", MbrType: null, Size: "1073741824", Offset: "16777216", DriveLetter: 0, AccessPaths: [VOLUME] } },
    { id: "v1", ns: STORAGE, class: "MSFT_Volume", props: { UniqueId: VOLUME, FileSystemType: 0, FileSystem: "", Size: "1073741824", SizeRemaining: "0" } },
  ],
  links: [["p1", "v1"], ["d1", "p1"]],
  results: { "MSFT_Volume.Format": { __sleepMs: FORMAT_MS } },
};
const expect = { fileSystemType: "0", accessPaths: "", diskNumber: "1", partitionNumber: "2", offset: "16777216", size: "1073741824", isOffline: "False" };

describe("a Format handed to Windows is never cut short", { skip }, () => {
  const engine = createEngine();
  engine.setWorld(world);

  async function heldFormat(pool: ReturnType<typeof engine.pool>, options: { timeoutMs?: number; signal?: AbortSignal }, during?: () => void) {
    engine.resetCalls();
    const started = Date.now();
    const run = runCollectingOutliving(() => pool.call("volume.format", { volumeId: VOLUME, expect }, { ...options, hold: true }));
    during?.();
    const { outcome, outliving } = await run;
    const answeredMs = Date.now() - started;
    assert.equal(outcome.status, "rejected");
    const err = (outcome as PromiseRejectedResult).reason as WorkerHeldError;
    assert.ok(err instanceof WorkerHeldError, String(err));
    assert.match(err.message, /still running in its PowerShell worker \(pid (\d+)\)/);
    const pid = Number(/pid (\d+)/.exec(err.message)![1]);
    assert.ok(answeredMs < FORMAT_MS, `answered after ${answeredMs} ms, before the format ended`);
    assert.ok(processAlive(pid), "the worker was left running");
    assert.equal(engine.calls().filter((c) => c.done).length, 0, "the format is still running");
    assert.equal(outliving.length, 1);
    await outliving[0].ended;
    const done = engine.calls().filter((c) => c.done);
    assert.equal(done.length, 1, "the format ran to its end");
    assert.equal(done[0].pid, pid, "in the same worker");
    return err;
  }

  it("its timeout answers DeadlineExceeded 'still running'; the worker finishes and serves the next call", async () => {
    const pool = engine.pool();
    await pool.call("ping");
    const err = await heldFormat(pool, { timeoutMs: 800 });
    assert.equal(err.code, Code.DeadlineExceeded);
    assert.equal((await pool.call<{ pong: boolean }>("ping")).pong, true);
    assert.equal(pool.started, 1, "no worker was killed or replaced");
  });

  it("its cancel answers Canceled 'still running'; a call meanwhile runs on an extra worker", async () => {
    const pool = engine.pool();
    await pool.call("ping");
    const ac = new AbortController();
    let ping: Promise<unknown> | undefined;
    const err = await heldFormat(pool, { signal: ac.signal, timeoutMs: 60_000 }, () => {
      setTimeout(() => {
        ac.abort();
        ping = pool.call("ping", { echo: "meanwhile" });
      }, 800);
    });
    assert.equal(err.code, Code.Canceled);
    assert.deepEqual(((await ping) as { echo: string }).echo, "meanwhile");
    assert.equal(pool.started, 2, "one extra worker for the held call");
  });

  it("pool.close() answers Unavailable 'still running', leaves the worker to finish, and returns once it exited by itself", async () => {
    const pool = engine.pool();
    await pool.call("ping");
    let closed: Promise<number[]> | undefined;
    const err = await heldFormat(pool, { timeoutMs: 60_000 }, () => {
      setTimeout(() => (closed = pool.close()), 800);
    });
    assert.equal(err.code, Code.Unavailable);
    assert.deepEqual(await closed, []);
    assert.equal(processAlive(Number(/pid (\d+)/.exec(err.message)![1])), false, "close() returned once the worker had finished and exited");
  });
});
