import assert from "node:assert/strict";
import { it } from "node:test";
import { describeSchedule, retryUndo, UNDO_RETRY_DELAYS_MS } from "./undo-retry.ts";

const recorder = () => {
  const lines: string[] = [];
  return { lines, log: { info: (m: string) => lines.push(`I ${m}`), warning: (m: string) => lines.push(`W ${m}`) } };
};

it("describeSchedule sums the delays", () => {
  assert.equal(describeSchedule([250, 1000, 1000]), "3 attempts within 3 s");
  assert.equal(describeSchedule(UNDO_RETRY_DELAYS_MS), `${UNDO_RETRY_DELAYS_MS.length} attempts within 118 s`);
});

it("retries until done, one attempt at a time, logging each", async () => {
  const { lines, log } = recorder();
  let running = 0;
  let n = 0;
  const done = await retryUndo("mount /dev/loop9 at /k/t", async () => {
    assert.equal(running++, 0, "never two attempts at once");
    await new Promise((r) => setTimeout(r, 5));
    running--;
    if (++n === 1) throw new Error("umount: busy");
    return n === 2 ? { done: false, left: "still mounted (id 42)" } : { done: true };
  }, log, [1, 1, 1, 1]);
  assert.equal(done, true);
  assert.equal(n, 3);
  assert.deepEqual(lines, [
    "W cleanup retry 1/4 of mount /dev/loop9 at /k/t: failed: umount: busy",
    "W cleanup retry 2/4 of mount /dev/loop9 at /k/t: still left: still mounted (id 42)",
    "I cleanup retry 3/4 of mount /dev/loop9 at /k/t: done, nothing left",
  ]);
});

it("gives up after the last delay and says so; a kept result stops with its reason", async () => {
  const { lines, log } = recorder();
  assert.equal(await retryUndo("x", async () => ({ done: false, left: "y" }), log, [1, 1]), false);
  assert.match(lines.at(-1)!, /^W cleanup retry 2\/2 of x: still left: y; giving up, remove it by hand$/);
  const kept = recorder();
  assert.equal(await retryUndo("z", async () => ({ done: true, kept: "a later call mounted it there" }), kept.log, [1]), true);
  assert.deepEqual(kept.lines, ["I cleanup retry 1/1 of z: stopped: a later call mounted it there"]);
});
