import { describe, it, test } from "node:test";
import assert from "node:assert/strict";
import { Code, CsiProxyError, codeName, errnoCode, quote, notFound } from "./errors.ts";

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
    // grpc-go codes/code_string.go, codes 0..16 in order.
    const grpcGo = ["OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists", "PermissionDenied",
      "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"];
    assert.deepEqual(Array.from({ length: 17 }, (_, i) => codeName(i)), grpcGo);
    assert.equal(codeName(99), "Code(99)");
  });
  it("quote() bounds what request data can add to a message", () => {
    assert.equal(quote("a\nb"), '"a\\nb"');
    assert.equal(quote("x".repeat(10_000)).length, 256 + 3);
  });
});

test("a system call's failure reaching the boundary uncoded gets its errno's code, not Internal", () => {
  const errno = (code: string) => Object.assign(new Error(`${code}: failure, write`), { code, syscall: "write" });
  assert.equal(CsiProxyError.from(errno("ENOSPC")).code, Code.FailedPrecondition); // final: kubelet reads ResourceExhausted as in progress
  assert.equal(CsiProxyError.from(errno("EDQUOT")).code, Code.FailedPrecondition);
  assert.equal(CsiProxyError.from(errno("ENOENT")).code, Code.NotFound);
  assert.equal(CsiProxyError.from(errno("EACCES")).code, Code.PermissionDenied);
  assert.equal(CsiProxyError.from(errno("EIO")).code, Code.FailedPrecondition);
  assert.equal(CsiProxyError.from(errno("EINVAL")).code, Code.Internal, "EINVAL from csi-proxy's own call: a bug");
  assert.equal(CsiProxyError.from(Object.assign(new Error("x"), { code: "ERR_INVALID_ARG_TYPE" })).code, Code.Internal, "Node's ERR_* codes are bugs");
  assert.equal(CsiProxyError.from(new TypeError("x is undefined")).code, Code.Internal);
  assert.equal(errnoCode("ENXIO"), Code.FailedPrecondition);
});

it("a mount whose server is gone answers Unavailable, whichever errno says so", () => {
  for (const e of ["ENOTCONN", "ECONNABORTED", "ESTALE", "EHOSTDOWN"]) assert.equal(errnoCode(e), Code.Unavailable, e);
});
