import { it } from "node:test";
import assert from "node:assert/strict";
import { shownName } from "./shown-name.ts";

it("shows any value without throwing, bounded as a status message", () => {
  assert.equal(shownName("PathExists"), "PathExists");
  assert.equal(shownName(5), "5");
  assert.equal(shownName(Symbol("s")), "Symbol(s)");
  assert.equal(shownName({ toString: () => { throw new Error("boom"); } }), "(a object)");
  assert.equal(shownName(Object.create(null)), "(a object)");
  const long = shownName("x".repeat(100_000));
  assert.equal(long, `${"x".repeat(4096)}… (truncated)`);
});
