// The process's one gc function (gc-function.ts).
import { it } from "node:test";
import assert from "node:assert/strict";
import { gcFunction } from "./gc-function.ts";

it("makes one gc function per process (one vm context), shared by every caller, and it collects", () => {
  const gc = gcFunction();
  assert.equal(typeof gc, "function");
  assert.equal(gcFunction(), gc, "a second call made another context");
  assert.doesNotThrow(() => gc!({ type: "minor", execution: "sync" }));
});
