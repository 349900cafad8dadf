/**
 * WindowsFilesystemHost decisions that do not need Windows: volume mount points are recognised by
 * reparse tag (not by Node's lstat, which shows them as plain directories), and removeAll never
 * deletes through a mount point. Runs on the local filesystem with a fake GetFileAttributes /
 * reparse-tag probe standing in for koffi.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { WindowsFilesystemHost } from "../../src/host/windows/filesystem.ts";
import { fakeWin32Handles } from "../doubles/fake-win32-handles.ts";
import { IO_REPARSE_TAG_MOUNT_POINT, IO_REPARSE_TAG_SYMLINK } from "../../src/win32/win32-constants.ts";
import { Code, CsiProxyError } from "../../src/errors.ts";

const probe = fakeWin32Handles;

test("isMountPoint: only a directory whose reparse tag is IO_REPARSE_TAG_MOUNT_POINT and whose volume is reachable", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "winfs-"));
  try {
    for (const d of ["mnt", "plain", "other"]) fs.mkdirSync(path.join(dir, d));
    const tags = new Map([
      [path.join(dir, "mnt"), IO_REPARSE_TAG_MOUNT_POINT],
      [path.join(dir, "other"), 0x9000001a /* cloud files */],
      [path.join(dir, "gone"), IO_REPARSE_TAG_MOUNT_POINT],
    ]);
    const host = new WindowsFilesystemHost(probe(tags));
    assert.equal(await host.isMountPoint(path.join(dir, "mnt")), true);
    assert.equal(await host.isMountPoint(path.join(dir, "plain")), false);
    assert.equal(await host.isMountPoint(path.join(dir, "other")), false);
    assert.equal(await host.isMountPoint(path.join(dir, "gone")), false);
    assert.equal(await host.lstat(path.join(dir, "mnt")), "directory");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("removeAll refuses to delete through a volume mount point, and removes other reparse points as entries", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "winfs-"));
  try {
    const staging = path.join(dir, "staging");
    fs.mkdirSync(path.join(staging, "mnt"), { recursive: true });
    fs.writeFileSync(path.join(staging, "mnt", "precious-data"), "x");
    fs.writeFileSync(path.join(staging, "file"), "y");
    const host = new WindowsFilesystemHost(probe(new Map([[path.join(staging, "mnt"), IO_REPARSE_TAG_MOUNT_POINT]])));
    const err = await host.removeAll(staging).catch((e) => e);
    assert.equal((err as CsiProxyError).code, Code.FailedPrecondition, String(err));
    assert.match(String(err.message), /a volume is mounted there; unmount it first/);
    assert.ok(fs.existsSync(path.join(staging, "mnt", "precious-data")), "the mounted volume's data is untouched");

    fs.mkdirSync(path.join(dir, "target"));
    fs.writeFileSync(path.join(dir, "target", "keep"), "z");
    fs.symlinkSync(path.join(dir, "target"), path.join(dir, "link"));
    const tags = new Map([[path.join(dir, "link"), IO_REPARSE_TAG_SYMLINK]]);
    const host2 = new WindowsFilesystemHost(probe(tags));
    await host2.removeAll(path.join(dir, "link"));
    assert.ok(!fs.existsSync(path.join(dir, "link")));
    assert.ok(fs.existsSync(path.join(dir, "target", "keep")), "a link is removed, never its target");
    await host2.removeAll(path.join(dir, "nothing-here"));
    await host2.removeAll(path.join(dir, "target"));
    assert.ok(!fs.existsSync(path.join(dir, "target")));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("removeAll/removeContents act through handles: ancestors held, a link ancestor refused, a volume mount point not emptied, no handle left open", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "winfs-"));
  try {
    fs.mkdirSync(path.join(dir, "real", "tree", "sub"), { recursive: true });
    fs.writeFileSync(path.join(dir, "real", "tree", "sub", "f"), "x");
    fs.mkdirSync(path.join(dir, "outside"));
    fs.writeFileSync(path.join(dir, "outside", "keep"), "k");
    fs.symlinkSync(path.join(dir, "outside"), path.join(dir, "swapped"));
    const fake = probe(new Map());
    const host = new WindowsFilesystemHost(fake);
    // an ancestor that is a link (swapped since the policy resolved it): refused, nothing touched
    const err = await host.removeAll(path.join(dir, "swapped", "keep")).catch((e) => e);
    assert.equal((err as CsiProxyError).code, Code.FailedPrecondition, String(err));
    assert.ok(fs.existsSync(path.join(dir, "outside", "keep")));
    const err2 = await host.removeContents(path.join(dir, "swapped")).catch((e) => e);
    assert.equal((err2 as CsiProxyError).code, Code.FailedPrecondition, String(err2));
    assert.ok(fs.existsSync(path.join(dir, "outside", "keep")));
    // every ancestor and every entry is opened (held) before it is acted on
    await host.removeAll(path.join(dir, "real", "tree"));
    assert.ok(!fs.existsSync(path.join(dir, "real", "tree")));
    for (const p of [dir, path.join(dir, "real"), path.join(dir, "real", "tree"), path.join(dir, "real", "tree", "sub", "f")]) {
      assert.ok(fake.opened.includes(p), `${p} opened`);
    }
    assert.equal(fake.open.size, 0, "every handle closed");
    await host.removeAll(path.join(dir, "missing", "x")); // a missing ancestor: nothing to do
    await assert.rejects(host.removeContents(path.join(dir, "missing")), (e: CsiProxyError) => e.code === Code.NotFound);
    // a link is created only below held ancestors; under a swapped ancestor it is refused
    const err4 = await host.symlink(path.join(dir, "real"), path.join(dir, "swapped", "new-link")).catch((e) => e);
    assert.equal((err4 as CsiProxyError).code, Code.FailedPrecondition, String(err4));
    assert.ok(!fs.existsSync(path.join(dir, "outside", "new-link")));
    await host.symlink(path.join(dir, "real"), path.join(dir, "new-link"));
    assert.ok(fs.lstatSync(path.join(dir, "new-link")).isSymbolicLink());
    assert.equal(fake.open.size, 0, "every handle closed");
    // a volume mount point is not emptied
    fs.mkdirSync(path.join(dir, "mnt"));
    fs.writeFileSync(path.join(dir, "mnt", "volume-data"), "v");
    const host2 = new WindowsFilesystemHost(probe(new Map([[path.join(dir, "mnt"), IO_REPARSE_TAG_MOUNT_POINT]])));
    const err3 = await host2.removeContents(path.join(dir, "mnt")).catch((e) => e);
    assert.equal((err3 as CsiProxyError).code, Code.FailedPrecondition, String(err3));
    assert.ok(fs.existsSync(path.join(dir, "mnt", "volume-data")));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("mkdirAll under a file names the first ancestor that is a file, as Go's os.MkdirAll on Windows", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "winfs-"));
  try {
    fs.writeFileSync(path.join(dir, "file.txt"), "x");
    const host = new WindowsFilesystemHost(probe(new Map()));
    for (const below of [["x"], ["x", "y", "z"]]) {
      const err = await host.mkdirAll(path.join(dir, "file.txt", ...below)).catch((e) => e);
      assert.ok(err instanceof CsiProxyError, String(err));
      assert.equal(err.code, Code.FailedPrecondition);
      assert.equal(err.message, `mkdir ${path.join(dir, "file.txt")}: The system cannot find the path specified.`);
    }
    assert.equal(fs.readFileSync(path.join(dir, "file.txt"), "utf8"), "x", "the file is untouched");
    // a directory ancestor: created as asked
    await host.mkdirAll(path.join(dir, "d", "e"));
    assert.ok(fs.statSync(path.join(dir, "d", "e")).isDirectory());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
