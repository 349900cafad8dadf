/**
 * A Format or Resize whose caller goes away on Windows, against the fake worker: the worker process
 * running it is ended before the call answers, the pool starts a fresh one, and — since killing
 * powershell.exe does not stop a CIM method the storage service already runs — the disk's operation
 * lock stays held (later calls Aborted, naming it) until a fresh worker sees the volume idle
 * (`volume.busy`: no storage job running). What a real storage service does is not exercised here
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
const FACTS = { fileSystemType: "14", accessPaths: "", offset: "1048576", size: "1073741824" };

for (const [op, run] of [
  ["volume.format", (cim: WindowsVolumeCim) => cim.formatVolume("\\\\?\\Volume{1}\\", FACTS)],
  ["volume.resize", (cim: WindowsVolumeCim) => cim.resizePartition("\\\\?\\Volume{1}\\", 1n << 30n, FACTS)],
] as const) {
  test(`${op} cancelled: its worker is ended before the answer; the disk stays locked until the volume is seen idle`, async () => {
    const busy = [{ result: { runningJobs: 1 } }, { result: { runningJobs: 1 } }, { result: { runningJobs: 0 } }];
    const f = createFakePool({ [op]: { hang: true }, "volume.busy": busy }, { size: 1 });
    const cim = new WindowsVolumeCim(f.pool, {} as never, { idlePollMs: 100 });
    const locks = createKeyedMutex();
    try {
      const ac = new AbortController();
      const pending = runInCall({ signal: ac.signal }, () => locks.run("disk:1", () => run(cim), { what: `${op} of volume 1` })).catch((e) => e);
      while (requestsSeen(f) === 0) await new Promise((r) => setTimeout(r, 10));
      const pid = f.recorded().starts[0].pid;
      ac.abort(new CsiProxyError(Code.Canceled, "cancelled"));
      const err = await pending;
      assert.equal(err.code, Code.Canceled, String(err));
      assert.match(err.message, new RegExp(`${op}: cancelled: stopped; its PowerShell worker \\(pid ${pid}\\) was ended and is replaced; the storage service may still be carrying it out`));
      assert.equal(alive(pid), false, "the worker had exited when the call answered");

      let ran = false;
      const refused = await locks.run("disk:1", async () => void (ran = true), { what: "ResizeVolume of volume 1" }).catch((e) => e);
      assert.equal(refused.code, Code.Aborted, String(refused));
      assert.match(refused.message, new RegExp(`${op} of volume 1 .* but ${op} of volume .* handed to the Windows storage service before its worker was killed is still running`));
      assert.equal(ran, false);

      while (locks.size > 0) await new Promise((r) => setTimeout(r, 20));
      const polls = f.recorded().requests.filter((r) => r.op === "volume.busy");
      assert.equal(polls.length, 3, "held until volume.busy reported no running job");
      assert.equal(f.recorded().starts.length, 2, "a fresh worker looked");
      assert.equal(await locks.run("disk:1", async () => "next"), "next");
    } finally {
      await f.close();
    }
  });
}

test("a worker that does not exit when killed: the call answers within the bound naming its pid; later calls are refused meanwhile", async () => {
  const f = createFakePool({ "volume.format": { hang: true }, "volume.busy": { result: { runningJobs: 0 } } }, { size: 1, env: { CSI_FAKE_PS_IGNORE_TERM: "1" } });
  const cim = new WindowsVolumeCim(f.pool, {} as never, { idlePollMs: 50 });
  const locks = createKeyedMutex();
  let pid = 0;
  try {
    const ac = new AbortController();
    const pending = runInCall({ signal: ac.signal }, () => locks.run("disk:1", () => cim.formatVolume("v", FACTS), { what: "FormatVolume of v" })).catch((e) => e);
    while (requestsSeen(f) === 0) await new Promise((r) => setTimeout(r, 10));
    pid = f.recorded().starts[0].pid;
    const t0 = Date.now();
    ac.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded"));
    const err = await pending;
    assert.ok(Date.now() - t0 < 1900, "answered within the transport's 2 s grace");
    assert.equal(err.code, Code.DeadlineExceeded);
    assert.match(err.message, new RegExp(`its PowerShell worker \\(pid ${pid}\\) was killed but had not exited \\d+ ms later; the operation is still running`));
    assert.ok(alive(pid));
    const refused = await locks.run("disk:1", async () => "ran").catch((e) => e);
    assert.equal(refused.code, Code.Aborted);
    assert.match(refused.message, new RegExp(`powershell.exe \\(pid ${pid}\\) running volume.format`));
  } finally {
    if (pid && alive(pid)) process.kill(pid, "SIGKILL");
    await f.close();
  }
});

test("a worker that did not exit when killed, force-killed later: the disk is unlocked once it exited and a fresh worker saw the volume idle; closing the pool is bounded", { timeout: 60_000 }, async () => {
  const f = createFakePool({ "volume.format": { hang: true }, "volume.busy": { result: { runningJobs: 0 } } }, { size: 1, env: { CSI_FAKE_PS_IGNORE_TERM: "1" } });
  const cim = new WindowsVolumeCim(f.pool, {} as never, { idlePollMs: 50 });
  const locks = createKeyedMutex();
  const workerPids = () => f.recorded().starts.map((s) => s.pid);
  try {
    const ac = new AbortController();
    const pending = runInCall({ signal: ac.signal }, () => locks.run("disk:1", () => cim.formatVolume("v", FACTS), { what: "FormatVolume of v" })).catch((e) => e);
    while (requestsSeen(f) === 0) await new Promise((r) => setTimeout(r, 10));
    const [pid] = workerPids();
    ac.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded"));
    assert.match((await pending).message, /was killed but had not exited/);

    // Held while the stuck worker lives, even though a fresh worker may already see the volume idle.
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(alive(pid));
    assert.equal((await locks.run("disk:1", async () => "ran").catch((e) => e)).code, Code.Aborted, "held while the killed worker is alive");

    process.kill(pid, "SIGKILL");
    const t0 = Date.now();
    while (locks.size > 0 && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 20));
    assert.equal(locks.size, 0, "the disk is unlocked once the worker exited and the volume was seen idle");
    assert.ok(f.recorded().requests.some((r) => r.op === "volume.busy"), "a fresh worker looked at the volume");
    assert.equal(await locks.run("disk:1", async () => "next"), "next");

    // The fresh worker ignores the kill too: close() gives up on it after its bound instead of hanging.
    const fresh = workerPids().filter((p) => p !== pid && alive(p));
    assert.ok(fresh.length > 0, "a fresh worker is running");
    const c0 = Date.now();
    const left = await f.pool.close();
    assert.ok(Date.now() - c0 < 10_000, `close() returned in ${Date.now() - c0} ms`);
    assert.deepEqual(left, fresh, "close() names the workers it left running");
  } finally {
    for (const p of workerPids()) if (alive(p)) process.kill(p, "SIGKILL");
    await f.close();
  }
});
