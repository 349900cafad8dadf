import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { createKeyedMutex } from "./keyed-mutex.ts";

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
