import assert from "node:assert/strict";
import { it } from "node:test";
import { Code, CsiProxyError } from "../errors.ts";
import { numberKeys, parseDiskId, stringKeys } from "./legacy-ids.ts";

it("parseDiskId: decimal uint32 only, with Go's strconv texts after the caller's prefix", () => {
  assert.equal(parseDiskId("0", ""), 0);
  assert.equal(parseDiskId("4294967295", ""), 0xffffffff);
  const fails: [string, string][] = [
    ["4294967296", 'strconv.ParseUint: parsing "4294967296": value out of range'],
    ["99999999999", 'strconv.ParseUint: parsing "99999999999": value out of range'],
    ["-1", 'strconv.ParseUint: parsing "-1": invalid syntax'],
    ["1a", 'strconv.ParseUint: parsing "1a": invalid syntax'],
    ["", 'strconv.ParseUint: parsing "": invalid syntax'],
  ];
  for (const [input, text] of fails) {
    assert.throws(() => parseDiskId(input, "disk id: "), (err: unknown) => {
      assert.ok(err instanceof CsiProxyError);
      assert.equal(err.code, Code.InvalidArgument);
      assert.equal(err.message, `disk id: ${text}`);
      return true;
    }, input);
  }
});

it("stringKeys / numberKeys turn a Map into the wire's map with converted values", () => {
  const m = new Map([[2, "b"], [10, "j"]]);
  assert.deepEqual(stringKeys(m, (v) => v.toUpperCase()), { "2": "B", "10": "J" });
  assert.deepEqual(numberKeys(m, (v) => v.length), { 2: 1, 10: 1 });
});
