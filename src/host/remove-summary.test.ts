import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { it } from "node:test";
import { Code, CsiProxyError } from "../errors.ts";
import { leftInDir, removeFailure, removeSummary } from "./remove-summary.ts";

it("leftInDir counts and names the first three entries; empty and unreadable are said so", async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "left-"));
  try {
    assert.equal(await leftInDir(dir), "it is empty");
    await fs.writeFile(path.join(dir, "a"), "");
    assert.equal(await leftInDir(dir), "1 entry left in it (a)");
    for (const n of ["b", "c", "d", "e"]) await fs.writeFile(path.join(dir, n), "");
    const text = await leftInDir(dir);
    assert.match(text, /^5 entries left in it \([a-e], [a-e], [a-e], …\)$/);
    assert.equal(await leftInDir(path.join(dir, "missing")), "what is left in it could not be listed");
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

it("removeSummary and removeFailure say what was and was not removed, keeping the failure's code", () => {
  assert.equal(removeSummary(1, "/k/p", false, "it is empty"), "removed 1 entry below /k/p; it is empty");
  const summary = removeSummary(7, "/k/p", true, "2 entries left in it (x, y)");
  assert.equal(summary, "removed 7 entries below /k/p; /k/p is still there, 2 entries left in it (x, y)");
  const e = removeFailure(new CsiProxyError(Code.PermissionDenied, "unlink /k/p/x: EPERM: permission denied"), "remove", "/k/p", summary);
  assert.equal(e.code, Code.PermissionDenied);
  assert.equal(e.message, `remove /k/p: unlink /k/p/x: EPERM: permission denied; ${summary}`);
  assert.equal(removeFailure(new Error("boom"), "remove", "/k/p", summary).code, Code.Internal);
});
