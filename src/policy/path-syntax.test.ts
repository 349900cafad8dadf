/** Windows path syntax as upstream checks it (exact texts), and what csi-proxy refuses beyond it. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, CsiProxyError } from "../errors.ts";
import { validateWindowsPathSyntax } from "./path-syntax.ts";
import { WINDOWS_SYNTAX_ERRORS } from "../../test/helpers/windows-path-syntax-cases.ts";

function invalidArgument(e: unknown, message: string): true {
  assert.ok(e instanceof CsiProxyError, `expected a CsiProxyError, got ${String(e)}`);
  assert.equal(e.code, Code.InvalidArgument, `code of "${e.message}"`);
  assert.equal(e.message, message);
  return true;
}

describe("validateWindowsPathSyntax()", () => {
  for (const c of WINDOWS_SYNTAX_ERRORS) {
    it(`rejects: ${c.name}`, () => {
      assert.throws(() => validateWindowsPathSyntax(c.path), (e) => invalidArgument(e, c.message));
    });
  }
  for (const [name, p] of [
    ["exactly 260 bytes", "C:\\var\\lib\\kubelet\\" + "a".repeat(241)],
    ["`..` inside a name (upstream rejects it)", "C:\\var\\lib\\kubelet\\a..b"],
    ["`..` at the start and end of names", "C:\\var\\lib\\kubelet\\..a\\b.."],
    ["single dot component", "C:\\var\\lib\\kubelet\\.\\x"],
    ["drive root", "C:\\"],
    ["lower-case drive", "c:\\x"],
    ["duplicate backslashes", "C:\\var\\\\lib"],
    ["spaces and unicode", "C:\\Program Files\\Über 💾"],
  ] as const) {
    it(`accepts: ${name}`, () => {
      validateWindowsPathSyntax(p);
    });
  }
});
