import { it } from "node:test";
import assert from "node:assert/strict";
import { describeValue } from "./describe-value.ts";

it("describes any value by kind, short scalars by value, never throwing", () => {
  assert.equal(describeValue(null), "null");
  assert.equal(describeValue(undefined), "undefined");
  assert.equal(describeValue("rel"), 'the string "rel"');
  assert.equal(describeValue("x".repeat(500)), `the string "${"x".repeat(100)}…"`);
  assert.equal(describeValue(5), "the number 5");
  assert.equal(describeValue(Number.NaN), "NaN");
  assert.equal(describeValue(5n), "the bigint 5");
  assert.equal(describeValue(true), "the boolean true");
  assert.equal(describeValue(Symbol("s")), "a symbol");
  assert.equal(describeValue(() => 1), "a function");
  assert.equal(describeValue([1]), "an array");
  assert.equal(describeValue({}), "an object");
  const { proxy, revoke } = Proxy.revocable([], {});
  revoke();
  assert.equal(describeValue(proxy), "an object");
});
