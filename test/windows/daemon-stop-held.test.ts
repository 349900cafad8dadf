/**
 * The daemon's stop never cuts a Format short on Windows: the step of Daemon.stop that releases the
 * hosts' resources (compose.ts releaseHostResources("win32")) closes the PowerShell pools the daemon
 * owns (daemon-pools.ts) and, while a worker runs volume.format (the fake worker answers it 1.5 s
 * later), waits for that worker to answer and exit, logging what it waits for and when it is done.
 * Idle pools close at once. Linux's release is not involved.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { releaseHostResources } from "../../src/compose/compose.ts";
import { stopsWithDaemon } from "../../src/host/windows/powershell/daemon-pools.ts";
import { WorkerHeldError } from "../../src/host/windows/powershell/powershell-worker.ts";
import { Code } from "../../src/errors.ts";
import { createFakePool } from "./fake-pool.ts";
import { processAlive } from "../helpers/process-alive.ts";

const FORMAT_MS = 1500;
const FACTS = { fileSystemType: "0", accessPaths: "", diskNumber: "1", partitionNumber: "2", offset: "1048576", size: "1073741824", isOffline: "False" };

test("the daemon's stop waits for a Format running in a PowerShell worker, logs it, and ends idle pools at once", async () => {
  const busy = createFakePool({ "volume.format": { result: null, delayMs: FORMAT_MS } }, { size: 1 });
  const idle = createFakePool({}, { size: 1 });
  try {
    stopsWithDaemon(busy.pool);
    stopsWithDaemon(idle.pool);
    await idle.pool.call("ping");
    const format = busy.pool.call("volume.format", { volumeId: "\\\\?\\Volume{1}\\", expect: FACTS }, { timeoutMs: 60_000, hold: true }).then(
      () => null,
      (e: unknown) => e,
    );
    // the format is running in its worker before the stop begins
    for (let i = 0; i < 200 && busy.pool.holding.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(busy.pool.holding.length, 1);
    const pid = Number(/pid (\d+)/.exec(busy.pool.holding[0])![1]);
    const lines: string[] = [];
    const t0 = Date.now();
    await releaseHostResources("win32", { warning: (m) => lines.push(`W ${m}`), info: (m) => lines.push(`I ${m}`) });
    const ms = Date.now() - t0;
    const err = await format;
    assert.ok(err instanceof WorkerHeldError, String(err));
    assert.equal(err.code, Code.Unavailable);
    assert.match(err.message, /still running/);
    assert.ok(ms >= FORMAT_MS - 400, `the stop returned after ${ms} ms, before the format answered`);
    assert.equal(processAlive(pid), false, "the stop returned once the worker had answered and exited");
    assert.equal(busy.recorded().requests.filter((r) => r.op === "volume.format").length, 1);
    assert.equal(busy.pool.closed && idle.pool.closed, true, "both pools closed");
    assert.equal(lines.length, 2, lines.join("\n"));
    assert.match(lines[0], new RegExp(`^W Waiting for PowerShell worker pid ${pid} \\(volume\\.format\\): a Format or Resize handed to Windows is never cut short \\(at most 15 min\\)$`));
    assert.match(lines[1], new RegExp(`^I PowerShell worker pid ${pid} \\(volume\\.format\\) finished in \\d+ ms$`));
    // a second stop has nothing left to close
    await releaseHostResources("win32", { warning: (m) => lines.push(m), info: (m) => lines.push(m) });
    assert.equal(lines.length, 2);
  } finally {
    await busy.close();
    await idle.close();
  }
});
