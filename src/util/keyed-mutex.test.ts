import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { createKeyedMutex } from "./keyed-mutex.ts";
import { noteOutliving, runInCall } from "./call-scope.ts";
import { Code, CsiProxyError } from "../errors.ts";

test("same key: calls run one at a time, in call order", async () => {
  const mutex = createKeyedMutex();
  const log: string[] = [];
  let running = 0;
  const job = (name: string, ms: number) =>
    mutex.run("disk-1", async () => {
      running++;
      assert.equal(running, 1, "two calls overlapped on one key");
      log.push(`start ${name}`);
      await sleep(ms);
      log.push(`end ${name}`);
      running--;
      return name;
    });
  const results = await Promise.all([job("a", 20), job("b", 1), job("c", 5)]);
  assert.deepEqual(results, ["a", "b", "c"]);
  assert.deepEqual(log, ["start a", "end a", "start b", "end b", "start c", "end c"]);
  assert.equal(mutex.size, 0, "idle keys are forgotten");
});

test("different keys run in parallel", async () => {
  const mutex = createKeyedMutex();
  let concurrent = 0, peak = 0;
  const job = (key: string) =>
    mutex.run(key, async () => {
      peak = Math.max(peak, ++concurrent);
      await sleep(20);
      concurrent--;
    });
  await Promise.all([job("a"), job("b"), job("c")]);
  assert.equal(peak, 3);
});

test("a rejected call releases the key and its error reaches only its caller", async () => {
  const mutex = createKeyedMutex();
  const failing = mutex.run("k", async () => {
    throw new Error("boom");
  });
  const next = mutex.run("k", async () => "ok");
  await assert.rejects(failing, /boom/);
  assert.equal(await next, "ok");
  assert.equal(mutex.size, 0);
});

test("runAll holds every key; overlapping multi-key calls do not deadlock", async () => {
  const mutex = createKeyedMutex();
  const held = new Set<string>();
  const job = (keys: string[]) =>
    mutex.runAll(keys, async () => {
      for (const k of keys) assert.ok(!held.has(k), `key ${k} held twice`);
      keys.forEach((k) => held.add(k));
      await sleep(5);
      keys.forEach((k) => held.delete(k));
    });
  await Promise.all([job(["a", "b"]), job(["b", "a"]), job(["b"]), job(["a", "c"])]);
  assert.equal(mutex.size, 0);
});

test("a call whose signal aborts while it waits leaves the queue: its work never starts, it answers with the signal's code saying so", async () => {
  const mutex = createKeyedMutex();
  let release!: () => void;
  const first = mutex.run("disk:1", () => new Promise<void>((r) => (release = r)), { what: "FormatVolume of volume A" });
  const ac = new AbortController();
  let ran = false;
  const queued = mutex.run("disk:1", async () => void (ran = true), { what: "FormatVolume of volume A (retry)", signal: ac.signal }).catch((e) => e);
  const third = mutex.run("disk:1", async () => "third");
  await sleep(10);
  ac.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded"));
  const err = await queued;
  assert.equal(err.code, Code.DeadlineExceeded);
  assert.match(err.message, /^deadline exceeded: FormatVolume of volume A \(retry\) was not started \(it was waiting for disk:1, held by FormatVolume of volume A since .*\); nothing was done$/);
  release();
  await first;
  assert.equal(await third, "third", "the calls behind it still run");
  assert.equal(ran, false, "the aborted call's work never ran, not even after the lock was free");
  assert.equal(mutex.size, 0);
});

test("a signal already aborted: the work never starts, even with the lock free", async () => {
  const mutex = createKeyedMutex();
  const ac = new AbortController();
  ac.abort();
  let ran = false;
  const err = await mutex.run("k", async () => void (ran = true), { signal: ac.signal }).catch((e) => e);
  assert.equal(err.code, Code.Canceled);
  assert.equal(ran, false);
  assert.equal(mutex.size, 0);
});

test("the call's signal is the default: run inside runInCall needs no options", async () => {
  const mutex = createKeyedMutex();
  let release!: () => void;
  const first = mutex.run("k", () => new Promise<void>((r) => (release = r)));
  const ac = new AbortController();
  const queued = runInCall({ signal: ac.signal }, () => mutex.run("k", async () => "ran")).catch((e) => e);
  ac.abort();
  assert.equal((await queued).code, Code.Canceled);
  release();
  await first;
});

test("work left running after its call settled keeps the lock; waiting and new calls are refused (Aborted, naming it) until it has ended", async () => {
  const mutex = createKeyedMutex();
  let end!: () => void;
  const ended = new Promise<void>((r) => (end = r));
  const holder = mutex.run(
    "disk:2",
    async () => {
      noteOutliving({ description: "mkfs.ext4 -q /dev/x (pid 4242)", ended });
      throw new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded: mkfs still running");
    },
    { what: "FormatVolume of volume B" },
  );
  let ran = false;
  const waiting = mutex.run("disk:2", async () => void (ran = true), { what: "FormatVolume of volume B (retry)" }).catch((e) => e);
  await assert.rejects(holder, /mkfs still running/);
  const refused = await waiting;
  assert.equal(refused.code, Code.Aborted, String(refused));
  assert.match(refused.message, /cannot FormatVolume of volume B \(retry\): an operation is pending on disk:2: FormatVolume of volume B \(started .*\) was answered .* s ago but mkfs.ext4 -q \/dev\/x \(pid 4242\) is still running; nothing was done/);
  const later = await mutex.run("disk:2", async () => void (ran = true)).catch((e) => e);
  assert.equal(later.code, Code.Aborted);
  assert.equal(await mutex.run("disk:3", async () => "other disk"), "other disk", "other keys are not held");
  assert.equal(ran, false);
  end();
  await sleep(1);
  assert.equal(await mutex.run("disk:2", async () => "after"), "after", "the key is free once the work ended");
  assert.equal(mutex.size, 0);
});
