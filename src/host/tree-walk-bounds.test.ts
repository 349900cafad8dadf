import assert from "node:assert/strict";
import { test } from "node:test";
import { BATCH, NAME_BUDGET, OPEN_DIRS, PendingNames } from "./tree-walk-bounds.ts";

test("a listing pass reads BATCH names until the walk's budget is nearly spent, then fewer, never none", () => {
  const pending = new PendingNames();
  assert.equal(pending.want(), BATCH);
  pending.add(NAME_BUDGET - 10);
  assert.equal(pending.want(), 10);
  pending.add(10);
  assert.equal(pending.want(), 1, "a full budget still lets one name through: the walk progresses");
  pending.add(5); // names put back over the budget (an entry that turned out to be a directory)
  assert.equal(pending.want(), 1);
  pending.remove(NAME_BUDGET + 5 - 100);
  assert.equal(pending.count, 100);
  assert.equal(pending.want(), BATCH);
  pending.reset();
  assert.equal(pending.count, 0);
});

test("the bounds are the documented ones", () => {
  assert.deepEqual([OPEN_DIRS, BATCH, NAME_BUDGET], [16, 1024, 65_536]);
});
