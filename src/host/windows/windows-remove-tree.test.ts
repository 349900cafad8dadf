/**
 * The Windows recursive delete's bounds, on the local filesystem with the handle double
 * (test/doubles/fake-win32-handles.ts) standing in for koffi: handles held whatever the depth,
 * names listed per pass, re-entered levels checked by identity, cancellation, and what a failed
 * call answers. The same walk runs under Wine in wine-deep-delete.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { WindowsFilesystemHost } from "./filesystem.ts";

/** The documented bounds (docs/reliability.md), not read from the code under test. */
const HELD_DIRS = 16;
const BATCH = 1024;
import { Code, CsiProxyError } from "../../errors.ts";
import { fakeWin32Handles, LISTING_BATCH } from "../../../test/doubles/fake-win32-handles.ts";

/** A chain `depth` levels deep below `root` (names "d"), a file every 10th level; returns the deepest directory. */
function chain(root: string, depth: number): string {
  let p = root;
  for (let i = 0; i < depth; i++) {
    p = path.join(p, "d");
    fs.mkdirSync(p);
    if (i % 10 === 0) fs.writeFileSync(path.join(p, "f"), "x");
  }
  return p;
}

const ancestors = (p: string) => p.split(path.sep).filter(Boolean).length; // held by #pinAncestors ("/" counted via the root's own component)
const entries = (p: string): number => fs.readdirSync(p, { recursive: true }).length;

function tmp(t: { after: (fn: () => void) => void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "winrm-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test("a 400-deep chain is removed holding at most 16 directory handles (+ the entry being inspected + the ancestors), every one closed", async (t) => {
  const dir = tmp(t);
  const root = path.join(dir, "chain");
  fs.mkdirSync(root);
  chain(root, 400);
  const fake = fakeWin32Handles();
  await new WindowsFilesystemHost(fake).removeAll(root);
  assert.ok(!fs.existsSync(root));
  const pins = ancestors(root); // the ancestors of root, "/" included
  assert.ok(fake.maxOpen <= pins + HELD_DIRS + 1, `at most ${pins} ancestors + ${HELD_DIRS} + 1 handles open at once; saw ${fake.maxOpen}`);
  assert.equal(fake.open.size, 0, "every handle closed");
  // RmdirContents too: the named directory stays
  fs.mkdirSync(root);
  chain(root, 300);
  const fake2 = fakeWin32Handles();
  await new WindowsFilesystemHost(fake2).removeContents(root);
  assert.deepEqual(fs.readdirSync(root), []);
  assert.ok(fake2.maxOpen <= pins + HELD_DIRS + 1, `saw ${fake2.maxOpen}`);
  assert.equal(fake2.open.size, 0);
});

test("a 3 000-entry directory is listed at most BATCH names per pass, through a listing handle closed after each pass", async (t) => {
  const dir = tmp(t);
  const wide = path.join(dir, "wide");
  fs.mkdirSync(wide);
  for (let i = 0; i < 3000; i++) fs.writeFileSync(path.join(wide, `f${i}`), "");
  const fake = fakeWin32Handles();
  await new WindowsFilesystemHost(fake).removeAll(wide);
  assert.ok(!fs.existsSync(wide));
  assert.ok(fake.listed.length >= 3, `listed in passes: ${fake.listed.join(", ")}`);
  // a pass stops reading once it has BATCH names: at most one listing buffer more is read
  assert.ok(Math.max(...fake.listed) <= BATCH + LISTING_BATCH, `names read per pass: ${fake.listed.join(", ")}`);
  assert.ok(fake.maxOpen <= ancestors(wide) + 3, `handles: ${fake.maxOpen}`);
  assert.equal(fake.open.size, 0);
});

test("a level re-entered after its handle was given up must be the same directory: swapped → FailedPrecondition, the swapped-in directory untouched", async (t) => {
  const dir = tmp(t);
  const root = path.join(dir, "tree");
  fs.mkdirSync(root);
  chain(root, HELD_DIRS + 20);
  const level = path.join(root, "d", "d", "d"); // given up while the walk is deeper than HELD_DIRS
  const fake = fakeWin32Handles();
  let opens = 0;
  fake.onOpen = (p) => {
    if (p !== level || ++opens !== 2) return;
    // the walk climbs back to `level`: put another directory in its place
    fs.renameSync(level, level + ".moved");
    fs.mkdirSync(level);
    fs.writeFileSync(path.join(level, "precious"), "p");
  };
  const err = (await new WindowsFilesystemHost(fake).removeAll(root).catch((e) => e)) as CsiProxyError;
  assert.equal(opens, 2, "the level was re-opened");
  assert.equal(err.code, Code.FailedPrecondition, String(err));
  assert.match(err.message, /moved while its contents were being removed/);
  assert.match(err.message, /re-enter .*\/d\/d\/d: it is another directory now .*; removed \d+ entries below .*tree; .*tree is still there, 1 entry left in it \(d\)$/);
  assert.ok(fs.existsSync(level + ".moved"), "the moved level itself is not deleted through the new one's path");
  assert.ok(fs.existsSync(path.join(level, "precious")), "the directory put in its place is untouched");
  assert.equal(fake.open.size, 0, "every handle closed");
});

test("an aborted signal stops the walk: Cancelled with counts, handles closed, nothing changes after the answer", async (t) => {
  const dir = tmp(t);
  const root = path.join(dir, "tree");
  fs.mkdirSync(root);
  chain(root, 200);
  const fake = fakeWin32Handles();
  const ac = new AbortController();
  let opens = 0;
  fake.onOpen = () => {
    if (++opens === 120) ac.abort();
  };
  const err = (await new WindowsFilesystemHost(fake).removeAll(root, { signal: ac.signal }).catch((e) => e)) as CsiProxyError;
  assert.equal(err.code, Code.Canceled, String(err));
  assert.match(err.message, /removed \d+ entries below .*; .* is still there, 1 entry left in it \(d\)/);
  assert.equal(fake.open.size, 0, "every handle closed");
  const left = entries(root);
  assert.ok(left > 0);
  const openedAtAnswer = fake.opened.length;
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(entries(root), left, "nothing removed after the answer");
  assert.equal(fake.opened.length, openedAtAnswer, "nothing opened after the answer");
});

test("a delete that fails: its code, how many were removed and the first names left", async (t) => {
  const dir = tmp(t);
  const root = path.join(dir, "tree");
  fs.mkdirSync(root);
  for (let i = 0; i < 50; i++) fs.writeFileSync(path.join(root, `f${String(i).padStart(2, "0")}`), "");
  fs.mkdirSync(path.join(root, "sub"));
  fs.writeFileSync(path.join(root, "sub", "stuck"), "");
  const fake = fakeWin32Handles();
  fake.failDelete = (p) => (path.basename(p) === "stuck" ? new CsiProxyError(Code.PermissionDenied, `remove ${p}: access denied`) : undefined);
  const err = (await new WindowsFilesystemHost(fake).removeContents(root).catch((e) => e)) as CsiProxyError;
  assert.equal(err.code, Code.PermissionDenied, String(err));
  const removed = Number(/removed (\d+) entries/.exec(err.message)?.[1]);
  assert.equal(removed + entries(root), 52, `the count is true: ${err.message}`);
  assert.match(err.message, /^empty .*tree: remove .*stuck: access denied; removed \d+ entries below .*tree; \d+ entr(y|ies) left in it \(/);
  assert.equal(fake.open.size, 0);
});
