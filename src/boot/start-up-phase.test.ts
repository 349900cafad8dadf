// The start-up phase (start-up-phase.ts): nests, survives extra ends, is false outside a start.
import { test } from "node:test";
import assert from "node:assert/strict";
import { beginStartUp, endStartUp, inStartUp } from "./start-up-phase.ts";

test("false outside a start; true between begin and end; nested begins need as many ends; extra ends are ignored", () => {
  assert.equal(inStartUp(), false);
  beginStartUp();
  beginStartUp();
  assert.equal(inStartUp(), true);
  endStartUp();
  assert.equal(inStartUp(), true, "one start still open");
  endStartUp();
  assert.equal(inStartUp(), false);
  endStartUp();
  beginStartUp();
  assert.equal(inStartUp(), true, "an extra end did not leave the count below zero");
  endStartUp();
});
