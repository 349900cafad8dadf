import { test } from "node:test";
import assert from "node:assert/strict";
import { SnapshotSessions } from "./snapshot-session.ts";
import type { BlockSnapshot } from "./block-snapshot.ts";
import type { DevNumber } from "./block-types.ts";

/** Sessions over a counter: each snapshot taken is a new object tagged with its number and kind. */
function counting() {
  let taken = 0;
  let failNext = false;
  const sessions = new SnapshotSessions(async (dev?: DevNumber) => {
    taken++;
    if (failNext) {
      failNext = false;
      throw new Error("read failed");
    }
    return { disks: [], mounts: [], swaps: [], marks: [], loops: [], tag: `${taken} ${dev ? `${dev.major}:${dev.minor}` : "all"}` } as unknown as BlockSnapshot;
  });
  const tag = async (p: Promise<BlockSnapshot>) => (await p as unknown as { tag: string }).tag;
  return { sessions, tag, taken: () => taken, failNext: () => void (failNext = true) };
}

test("outside a session every read takes a new snapshot", async () => {
  const { sessions, tag } = counting();
  assert.equal(await tag(sessions.read()), "1 all");
  assert.equal(await tag(sessions.read()), "2 all");
});

test("inside a session reads share one snapshot per kind; writes never use it, and reads after a write are new", async () => {
  const { sessions, tag } = counting();
  await sessions.run(async () => {
    assert.equal(await tag(sessions.read()), "1 all");
    assert.equal(await tag(sessions.read()), "1 all");
    assert.equal(await tag(sessions.read({ major: 7, minor: 3 })), "2 7:3");
    assert.equal(await tag(sessions.read({ major: 7, minor: 3 })), "2 7:3");
    assert.equal(await tag(sessions.fresh()), "3 all", "a write's verification is never the shared snapshot");
    assert.equal(await tag(sessions.read()), "4 all", "after a write the next read is new");
    sessions.changed();
    assert.equal(await tag(sessions.read({ major: 7, minor: 3 })), "5 7:3");
  });
});

test("concurrent sessions do not share; a nested session starts afresh", async () => {
  const { sessions, tag } = counting();
  const [a, b] = await Promise.all([sessions.run(() => tag(sessions.read())), sessions.run(() => tag(sessions.read()))]);
  assert.notEqual(a, b);
  await sessions.run(async () => {
    const outer = await tag(sessions.read());
    assert.notEqual(await sessions.run(() => tag(sessions.read())), outer);
    assert.equal(await tag(sessions.read()), outer);
  });
});

test("a failed snapshot is not reused", async () => {
  const { sessions, tag, failNext } = counting();
  await sessions.run(async () => {
    failNext();
    await assert.rejects(sessions.read(), /read failed/);
    assert.equal(await tag(sessions.read()), "2 all");
  });
});

test("a write ends the sharing before it starts and after it ends, failed or not", async () => {
  const { sessions, tag } = counting();
  await sessions.run(async () => {
    assert.equal(await tag(sessions.read()), "1 all");
    const inside = await sessions.write(() => tag(sessions.read()));
    assert.equal(inside, "2 all", "a read inside the write does not see the snapshot from before it");
    assert.equal(await tag(sessions.read()), "3 all", "nor does a read after it");
    await assert.rejects(sessions.write(async () => {
      await sessions.read();
      throw new Error("write failed");
    }), /write failed/);
    assert.equal(await tag(sessions.read()), "5 all", "a failed write ends the sharing too");
  });
});
