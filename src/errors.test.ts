import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Code, CsiProxyError, codeName, quote, notFound } from "./errors.ts";

describe("CsiProxyError", () => {
  it("from() keeps coded errors and wraps anything else as Internal with the cause", () => {
    const coded = notFound("disk 7 not found");
    assert.equal(CsiProxyError.from(coded), coded);
    const cause = new TypeError("boom");
    const wrapped = CsiProxyError.from(cause);
    assert.deepEqual([wrapped.code, wrapped.message, wrapped.cause], [Code.Internal, "boom", cause]);
    assert.equal(CsiProxyError.from("text", Code.Unavailable).code, Code.Unavailable);
  });
  it("codeName() prints grpc-go's names", () => {
    assert.deepEqual([0, 3, 5, 9, 12, 16].map(codeName), ["OK", "InvalidArgument", "NotFound", "FailedPrecondition", "Unimplemented", "Unauthenticated"]);
    assert.equal(codeName(99), "Code(99)");
  });
  it("quote() bounds what request data can add to a message", () => {
    assert.equal(quote("a\nb"), '"a\\nb"');
    assert.equal(quote("x".repeat(10_000)).length, 256 + 3);
  });
});
