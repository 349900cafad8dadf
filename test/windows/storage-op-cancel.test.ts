/**
 * A Format or Resize whose caller goes away on Windows, against the fake worker: the call answers at
 * once saying the op is still running, and the worker process running it is NOT ended (killing
 * powershell.exe does not stop a CIM method the storage service already runs, and on Windows the
 * worker's life is what keeps the disk safe); the disk's operation lock stays held (later calls
 * Aborted, naming it) until that worker answers or exits. The same on a real engine:
 * test/windows-engine/held-format.test.ts. What a real storage service does is not exercised here
 * (docs/reliability.md says what is and is not verified).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, CsiProxyError } from "../../src/errors.ts";
import { WindowsVolumeCim } from "../../src/host/windows/powershell/volume-cim.ts";
import { createKeyedMutex } from "../../src/util/keyed-mutex.ts";
import { runInCall } from "../../src/util/call-scope.ts";
import { createFakePool } from "./fake-pool.ts";
import { processAlive } from "../helpers/process-alive.ts";

/** Requests the fake workers recorded so far (0 while a record line is still being written). */
const requestsSeen = (f: ReturnType<typeof createFakePool>) => {
  try {
    return f.recorded().requests.length;
  } catch {
    return 0;
  }
};

const alive = processAlive;
/** The facts a write was decided on (expected-facts.ts); the fake worker does not compare them. */
const FACTS = { fileSystemType: "14", accessPaths: "", diskNumber: "1", partitionNumber: "2", offset: "1048576", size: "1073741824", isOffline: "False" };

for (const [op, run] of [
  ["volume.format", (cim: WindowsVolumeCim) => cim.formatVolume("\\\\?\\Volume{1}\\", FACTS)],
  ["volume.resize", (cim: WindowsVolumeCim) => cim.resizePartition("\\\\?\\Volume{1}\\", 1n << 30n, FACTS)],
] as const) {
  test(`${op} cancelled: answered 'still running', its worker left alive; the disk stays locked until that worker ends`, async () => {
    const f = createFakePool({ [op]: { hang: true } }, { size: 1 });
    const cim = new WindowsVolumeCim(f.pool, {} as never, { idlePollMs: 100 });
    const locks = createKeyedMutex();
    let pid = 0;
    try {
      const ac = new AbortController();
      const pending = runInCall({ signal: ac.signal }, () => locks.run("disk:1", () => run(cim), { what: `${op} of volume 1` })).catch((e) => e);
      while (requestsSeen(f) === 0) await new Promise((r) => setTimeout(r, 10));
      pid = f.recorded().starts[0].pid;
      ac.abort(new CsiProxyError(Code.Canceled, "cancelled"));
      const err = await pending;
      assert.equal(err.code, Code.Canceled, String(err));
      assert.match(err.message, new RegExp(`${op}: cancelled: still running in its PowerShell worker \\(pid ${pid}\\), which is left to finish it`));
      assert.equal(alive(pid), true, "the worker was not ended");

      let ran = false;
      const refused = await locks.run("disk:1", async () => void (ran = true), { what: "ResizeVolume of volume 1" }).catch((e) => e);
      assert.equal(refused.code, Code.Aborted, String(refused));
      assert.match(refused.message, new RegExp(`${op} in PowerShell worker \\(pid ${pid}\\), left to finish`));
      assert.equal(ran, false);

      await new Promise((r) => setTimeout(r, 300));
      assert.equal(locks.size, 1, "still held while the worker runs the op");
      process.kill(pid, "SIGKILL"); // the op's end, as far as the pool can see: its worker exits
      const t0 = Date.now();
      while (locks.size > 0 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 20));
      assert.equal(await locks.run("disk:1", async () => "next"), "next");
      assert.equal(f.recorded().starts.length, 1, "no worker was started in its place while it ran");
    } finally {
      if (pid && alive(pid)) process.kill(pid, "SIGKILL");
      await f.close();
    }
  });
}

test("pool.close() during a held Format: the caller is answered at once, the worker is not killed (its stdin is closed) and close() waits for it to end", async () => {
  const f = createFakePool({ "volume.format": { delayMs: 1500, result: null } }, { size: 1 });
  const cim = new WindowsVolumeCim(f.pool, {} as never, { idlePollMs: 50 });
  let pid = 0;
  try {
    const pending = cim.formatVolume("v", FACTS).catch((e) => e);
    while (requestsSeen(f) === 0) await new Promise((r) => setTimeout(r, 10));
    pid = f.recorded().starts[0].pid;
    const c0 = Date.now();
    let answeredMs = -1;
    void pending.then(() => (answeredMs = Date.now() - c0));
    assert.deepEqual(await f.pool.close(), []);
    const closedMs = Date.now() - c0;
    const err = await pending;
    assert.equal(err.code, Code.Unavailable);
    assert.match(err.message, /still running in its PowerShell worker/);
    assert.ok(answeredMs >= 0 && answeredMs < 500, `the caller was answered at once (${answeredMs} ms)`);
    assert.ok(closedMs >= 1000, `close() waited for the held Format (${closedMs} ms)`);
    assert.equal(alive(pid), false, "the worker ended by itself after answering");
  } finally {
    if (pid && alive(pid)) process.kill(pid, "SIGKILL");
    await f.close();
  }
});
