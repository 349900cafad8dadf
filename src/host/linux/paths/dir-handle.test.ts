import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { Code, CsiProxyError } from "../../../errors.ts";
import { mkdirAllNoFollow, openChildDir, openDirNoFollow, openParentOf, withParent } from "./dir-handle.ts";

const coded = (code: Code, message?: RegExp) => (err: unknown) => {
  assert.ok(err instanceof CsiProxyError, String(err));
  assert.equal(err.code, code, err.message);
  if (message) assert.match(err.message, message);
  return true;
};

describe("directory handles", { skip: process.platform !== "linux" && "Linux only" }, () => {
  let root: string;
  before(async () => {
    root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "dir-handle-")));
    await fs.mkdir(path.join(root, "a/b"), { recursive: true });
    await fs.symlink(path.join(root, "a"), path.join(root, "link"));
    await fs.writeFile(path.join(root, "file"), "x");
  });
  after(() => fs.rm(root, { recursive: true, force: true }));

  it("a held directory keeps naming the same directory after its path is renamed", async () => {
    await fs.mkdir(path.join(root, "moving"));
    const h = await openDirNoFollow(path.join(root, "moving"));
    try {
      await fs.rename(path.join(root, "moving"), path.join(root, "moved"));
      await fs.mkdir(path.join(root, "moving"));
      await h.use("inside", (p) => fs.writeFile(p, "held"));
      assert.equal(await fs.readFile(path.join(root, "moved/inside"), "utf8"), "held");
      assert.equal(await h.currentPath(), path.join(root, "moved"));
      assert.deepEqual(await fs.readdir(path.join(root, "moving")), []);
    } finally {
      await h.close();
    }
  });

  it("refuses links (FailedPrecondition), missing components (NotFound) and files on the way", async () => {
    await assert.rejects(openDirNoFollow(path.join(root, "link/b")), coded(Code.FailedPrecondition));
    await assert.rejects(openDirNoFollow(path.join(root, "nope/b")), coded(Code.NotFound));
    await assert.rejects(openDirNoFollow(path.join(root, "file")), coded(Code.FailedPrecondition));
    const a = await openDirNoFollow(path.join(root, "a"));
    try {
      assert.equal(await openChildDir(a, "missing-link-target").catch((e: unknown) => (e as CsiProxyError).code), Code.NotFound);
      const top = await openDirNoFollow(root);
      try {
        assert.equal(await openChildDir(top, "link"), null, "a link is not opened as a directory");
        assert.equal(await openChildDir(top, "file"), null);
      } finally {
        await top.close();
      }
    } finally {
      await a.close();
    }
  });

  it("close waits for uses in flight; use after close is refused, never a reused descriptor", async () => {
    const h = await openDirNoFollow(path.join(root, "a"));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const inFlight = h.use("b", async (p) => {
      await gate;
      return fs.stat(p);
    });
    let closed = false;
    const closing = h.close().then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(closed, false, "close waits for the use");
    assert.throws(() => h.at("b"), coded(Code.Internal, /used after close/));
    release();
    assert.ok((await inFlight).isDirectory());
    await closing;
    assert.equal(h.closed, true);
    await h.close(); // idempotent
  });

  it("mount ids: a child on the same mount has its parent's id; `..` reopens the parent", async () => {
    const a = await openDirNoFollow(path.join(root, "a"));
    const b = await openChildDir(a, "b");
    assert.ok(b);
    try {
      assert.equal(b.mountId, a.mountId);
      const parent = await openParentOf(b, path.join(root, "a"));
      try {
        const [s1, s2] = [await parent.stat(), await a.stat()];
        assert.equal(s1.ino, s2.ino);
      } finally {
        await parent.close();
      }
    } finally {
      await b.close();
      await a.close();
    }
  });

  it("withParent gives the held parent and the last name; mkdirAllNoFollow creates missing levels and stops at links", async () => {
    const seen = await withParent(path.join(root, "a/b/new"), async (parent, name) => [parent.path, name]);
    assert.deepEqual(seen, [path.join(root, "a/b"), "new"]);
    await mkdirAllNoFollow(path.join(root, "x/y/z"), 0o750);
    assert.ok((await fs.stat(path.join(root, "x/y/z"))).isDirectory());
    await mkdirAllNoFollow(path.join(root, "x/y/z"), 0o750); // existing is fine
    await assert.rejects(mkdirAllNoFollow(path.join(root, "link/new"), 0o750), coded(Code.FailedPrecondition));
    await assert.rejects(fs.stat(path.join(root, "a/new")), { code: "ENOENT" });
    await assert.rejects(mkdirAllNoFollow(path.join(root, "file/sub"), 0o750), (err: unknown) => err instanceof CsiProxyError);
  });
});
