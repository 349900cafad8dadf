/**
 * RmdirContents whose named directory is swapped out part-way through the walk: renamed away (to
 * another place inside the allowed directory, or outside it) and replaced by a new directory, a bind
 * mount of the original or a symbolic link to it. The walk must stop at its next listing pass with
 * FailedPrecondition and counts, leave the moved original with what it had not yet reached, never
 * touch what now stands at the path, and change nothing after the answer.
 *
 * Deterministic: the swap runs at a chosen point of the walk — the test renames synchronously inside
 * a wrapper of the walker's third directory read (node:fs/promises readdir/opendir, Linux) or of the
 * first entry open after the third listing (the handle double, Windows) — so it lands mid-walk on any
 * machine; everything else is the real code on the real filesystem. Linux walker:
 * src/host/linux/paths/remove-tree.ts; Windows walker: src/host/windows/windows-remove-tree.ts under
 * test/doubles/fake-win32-handles.ts. Figures: "swap-figures {json}" lines (docs/reliability.md,
 * "Recursive delete", "Tests and outcomes").
 */
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { removeContents } from "../../src/host/linux/paths/remove-tree.ts";
import { WindowsFilesystemHost } from "../../src/host/windows/filesystem.ts";
import { Code, CsiProxyError } from "../../src/errors.ts";
import { fakeWin32Handles } from "../doubles/fake-win32-handles.ts";
import { IO_REPARSE_TAG_MOUNT_POINT } from "../../src/win32/win32-constants.ts";

const SUBDIRS = 8;
const FILES = 12;
const linuxSkip = process.platform !== "linux" ? "Linux only" : undefined;
const isRoot = process.getuid?.() === 0;

type Kind = "new directory" | "bind mount" | "mount point" | "symlink";
type Dest = "inside" | "outside";
const CASES: Array<[Kind, Dest]> = [
  ["new directory", "inside"], ["new directory", "outside"],
  ["bind mount", "inside"], ["bind mount", "outside"],
  ["symlink", "inside"], ["symlink", "outside"],
];

/** Every entry below `dir` (relative names, sorted): equal strings mean nothing changed. */
function treeState(dir: string): string {
  return (fs.readdirSync(dir, { recursive: true }) as string[]).sort().join("\n");
}

/** The tree emptied: FILES files at the top and in each of SUBDIRS subdirectories (each with a nested one). */
function buildTree(p: string): number {
  fs.mkdirSync(p, { recursive: true });
  let n = 0;
  for (let f = 0; f < FILES; f++, n++) fs.writeFileSync(path.join(p, `f${f}`), "x");
  for (let s = 0; s < SUBDIRS; s++) {
    const d = path.join(p, `s${s}`, "n");
    fs.mkdirSync(d, { recursive: true });
    n += 2;
    for (let f = 0; f < FILES; f++, n += 2) {
      fs.writeFileSync(path.join(p, `s${s}`, `f${f}`), "x");
      fs.writeFileSync(path.join(d, `f${f}`), "x");
    }
  }
  return n;
}

/**
 * Renames `p` to `moved` and puts `kind` at `p`. A new directory (or a "mount point": a new directory
 * the Windows double reports as a volume mount point) holds files of its own, named `prefix` + the
 * tree's names; the bind mount and the symlink show the moved original at `p`.
 */
function swap(p: string, moved: string, kind: Kind, prefix: string): void {
  fs.renameSync(p, moved);
  if (kind === "symlink") return fs.symlinkSync(moved, p);
  fs.mkdirSync(p);
  if (kind === "bind mount") return void execFileSync("mount", ["--bind", moved, p]);
  for (let f = 0; f < FILES; f++) fs.writeFileSync(path.join(p, `${prefix}f${f}`), "new");
  fs.mkdirSync(path.join(p, `${prefix}s0`));
  fs.writeFileSync(path.join(p, `${prefix}s0`, "keep"), "new");
}

function undoSwap(p: string, kind: Kind): void {
  if (kind === "bind mount") execFileSync("umount", [p], { stdio: "ignore" });
}

interface Figures {
  walker: string;
  case: string;
  code: number | string;
  removed: number;
  leftInMoved: number;
  total: number;
  message?: string;
}

/**
 * Runs one case; `empty(p, swapNow)` starts the walk and calls `swapNow()` at the moment the swap is
 * to happen (the walk part-way through its second subdirectory); `prefix` names the new directory's entries.
 */
async function runCase(base: string, walker: string, kind: Kind, dest: Dest, prefix: string,
  empty: (p: string, swapNow: () => void) => Promise<void>): Promise<Figures> {
  const allowed = path.join(base, "kubelet");
  const p = path.join(allowed, "pods", "victim");
  const moved = dest === "inside" ? path.join(allowed, "elsewhere") : path.join(base, "outside", "victim");
  fs.mkdirSync(path.dirname(moved), { recursive: true });
  const total = buildTree(p);
  let swapped = false;
  let newState = "";
  const err = await empty(p, () => {
    if (swapped) return;
    swap(p, moved, kind, prefix);
    swapped = true;
    if (kind !== "bind mount" && kind !== "symlink") newState = treeState(p);
  }).then(() => undefined, (e: unknown) => e as CsiProxyError);
  try {
    assert.ok(swapped, `${walker} ${kind}/${dest}: the walk reached its third listing pass`);
    const movedState = treeState(moved);
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(treeState(moved), movedState, "nothing changes in the moved directory after the answer");
    if (newState !== "") assert.equal(treeState(p), newState, "the directory now at the path is untouched");
    const left = movedState === "" ? 0 : movedState.split("\n").length;
    const removed = Number(/removed (\d+) entr/.exec(err?.message ?? "")?.[1] ?? NaN);
    return { walker, case: `${kind}/${dest}`, code: err?.code ?? "OK", removed, leftInMoved: left, total, message: err?.message };
  } finally {
    if (swapped) undoSwap(p, kind);
    fs.rmSync(p, { recursive: true, force: true });
    fs.rmSync(moved, { recursive: true, force: true });
  }
}

function check(f: Figures): void {
  process.stdout.write(`swap-figures ${JSON.stringify({ ...f, message: undefined })}\n`);
  assert.equal(f.code, Code.FailedPrecondition, `${f.walker} ${f.case}: FailedPrecondition, got ${f.code}: ${f.message}`);
  assert.match(f.message!, /no longer names the directory being emptied/);
  assert.match(f.message!, /removed \d+ entr(y|ies) below /, "the answer says how much was removed");
  assert.ok(f.leftInMoved > 0, `${f.case}: the walk stopped before emptying the moved directory`);
  assert.equal(f.removed + f.leftInMoved, f.total, `${f.case}: the count is true (removed ${f.removed}, left ${f.leftInMoved} of ${f.total})`);
}

describe("RmdirContents: the named directory swapped mid-walk", () => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), "csi-swap-"));
  after(() => fs.rmSync(base, { recursive: true, force: true }));

  describe("Linux walker", { skip: linuxSkip ?? false }, () => {
    const require = createRequire(import.meta.url);
    const fsp = require("node:fs/promises") as typeof import("node:fs/promises");

    /** Calls `onListing(n)` before the walker's n-th directory read (readdir/opendir of /proc/self/fd/N) while `run` runs. */
    async function withListingHook<T>(onListing: (n: number) => void, run: () => Promise<T>): Promise<T> {
      const { readdir, opendir } = fsp;
      let n = 0;
      const seen = (p: unknown) => {
        if (typeof p === "string" && /^\/proc\/self\/fd\/\d+$/.test(p)) onListing(++n);
      };
      Object.assign(fsp, {
        readdir: (p: unknown, ...rest: unknown[]) => (seen(p), (readdir as (...a: unknown[]) => unknown)(p, ...rest)),
        opendir: (p: unknown, ...rest: unknown[]) => (seen(p), (opendir as (...a: unknown[]) => unknown)(p, ...rest)),
      });
      syncBuiltinESMExports();
      try {
        return await run();
      } finally {
        Object.assign(fsp, { readdir, opendir });
        syncBuiltinESMExports();
      }
    }

    for (const [kind, dest] of CASES) {
      it(`${kind}, moved ${dest} the allowed directory: FailedPrecondition with counts, nothing touched after`, { skip: kind === "bind mount" && !isRoot ? "needs root (mount --bind)" : false }, async () => {
        // the swap: at the walk's third listing pass (the top level and one subdirectory listed, inside the second)
        check(await runCase(base, "linux", kind, dest, "", (p, swapNow) => withListingHook((n) => n === 3 && swapNow(), () => removeContents(p))));
      });
    }
  });

  // Windows refuses to rename the named directory while the walk holds it (no FILE_SHARE_DELETE: the
  // last test); these cases are a filesystem that ignores the share mode. The walker opens entries by
  // path, so after the swap it may open what the path shows until its next listing pass: the new
  // directory's names differ from the tree's here (on Linux they are the same).
  describe("Windows walker (handle double)", () => {
    const WINDOWS_CASES: Array<[Kind, Dest]> = CASES.map(([k, d]) => [k === "bind mount" ? "mount point" : k, d]);
    for (const [kind, dest] of WINDOWS_CASES) {
      it(`${kind}, moved ${dest} the allowed directory: FailedPrecondition with counts, nothing touched after`, async () => {
        const reparse = new Map<string, number>();
        const fake = fakeWin32Handles(reparse);
        const f = await runCase(base, "windows", kind, dest, "new-", (p, swapNow) => {
          // the swap: at the first entry opened after the third listing pass (inside the second subdirectory)
          const openListing = fake.openListing;
          let listings = 0;
          fake.openListing = (h, shown) => (listings++, openListing(h, shown));
          fake.onOpen = () => {
            if (listings !== 3 || reparse.size > 0) return;
            swapNow();
            if (kind === "mount point") reparse.set(p, IO_REPARSE_TAG_MOUNT_POINT);
          };
          return new WindowsFilesystemHost(fake).removeContents(p);
        });
        check(f);
        assert.equal(fake.open.size, 0, "every handle closed");
      });
    }

    it("the named directory stays held for the whole walk, however deep (Windows refuses to rename a held directory)", async () => {
      const p = path.join(base, "deep");
      let d = p;
      for (let i = 0; i < 40; i++) fs.mkdirSync((d = path.join(d, "d")), { recursive: true });
      const fake = fakeWin32Handles();
      let id = "";
      let unheld = 0;
      let listings = 0;
      const openListing = fake.openListing;
      fake.openListing = (h, shown) => {
        listings++;
        id ||= fake.open.get(Number(h))!.id;
        if (![...fake.open.values()].some((e) => e.path === p && e.id === id)) unheld++;
        return openListing(h, shown);
      };
      await new WindowsFilesystemHost(fake).removeContents(p);
      assert.equal(listings > 40, true);
      assert.equal(unheld, 0, `listing passes without a handle on ${p}: ${unheld} of ${listings}`);
      assert.deepEqual(fs.readdirSync(p), []);
    });
  });
});
