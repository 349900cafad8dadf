// The recursive-delete walk on its own, over an in-memory tree (test/doubles/fake-dir-ops.ts): its
// bounds (handles, names per pass, names pending, tries), a stop mid-walk, and directories swapped
// under it. Every test also checks that no handle was used after it was closed and that every
// handle the walk opened is closed when it settles.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Code, CsiProxyError } from "../errors.ts";
import { emptyTree, MAX_TRIES } from "./tree-walker.ts";
import { BATCH, NAME_BUDGET, OPEN_DIRS } from "./tree-walk-bounds.ts";
import { countBelow, dir, fakeDirOps, file, mount, put, type FakeDir, type FakeDirOps } from "../../test/doubles/fake-dir-ops.ts";

/** A chain `depth` levels deep of directories named "d" below a fresh `t`, a file in every level. */
function chain(depth: number): { world: FakeDir; t: FakeDir } {
  const t = dir();
  let cur = t;
  for (let i = 0; i < depth; i++) {
    const next = dir({ f: file() });
    put(cur, "d", next);
    cur = next;
  }
  return { world: dir({ t }), t };
}

/** Runs the walk over `/t` the way the hosts do (the caller holds the named directory); its answer or error. */
async function walk(ops: FakeDirOps, what: "empty" | "remove" = "empty", signal?: AbortSignal): Promise<CsiProxyError | number> {
  const root = ops.openRoot("/t");
  try {
    return await emptyTree(ops, root.h, root.id, "/t", what, signal).catch((e: CsiProxyError) => e);
  } finally {
    await ops.close(root.h);
  }
}

function settledClean(ops: FakeDirOps): void {
  assert.deepEqual(ops.misuse, [], "no handle used after it was closed");
  assert.equal(ops.open.size, 0, "every handle closed");
}

describe("the recursive-delete walk: bounds", () => {
  it("a 300-deep chain is emptied holding at most OPEN_DIRS directory handles (+ the one being entered)", async () => {
    const { world, t } = chain(300);
    const ops = fakeDirOps(world);
    assert.equal(await walk(ops), 600);
    assert.equal(t.children.size, 0);
    assert.ok(ops.maxOpen <= OPEN_DIRS + 1, `most handles open at once: ${ops.maxOpen}`);
    assert.ok(ops.calls > 0);
    settledClean(ops);
  });

  it("a wide directory is listed at most BATCH names per pass; the names pending over all levels stay within NAME_BUDGET", async () => {
    // 65 levels, each holding 1 024 directories: entering the first of each leaves 1 023 pending at every level (66 495 > NAME_BUDGET)
    const t = dir();
    let cur = t;
    for (let level = 0; level < 65; level++) {
      const kids = Array.from({ length: 1024 }, () => dir());
      kids.forEach((k, i) => put(cur, `n${i}`, k));
      cur = kids[0];
    }
    const total = countBelow(t);
    const ops = fakeDirOps(dir({ t }));
    assert.equal(await walk(ops), total);
    assert.ok(Math.max(...ops.wants) <= BATCH, `largest pass: ${Math.max(...ops.wants)}`);
    assert.ok(Math.min(...ops.wants) >= 1, "a pass always reads at least one name");
    assert.ok(ops.wants.some((w) => w < BATCH), "the budget made passes read fewer names");
    assert.ok(ops.maxOutstanding <= NAME_BUDGET, `names listed and not yet acted on: ${ops.maxOutstanding}`);
    settledClean(ops);
  });

  it("an entry that keeps changing between a directory and a file: FailedPrecondition after MAX_TRIES, with what was removed", async () => {
    const t = dir({ a: file(), flip: file() });
    const ops = fakeDirOps(dir({ t }));
    ops.before = (op, shown) => {
      // a file when opened as a directory, a directory when unlinked
      if (shown === "/t/flip") put(t, "flip", op === "openChild" ? file() : dir());
    };
    const err = await walk(ops);
    assert.ok(err instanceof CsiProxyError, String(err));
    assert.equal(err.code, Code.FailedPrecondition);
    assert.equal(
      err.message,
      `empty /t: remove /t/flip: it keeps changing between a directory and a link or file; gave up after ${MAX_TRIES} tries; removed 1 entry below /t; 1 entries left in it (flip)`,
    );
    settledClean(ops);
  });

  it("a deadline that passes mid-walk: DeadlineExceeded, saying what was removed and what is left", async () => {
    const { world, t } = chain(50);
    const ops = fakeDirOps(world);
    const ac = new AbortController();
    ops.before = () => {
      if (ops.removed.length === 20) ac.abort(new DOMException("timed out", "TimeoutError"));
    };
    const err = await walk(ops, "remove", ac.signal);
    assert.ok(err instanceof CsiProxyError, String(err));
    assert.equal(err.code, Code.DeadlineExceeded);
    assert.match(err.message, /^remove \/t: deadline exceeded; removed 20 entries below \/t; \/t is still there, 1 entries left in it \(d\)$/);
    assert.equal(countBelow(t), 100 - 20, "the count is true");
    settledClean(ops);
  });
});

describe("the recursive-delete walk: stopping", () => {
  it("an abort mid-walk stops it: Cancelled, the count removed is true, nothing is touched after the answer", async () => {
    const t = dir();
    for (let i = 0; i < 40; i++) put(t, `s${i}`, dir({ a: file(), b: file(), c: dir({ x: file() }) }));
    const total = countBelow(t);
    const ops = fakeDirOps(dir({ t }));
    const ac = new AbortController();
    ops.before = (op) => {
      if (op === "openChild" && ops.removed.length >= 37) ac.abort();
    };
    const err = await walk(ops, "empty", ac.signal);
    assert.ok(err instanceof CsiProxyError, String(err));
    assert.equal(err.code, Code.Canceled);
    const removed = Number(/removed (\d+) entries below \/t; (\d+) entries left in it/.exec(err.message)?.[1]);
    assert.equal(removed, ops.removed.length, `the answer counts what was removed: ${err.message}`);
    assert.ok(removed >= 37 && removed < total, err.message);
    assert.equal(countBelow(t), total - removed);
    const calls = ops.calls;
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(ops.calls, calls, "no operation after the answer");
    settledClean(ops);
  });

  it("a mount point met on the way is neither entered nor removed; the rest goes; FailedPrecondition names it", async () => {
    const m = mount();
    const t = dir({ a: dir({ m, f: file() }), b: file() });
    const ops = fakeDirOps(dir({ t }));
    const err = await walk(ops);
    assert.ok(err instanceof CsiProxyError, String(err));
    assert.equal(err.code, Code.FailedPrecondition);
    assert.equal(err.message, "empty /t: stopped at mount point /t/a/m (not entered, not removed); unmount first; removed 2 entries below /t; 1 entries left in it (a)");
    assert.equal((t.children.get("a") as FakeDir).children.get("m"), m);
    settledClean(ops);
  });
});

describe("the recursive-delete walk: directories swapped under it", () => {
  it("a level given up and swapped for another directory before the walk climbs back: refused, the swapped-in directory untouched", async () => {
    const { world, t } = chain(OPEN_DIRS + 10);
    const level = (t.children.get("d") as FakeDir).children.get("d") as FakeDir; // /t/d/d, given up while the walk is deeper
    const precious = dir({ keep: file() });
    const ops = fakeDirOps(world);
    let swapped = false;
    ops.before = (op, shown) => {
      if (op === "reopen" && shown === "/t/d/d" && !swapped) {
        swapped = true;
        const parent = level.parent!;
        put(world, "moved", level); // renamed away (outside /t) ...
        put(parent, "d", precious); // ... and another directory put in its place
      }
    };
    const err = await walk(ops, "remove");
    assert.ok(swapped, "the walk climbed back to the level");
    assert.ok(err instanceof CsiProxyError, String(err));
    assert.equal(err.code, Code.FailedPrecondition);
    assert.match(err.message, /^remove \/t: re-enter \/t\/d\/d: it is another directory now \(it moved while its contents were being removed\); removed \d+ entries below \/t; \/t is still there, 1 entries left in it \(d\)$/);
    assert.deepEqual([...precious.children.keys()], ["keep"], "the directory put in its place is untouched");
    assert.ok(!ops.removed.some((p) => p === "/t/d/d"), "the level's name was not removed");
    assert.equal(countBelow(level), 1, "the moved level keeps what was not yet removed (its child d)");
    settledClean(ops);
  });

  it("the named directory replaced between two listing passes: refused before anything in the new one is removed", async () => {
    const t = dir();
    for (let i = 0; i < BATCH + 10; i++) put(t, `f${i}`, file());
    const other = dir({ mine: file() });
    const world = dir({ t });
    const ops = fakeDirOps(world);
    let lists = 0;
    ops.before = (op) => {
      if (op === "whyNotNamed" && ++lists === 2) {
        put(world, "old", t);
        put(world, "t", other);
      }
    };
    const err = await walk(ops);
    assert.ok(err instanceof CsiProxyError, String(err));
    assert.equal(err.code, Code.FailedPrecondition);
    assert.match(err.message, new RegExp(`^empty /t: /t no longer names the directory being emptied \\(it is another entry now\\): it was moved or replaced while its contents were being removed; stopped; removed ${BATCH} entries below /t; `));
    assert.deepEqual([...other.children.keys()], ["mine"], "the directory now at /t is untouched");
    assert.equal(t.children.size, 10, "the first pass's names were removed, nothing after the check");
    settledClean(ops);
  });
});
