/**
 * The Win32 directory operations of the recursive delete, one by one, with the handle double
 * (test/doubles/fake-win32-handles.ts) on the local filesystem: what opening an entry does to a
 * directory, a file, a link and a volume mount point, listing passes, re-opening a level, and
 * whether the named path still opens to the held directory. Every handle is closed at the end.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Code, CsiProxyError } from "../../errors.ts";
import { IO_REPARSE_TAG_MOUNT_POINT } from "../../win32/win32-constants.ts";
import { openEntry, win32DirOps } from "./win32-dir-ops.ts";
import { fakeWin32Handles, LISTING_BATCH } from "../../../test/doubles/fake-win32-handles.ts";

function tmp(t: { after: (fn: () => void) => void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "w32ops-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test("openEntry: a directory is held with its identity; a file or link is deleted through its handle; a volume mount point is refused; missing is 'missing'", async (t) => {
  const d = tmp(t);
  fs.mkdirSync(path.join(d, "sub"));
  fs.writeFileSync(path.join(d, "f"), "");
  fs.mkdirSync(path.join(d, "target"));
  fs.symlinkSync(path.join(d, "target"), path.join(d, "link"));
  fs.mkdirSync(path.join(d, "vol"));
  const fake = fakeWin32Handles(new Map([[path.join(d, "vol"), IO_REPARSE_TAG_MOUNT_POINT]]));
  const sub = await openEntry(fake, path.join(d, "sub"), true);
  assert.equal(sub.kind, "dir");
  if (sub.kind === "dir") {
    assert.equal(sub.id, `${fs.statSync(path.join(d, "sub")).dev}:${fs.statSync(path.join(d, "sub")).ino}`);
    await fake.closeHandle(sub.h);
  }
  assert.equal((await openEntry(fake, path.join(d, "f"), true)).kind, "removed");
  assert.ok(!fs.existsSync(path.join(d, "f")));
  assert.equal((await openEntry(fake, path.join(d, "link"), true)).kind, "removed");
  assert.ok(fs.existsSync(path.join(d, "target")), "the link's target is untouched");
  const err = await openEntry(fake, path.join(d, "vol"), true, "empty").catch((e: CsiProxyError) => e);
  assert.ok(err instanceof CsiProxyError && err.code === Code.FailedPrecondition, `not a FailedPrecondition: ${JSON.stringify(err)}`);
  assert.equal(err.message, `empty ${path.join(d, "vol")}: a volume is mounted there; unmount it first`);
  assert.equal((await openEntry(fake, path.join(d, "gone"), true)).kind, "missing");
  // not for delete (the named directory of RmdirContents): a file is refused, not deleted
  fs.writeFileSync(path.join(d, "g"), "");
  const notDir = await openEntry(fake, path.join(d, "g"), false, "empty").catch((e: CsiProxyError) => e);
  assert.ok(notDir instanceof CsiProxyError && notDir.code === Code.FailedPrecondition);
  assert.ok(fs.existsSync(path.join(d, "g")));
  assert.equal(fake.open.size, 0, "every handle closed");
});

test("list reads at most `want` names per pass through a listing handle closed after it; end once a pass finds it empty", async (t) => {
  const d = tmp(t);
  const n = LISTING_BATCH * 2 + 10;
  for (let i = 0; i < n; i++) fs.writeFileSync(path.join(d, `f${i}`), "");
  const fake = fakeWin32Handles();
  const ops = win32DirOps(fake);
  const root = await openEntry(fake, d, false);
  if (root.kind !== "dir") throw new Error(root.kind);
  const part = await ops.list(root.h, root.id, LISTING_BATCH + 5, null, d, () => {});
  assert.deepEqual([part.entries.length, part.end], [LISTING_BATCH + 5, false]);
  assert.ok(part.entries.every((e) => e.dir === null), "a name's kind is learnt by opening it");
  const all = await ops.list(root.h, root.id, n + 1, new Set(["f0"]), d, () => {});
  assert.deepEqual([all.entries.length, all.end], [n - 1, false], "read to its end, but not empty: not done yet");
  const e = tmp(t);
  const empty = await openEntry(fake, e, false);
  if (empty.kind !== "dir") throw new Error(empty.kind);
  assert.deepEqual(await ops.list(empty.h, empty.id, 10, null, e, () => {}), { entries: [], end: true }, "a pass that finds it empty reads it to its end");
  await ops.close(empty.h);
  assert.equal(fake.open.size, 1, "only the held directory is open between passes");
  // the named path still opens to the held directory; replaced → why not
  assert.equal(await ops.whyNotNamed(root.h, root.id, d), null);
  const left = await ops.leftIn(root.h, d);
  assert.equal(left.there, true);
  assert.match(left.left, new RegExp(`^${n} entries left in it \\(f\\d+, f\\d+, f\\d+, …\\)$`));
  fs.renameSync(d, d + ".old");
  t.after(() => fs.rmSync(d + ".old", { recursive: true, force: true }));
  assert.equal(await ops.whyNotNamed(root.h, root.id, d), "it is gone");
  fs.mkdirSync(d);
  assert.equal(await ops.whyNotNamed(root.h, root.id, d), "it is another entry now");
  await ops.close(root.h);
  assert.equal(fake.open.size, 0);
});

test("reopen opens a level by its path (null when gone); removeDir deletes the emptied directory through its handle and closes it", async (t) => {
  const d = tmp(t);
  fs.mkdirSync(path.join(d, "a"));
  const fake = fakeWin32Handles();
  const ops = win32DirOps(fake);
  const a = await openEntry(fake, path.join(d, "a"), true);
  if (a.kind !== "dir") throw new Error(a.kind);
  const parent = await ops.reopen(a.h, d);
  assert.ok(parent !== null);
  assert.equal(parent.id, `${fs.statSync(d).dev}:${fs.statSync(d).ino}`);
  assert.equal(await ops.removeDir(parent.h, "a", a.h, path.join(d, "a")), "gone");
  assert.ok(!fs.existsSync(path.join(d, "a")));
  assert.equal(await ops.reopen(parent.h, path.join(d, "a")), null);
  await ops.close(parent.h);
  assert.equal(fake.open.size, 0, "every handle closed");
});
