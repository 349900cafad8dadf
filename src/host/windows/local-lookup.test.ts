/**
 * host/windows/local-lookup.ts without Windows: a fake GetFileAttributesExW over a map of entries
 * (case-insensitive, as NTFS). What it must never do: answer through a reparse point, on a drive that
 * is not fixed, for a name Win32 would rewrite, or keep stalling after a slow answer.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createLocalLookup, PAUSE_MS, SLOW_LOOKUP_MS, type LocalAttributes } from "./local-lookup.ts";
import { FILE_ATTRIBUTE_DIRECTORY as DIR, FILE_ATTRIBUTE_REPARSE_POINT as REPARSE } from "../../win32/win32-constants.ts";

const FILE = 0x20;
const K = "C:\\var\\lib\\kubelet";

/** Entries by upper-cased path; `asked` records every path queried, in order. */
function fakeDisk(entries: Record<string, number>, fixedDrives = ["C"]) {
  const map = new Map(Object.entries(entries).map(([k, v]) => [k.toUpperCase(), v]));
  const asked: string[] = [];
  let clock = 0;
  let delay = 0;
  const attributes: LocalAttributes = (p) => {
    asked.push(p);
    clock += delay;
    const a = map.get(p.toUpperCase());
    if (a !== undefined) return a;
    // under a file: PATH_NOT_FOUND; a missing entry: FILE_NOT_FOUND; both "missing"
    return "missing";
  };
  const lookup = createLocalLookup({
    attributes,
    isFixedDrive: async (root) => fixedDrives.includes(root[0]),
    nowMs: () => clock,
  });
  return {
    asked,
    lookup,
    setDelay: (ms: number) => void (delay = ms),
    advance: (ms: number) => void (clock += ms),
    /** The first lookup on a drive learns its type off the JS thread and answers undefined. */
    async warm(path: string) {
      assert.equal(lookup(path), undefined);
      await new Promise((r) => setImmediate(r));
    },
  };
}

const tree = {
  "C:\\var": DIR, "C:\\var\\lib": DIR, [K]: DIR, [`${K}\\pods`]: DIR, [`${K}\\pods\\a`]: DIR, [`${K}\\pods\\f`]: FILE,
  [`${K}\\pods\\junction`]: DIR | REPARSE, [`${K}\\pods\\junction\\x`]: DIR, [`${K}\\pods\\link`]: FILE | REPARSE,
};

test("present / absent from a walk of the components, the drive root not asked", async () => {
  const d = fakeDisk(tree);
  await d.warm(`${K}\\pods\\a`);
  d.asked.length = 0;
  assert.equal(d.lookup(`${K}\\pods\\a`), "present");
  assert.deepEqual(d.asked, ["C:\\var", "C:\\var\\lib", K, `${K}\\pods`, `${K}\\pods\\a`]);
  assert.equal(d.lookup(`${K}\\pods\\f`), "present");
  assert.equal(d.lookup(`${K}\\pods\\none`), "absent");
  assert.equal(d.lookup(`${K}\\none\\deeper`), "absent");
  assert.equal(d.lookup(`${K}\\pods\\f\\below-a-file`), "absent");
  assert.equal(d.lookup("C:\\"), undefined);
});

test("never past a reparse point; a final one is the entry itself", async () => {
  const d = fakeDisk(tree);
  await d.warm(`${K}\\pods\\a`);
  d.asked.length = 0;
  assert.equal(d.lookup(`${K}\\pods\\junction\\x`), undefined);
  assert.equal(d.lookup(`${K}\\pods\\junction\\missing`), undefined);
  assert.ok(!d.asked.some((p) => p.startsWith(`${K}\\pods\\junction\\`)), d.asked.join(", "));
  assert.equal(d.lookup(`${K}\\pods\\junction`), "present");
  assert.equal(d.lookup(`${K}\\pods\\link`), "present");
});

test("only on fixed drives: another drive, a UNC path or a relative one is never walked", async () => {
  const d = fakeDisk({ ...tree, "D:\\share": DIR, "D:\\share\\x": DIR }, ["C"]);
  await d.warm("D:\\share\\x");
  d.asked.length = 0;
  assert.equal(d.lookup("D:\\share\\x"), undefined);
  assert.equal(d.lookup("\\\\server\\share\\x"), undefined);
  assert.equal(d.lookup("var\\lib"), undefined);
  assert.deepEqual(d.asked, []);
});

test("names Win32 would rewrite or treat as devices are left to the host", async () => {
  const d = fakeDisk(tree);
  await d.warm(`${K}\\pods\\a`);
  d.asked.length = 0;
  for (const name of ["a.", "a ", "NUL", "nul.txt", "COM1", "lpt9.log", "CONIN$", "a\u0301", "x:y"]) {
    assert.equal(d.lookup(`${K}\\pods\\${name}`), undefined, name);
  }
  assert.deepEqual(d.asked, []);
  assert.equal(d.lookup(`${K}\\pods\\kubernetes.io~csi`), "absent"); // ordinary kubelet names are walked
});

test("a slow lookup turns the walk off for PAUSE_MS, then it resumes", async () => {
  const d = fakeDisk(tree);
  await d.warm(`${K}\\pods\\a`);
  d.setDelay(SLOW_LOOKUP_MS); // five components: far over the bound
  assert.equal(d.lookup(`${K}\\pods\\a`), "present"); // this one answer was already paid for
  d.setDelay(0);
  d.asked.length = 0;
  assert.equal(d.lookup(`${K}\\pods\\a`), undefined);
  assert.deepEqual(d.asked, []);
  d.advance(PAUSE_MS);
  assert.equal(d.lookup(`${K}\\pods\\a`), "present");
});

test("an error other than not-found, or a throwing probe, answers undefined", async () => {
  const errs = createLocalLookup({ attributes: () => "unknown", isFixedDrive: async () => true });
  assert.equal(errs(`${K}\\x`), undefined);
  await new Promise((r) => setImmediate(r));
  assert.equal(errs(`${K}\\x`), undefined);
  const throws = createLocalLookup({ attributes: () => { throw new Error("boom"); }, isFixedDrive: async () => true });
  assert.equal(throws(`${K}\\x`), undefined);
  await new Promise((r) => setImmediate(r));
  assert.equal(throws(`${K}\\x`), undefined);
  const failing = createLocalLookup({ attributes: () => DIR, isFixedDrive: () => Promise.reject(new Error("no")) });
  assert.equal(failing(`${K}\\x`), undefined);
  await new Promise((r) => setImmediate(r));
  assert.equal(failing(`${K}\\x`), undefined);
});
