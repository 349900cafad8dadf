import { test } from "node:test";
import assert from "node:assert/strict";
import { redactWhole } from "./redact.ts";

test("a one-letter secret replaces only itself, not the letter inside words", () => {
  assert.equal(redactWhole("bad password a for user alice", ["a"]), "bad password *** for user alice");
});

test("secrets bounded by punctuation, quotes, = and the ends of the text are replaced", () => {
  assert.equal(redactWhole("hunter2", ["hunter2"]), "***");
  assert.equal(redactWhole('password=hunter2,"hunter2" (hunter2)', ["hunter2"]), 'password=***,"***" (***)');
  assert.equal(redactWhole("user:p@ss!@host", ["p@ss!"]), "user:***@host");
});

test("a secret glued to word characters is another value, left alone", () => {
  assert.equal(redactWhole("hunter22 xhunter2", ["hunter2"]), "hunter22 xhunter2");
});

test("longer secrets first; empty secrets ignored; nothing to do leaves the text as is", () => {
  assert.equal(redactWhole("ab abc", ["ab", "abc", ""]), "*** ***");
  assert.equal(redactWhole("plain text", []), "plain text");
});
