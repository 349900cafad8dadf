// Unit tests of the Linux recursive delete (remove-tree.ts) on a temporary directory: descriptor
// bound on a deep chain, a cancellation that stops the walk before the call settles, a failure that
// says what was removed and what is left.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { closeSync, constants, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { removeContents, removeTree, OPEN_DIRS } from "./remove-tree.ts";
import { Code, CsiProxyError } from "../../../errors.ts";
import { createRequire, syncBuiltinESMExports } from "node:module";

const fsp = createRequire(import.meta.url)("node:fs/promises") as typeof import("node:fs/promises");

const O_PATH = 0o10000000;
const skip = process.platform !== "linux" ? "Linux only" : undefined;

function chain(base: string, depth: number) {
  mkdirSync(base, { recursive: true });
  let fd = openSync(base, O_PATH | constants.O_DIRECTORY);
  for (let i = 0; i < depth; i++) {
    mkdirSync(`/proc/self/fd/${fd}/d`);
    writeFileSync(`/proc/self/fd/${fd}/f`, "x");
    const next = openSync(`/proc/self/fd/${fd}/d`, O_PATH | constants.O_DIRECTORY);
    closeSync(fd);
    fd = next;
  }
  closeSync(fd);
}

const count = (dir: string): number => {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) n += 1 + (e.isDirectory() ? count(path.join(dir, e.name)) : 0);
  return n;
};

describe("removeTree / removeContents", { skip: skip ?? false }, () => {
  it("keeps at most OPEN_DIRS + a few descriptors open on a 400-deep chain", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "rt-deep-"));
    try {
      chain(path.join(root, "t"), 400);
      const fd0 = readdirSync("/proc/self/fd").length;
      let fdMax = fd0;
      const timer = setInterval(() => (fdMax = Math.max(fdMax, readdirSync("/proc/self/fd").length)), 1);
      await removeTree(path.join(root, "t"));
      clearInterval(timer);
      assert.equal(existsSync(path.join(root, "t")), false);
      assert.ok(fdMax - fd0 <= OPEN_DIRS + 12, `descriptors grew by ${fdMax - fd0}`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("an abort stops the walk: rejects Cancelled with the count removed, nothing changes after", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "rt-abort-"));
    try {
      for (let d = 0; d < 10; d++) {
        mkdirSync(path.join(root, "t", `d${d}`), { recursive: true });
        for (let i = 0; i < 300; i++) writeFileSync(path.join(root, "t", `d${d}`, `f${i}`), "");
      }
      // aborted as the walk's 100th unlink starts (not after a time: on tmpfs 3 000 files go in a few ms)
      const ac = new AbortController();
      const unlink = fsp.unlink;
      let unlinks = 0;
      fsp.unlink = (p: import("node:fs").PathLike) => {
        if (++unlinks === 100) ac.abort();
        return unlink(p);
      };
      syncBuiltinESMExports();
      const err = await removeContents(path.join(root, "t"), { signal: ac.signal })
        .then(() => null, (e: unknown) => e)
        .finally(() => {
          fsp.unlink = unlink;
          syncBuiltinESMExports();
        });
      assert.ok(err instanceof CsiProxyError, `rejected: ${String(err)}`);
      assert.equal(err.code, Code.Canceled);
      assert.match(err.message, /removed \d+ entries below .*; \d+ entr(y|ies) left in it \(/);
      const left = count(path.join(root, "t"));
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(count(path.join(root, "t")), left, "nothing removed after the answer");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  // d3 holds 3000 files: unlinks still running after the failure would change the tree after the answer.
  it("an immutable file stops the walk: PermissionDenied naming it, with counts, nothing changes after", { skip: process.getuid?.() !== 0 ? "needs root (chattr)" : false }, async () => {
    const root = mkdtempSync(path.join(tmpdir(), "rt-immutable-"));
    const stuck = path.join(root, "t", "d3", "f7");
    try {
      for (let d = 0; d < 6; d++) {
        mkdirSync(path.join(root, "t", `d${d}`, "e"), { recursive: true });
        for (let i = 0; i < (d === 3 ? 3000 : 40); i++) writeFileSync(path.join(root, "t", `d${d}`, `f${i}`), "");
      }
      execFileSync("chattr", ["+i", stuck]);
      const err = await removeTree(path.join(root, "t")).then(() => null, (e: unknown) => e);
      assert.ok(err instanceof CsiProxyError);
      assert.equal(err.code, Code.PermissionDenied);
      assert.match(err.message, /d3\/f7: EPERM/);
      assert.match(err.message, /removed \d+ entries below .* is still there, \d+ entr(y|ies) left in it/);
      const left = count(path.join(root, "t"));
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(count(path.join(root, "t")), left);
      assert.ok(existsSync(stuck));
    } finally {
      try {
        execFileSync("chattr", ["-i", stuck]);
      } catch {}
      rmSync(root, { recursive: true, force: true });
    }
  });
});
