import assert from "node:assert/strict";
import { it } from "node:test";
import { Code } from "../errors.ts";
import { fsError } from "./fs-error.ts";
import { windowsFsError } from "./windows/windows-fs-error.ts";

const errno = (code: string) => Object.assign(new Error(`${code}: raw libuv text`), { code });

it("fsError: `<what> <path>: <errno>: <reason>` with the errno's gRPC code, cause kept", () => {
  const cases: [string, Code, string][] = [
    ["ENOENT", Code.NotFound, "no such file or directory"],
    ["EEXIST", Code.AlreadyExists, "already exists"],
    ["ENOTEMPTY", Code.FailedPrecondition, "directory not empty"],
    ["EACCES", Code.PermissionDenied, "permission denied"],
    ["EBUSY", Code.FailedPrecondition, "resource busy (mounted?)"],
    ["ENAMETOOLONG", Code.InvalidArgument, "enametoolong"],
  ];
  for (const [code, grpc, reason] of cases) {
    const raw = errno(code);
    const e = fsError(raw, "mkdir", "/var/lib/kubelet/x");
    assert.equal(e.code, grpc, code);
    assert.equal(e.message, `mkdir /var/lib/kubelet/x: ${code}: ${reason}`);
    assert.equal(e.cause, raw);
  }
  assert.equal(fsError(new Error("not an errno"), "stat", "/x").code, Code.Internal);
  assert.match(fsError("odd", "stat", "/x").message, /^stat \/x: odd$/);
});

it("windowsFsError: Go's os wording with Windows' message, never a Node errno name, fsError's code", () => {
  const e = windowsFsError(errno("ENOENT"), "CreateFile", "C:\\var\\lib\\kubelet\\x");
  assert.equal(e.code, Code.NotFound);
  assert.match(e.message, /^CreateFile C:\\var\\lib\\kubelet\\x: The system cannot find the file specified\.$/);
  const other = windowsFsError(errno("ELOOP"), "open", "C:\\x");
  assert.equal(other.code, Code.FailedPrecondition);
  assert.equal(other.message, "open C:\\x: the host call failed");
  assert.ok(!/E[A-Z]{3,}/.test(e.message + other.message));
});
