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
import { WindowsFilesystemHost, type ReparseProbe } from "../../src/host/windows/filesystem.ts";
import { FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT, IO_REPARSE_TAG_MOUNT_POINT, IO_REPARSE_TAG_SYMLINK } from "../../src/win32/win32.ts";
import { Code, CsiProxyError } from "../../src/errors.ts";

function probe(reparse: Map<string, number>): ReparseProbe {
  return {
    getFileAttributes: (p) => (fs.existsSync(p) ? FILE_ATTRIBUTE_DIRECTORY | (reparse.has(p) ? FILE_ATTRIBUTE_REPARSE_POINT : 0) : null),
    reparseTag: (p) => reparse.get(p) ?? null,
  };
}

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
