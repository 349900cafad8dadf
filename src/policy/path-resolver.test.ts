/** The resolver contract over the real filesystem: realpath, with dangling links followed to where they point. */
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { createFsResolver } from "./path-resolver.ts";

describe("createFsResolver() on linux", { skip: process.platform === "win32" ? "needs POSIX symlinks" : false }, () => {
  let root = "";
  const r = (p: string) => `${root}/${p}`;

  before(async () => {
    root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "path-resolver-")));
    await fs.mkdir(r("kubelet/pods"), { recursive: true });
    await fs.writeFile(r("kubelet/file"), "f");
    await fs.symlink("pods", r("kubelet/in")); // pointing in
    await fs.symlink(r("outside/missing"), r("kubelet/dangling")); // dangling, pointing out
    await fs.symlink("dangling", r("kubelet/chain")); // link to a dangling link
    await fs.symlink("loop2", r("kubelet/loop1"));
    await fs.symlink("loop1", r("kubelet/loop2"));
  });
  after(async () => {
    if (root) await fs.rm(root, { recursive: true, force: true });
  });

  it("follows the resolver contract", async () => {
    const resolve = createFsResolver(fs, "linux");
    assert.equal(await resolve(r("kubelet/in")), r("kubelet/pods"));
    assert.equal(await resolve(r("kubelet/nothing")), null);
    assert.equal(await resolve(r("kubelet/file/x")), null); // ENOTDIR
    assert.equal(await resolve(r("kubelet/dangling")), r("outside/missing"));
    assert.equal(await resolve(r("kubelet/chain")), r("outside/missing"));
    assert.equal(await resolve(r("kubelet/dangling/x")), null);
    await assert.rejects(resolve(r("kubelet/loop1")), { code: "ELOOP" });
  });
});
