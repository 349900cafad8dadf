// The Linux directory operations of the recursive delete, one by one on a scratch directory: what
// each reports for a directory, a file, a link and a missing name, listing passes, re-entering by
// `..`, and whether a held directory is still the one its path names.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Code, CsiProxyError } from "../../../errors.ts";
import { openDirNoFollow } from "./dir-handle.ts";
import { linuxDirId, linuxDirOps as ops, SMALL_DIR_BYTES } from "./linux-dir-ops.ts";

const skip = process.platform === "linux" ? false : "Linux only";

function scratch(t: { after: (fn: () => void) => void }): string {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "dirops-")));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

const noStop = () => {};

describe("linuxDirOps", { skip }, () => {
  it("openChild: a directory is held with its identity; a file or link is 'other'; a missing name 'missing'", async (t) => {
    const d = scratch(t);
    fs.mkdirSync(path.join(d, "sub"));
    fs.writeFileSync(path.join(d, "f"), "");
    fs.symlinkSync("/", path.join(d, "link"));
    const h = await openDirNoFollow(d);
    try {
      const id = await linuxDirId(h, d);
      const sub = await ops.openChild(h, id, "sub", `${d}/sub`);
      assert.equal(sub.kind, "dir");
      if (sub.kind === "dir") {
        assert.equal(sub.id.ino, BigInt(fs.statSync(path.join(d, "sub")).ino));
        assert.ok(sub.id.small);
        // `..` of the child is the held directory again
        const back = await ops.reopen(sub.h, d);
        assert.ok(back !== null && ops.same(back.id, id));
        await ops.close(back!.h);
        await ops.close(sub.h);
      }
      assert.equal((await ops.openChild(h, id, "f", `${d}/f`)).kind, "other");
      assert.equal((await ops.openChild(h, id, "link", `${d}/link`)).kind, "other");
      assert.equal((await ops.openChild(h, id, "nope", `${d}/nope`)).kind, "missing");
    } finally {
      await h.close();
    }
  });

  it("unlink removes the entry itself (a link, never its target); removeDir: gone, not empty → FailedPrecondition, a link now → 'link'", async (t) => {
    const d = scratch(t);
    fs.mkdirSync(path.join(d, "target"));
    fs.writeFileSync(path.join(d, "target", "kept"), "");
    fs.symlinkSync(path.join(d, "target"), path.join(d, "link"));
    fs.mkdirSync(path.join(d, "empty"));
    fs.mkdirSync(path.join(d, "full"));
    fs.writeFileSync(path.join(d, "full", "x"), "");
    const h = await openDirNoFollow(d);
    try {
      const id = await linuxDirId(h, d);
      assert.equal(await ops.unlink(h, "link", `${d}/link`), "gone");
      assert.ok(fs.existsSync(path.join(d, "target", "kept")), "the link's target is untouched");
      assert.equal(await ops.unlink(h, "link", `${d}/link`), "missing");
      assert.equal(await ops.unlink(h, "empty", `${d}/empty`), "dir");
      const empty = await ops.openChild(h, id, "empty", `${d}/empty`);
      assert.equal(empty.kind, "dir");
      if (empty.kind === "dir") assert.equal(await ops.removeDir(h, "empty", empty.h, `${d}/empty`), "gone");
      assert.ok(!fs.existsSync(path.join(d, "empty")));
      const full = await ops.openChild(h, id, "full", `${d}/full`);
      if (full.kind !== "dir") throw new Error(full.kind);
      const err = await ops.removeDir(h, "full", full.h, `${d}/full`).catch((e: CsiProxyError) => e);
      assert.ok(err instanceof CsiProxyError && err.code === Code.FailedPrecondition, String(err));
      assert.match(err.message, /directory not empty/);
      assert.ok(full.h.closed, "removeDir closes the child whatever happens");
      // emptied, then swapped for a link: rmdir by name says ENOTDIR → the link goes as an entry
      const swap = await ops.openChild(h, id, "target", `${d}/target`);
      if (swap.kind !== "dir") throw new Error(swap.kind);
      fs.renameSync(path.join(d, "target"), path.join(d, "moved"));
      fs.symlinkSync(path.join(d, "moved"), path.join(d, "target"));
      assert.equal(await ops.removeDir(h, "target", swap.h, `${d}/target`), "link");
    } finally {
      await h.close();
    }
  });

  it("list: at most `want` names, `skip` left out, `end` once read to the end — small and large directories alike", async (t) => {
    const d = scratch(t);
    const small = path.join(d, "small");
    const large = path.join(d, "large");
    fs.mkdirSync(small);
    fs.mkdirSync(large);
    for (let i = 0; i < 10; i++) fs.writeFileSync(path.join(small, `f${i}`), "");
    fs.mkdirSync(path.join(small, "sub"));
    const long = "x".repeat(200);
    for (let i = 0; fs.statSync(large).size <= SMALL_DIR_BYTES; i++) fs.writeFileSync(path.join(large, `${long}${i}`), "");
    const n = fs.readdirSync(large).length;
    for (const [p, count] of [[small, 11], [large, n]] as const) {
      const h = await openDirNoFollow(p);
      try {
        const id = await linuxDirId(h, p);
        assert.equal(id.small, p === small);
        const part = await ops.list(h, id, 5, null, p, noStop);
        assert.deepEqual([part.entries.length, part.end], [5, false]);
        const skipped = new Set(fs.readdirSync(p).slice(0, 2));
        const all = await ops.list(h, id, count + 10, skipped, p, noStop);
        assert.deepEqual([all.entries.length, all.end], [count - 2, true]);
        assert.ok(!all.entries.some((e) => skipped.has(e.name)));
        if (p === small) assert.deepEqual(all.entries.filter((e) => e.dir).map((e) => e.name), skipped.has("sub") ? [] : ["sub"]);
      } finally {
        await h.close();
      }
    }
  });

  it("whyNotNamed: null while the path names the held directory; why not once it was renamed or replaced; leftIn counts what is left", async (t) => {
    const d = scratch(t);
    const p = path.join(d, "named");
    fs.mkdirSync(p);
    fs.writeFileSync(path.join(p, "a"), "");
    const h = await openDirNoFollow(p);
    try {
      const id = await linuxDirId(h, p);
      assert.equal(await ops.whyNotNamed(h, id, p), null);
      assert.deepEqual(await ops.leftIn(h, p), { there: true, left: "1 entry left in it (a)" });
      fs.renameSync(p, p + ".old");
      fs.mkdirSync(p);
      assert.equal(await ops.whyNotNamed(h, id, p), `it is now at ${p}.old`);
    } finally {
      await h.close();
    }
  });
});
