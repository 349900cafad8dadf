import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { it } from "node:test";
import { inspectDirectory } from "./inspect-directory.ts";
import { symlinkAt } from "./linux/paths/symlink-at.ts";

it("inspectDirectory: missing → null, file → not a directory, empty and non-empty directories", async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "inspect-"));
  try {
    assert.equal(await inspectDirectory(path.join(dir, "missing")), null);
    await fs.writeFile(path.join(dir, "f"), "");
    assert.equal(await inspectDirectory(path.join(dir, "f/below")), null, "ENOTDIR is missing too");
    assert.deepEqual(await inspectDirectory(path.join(dir, "f")), { isDirectory: false, empty: false });
    await fs.mkdir(path.join(dir, "d"));
    assert.deepEqual(await inspectDirectory(path.join(dir, "d")), { isDirectory: true, empty: true });
    assert.deepEqual(await inspectDirectory(dir), { isDirectory: true, empty: false });
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

it("symlinkAt creates the link inside the held parent and refuses a parent reached through a link", { skip: process.platform !== "linux" && "Linux only" }, async () => {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "symlink-at-")));
  try {
    await fs.mkdir(path.join(dir, "real"));
    await fs.symlink(path.join(dir, "real"), path.join(dir, "via"));
    await symlinkAt("/target/of/link", path.join(dir, "real/l"));
    assert.equal(await fs.readlink(path.join(dir, "real/l")), "/target/of/link");
    await assert.rejects(symlinkAt("/t", path.join(dir, "via/l2")), (err: unknown) => (err as { code?: number }).code === 9);
    await assert.rejects(fs.lstat(path.join(dir, "real/l2")), { code: "ENOENT" });
    await assert.rejects(symlinkAt("/t", path.join(dir, "real/l")), (err: unknown) => (err as { code?: number }).code === 6, "an existing name is AlreadyExists");
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});
