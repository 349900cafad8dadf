import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { createJsonStateFile, readFileIfExists, removeFileDurably, writeFileAtomic } from "./atomic-file.ts";

let dir: string;
before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "atomic-file-"));
});
after(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe("writeFileAtomic()", () => {
  it("creates missing parents and the file with mode 0600 by default, whatever the umask", async () => {
    const file = path.join(dir, "a", "b", "state.json");
    const old = process.umask(0);
    try {
      await writeFileAtomic(file, "one");
    } finally {
      process.umask(old);
    }
    assert.equal(await fs.readFile(file, "utf8"), "one");
    assert.equal((await fs.stat(file)).mode & 0o777, 0o600);
    assert.equal((await fs.stat(path.dirname(file))).mode & 0o777, 0o700);
  });

  it("replaces the content and leaves no temporary file behind", async () => {
    const file = path.join(dir, "replace.json");
    await writeFileAtomic(file, "old");
    await writeFileAtomic(file, "new", { mode: 0o644 });
    assert.equal(await fs.readFile(file, "utf8"), "new");
    assert.equal((await fs.stat(file)).mode & 0o777, 0o644);
    assert.deepEqual((await fs.readdir(dir)).filter((n) => n.includes(".tmp-")), []);
  });

  it("keeps the old content when the rename fails and removes the temporary file", async () => {
    const target = path.join(dir, "is-a-dir");
    await fs.mkdir(path.join(target, "child"), { recursive: true });
    await assert.rejects(writeFileAtomic(target, "x"));
    assert.ok((await fs.stat(target)).isDirectory());
    assert.deepEqual((await fs.readdir(dir)).filter((n) => n.includes(".tmp-")), []);
  });
});

describe("readFileIfExists() / removeFileDurably()", () => {
  it("returns null for a missing file; removal of a missing file is fine", async () => {
    const file = path.join(dir, "gone");
    assert.equal(await readFileIfExists(file), null);
    await removeFileDurably(file);
    await writeFileAtomic(file, "x");
    assert.equal(await readFileIfExists(file), "x");
    await removeFileDurably(file);
    assert.equal(await readFileIfExists(file), null);
  });
});

describe("createJsonStateFile()", () => {
  const validate = (raw: unknown) => {
    if (typeof raw !== "object" || raw === null || typeof (raw as { n?: unknown }).n !== "number") throw new Error("bad shape");
    return raw as { n: number };
  };

  it("loads null when absent, then what was saved last (saves are serialised)", async () => {
    const state = createJsonStateFile(path.join(dir, "s1.json"), validate);
    assert.equal(await state.load(), null);
    await Promise.all([1, 2, 3, 4, 5].map((n) => state.save({ n })));
    assert.deepEqual(await state.load(), { n: 5 });
  });

  it("refuses a corrupt file instead of resetting it", async () => {
    const file = path.join(dir, "corrupt.json");
    await fs.writeFile(file, "{not json");
    await assert.rejects(createJsonStateFile(file, validate).load(), /corrupt\.json is not valid JSON/);
    await fs.writeFile(file, '{"m": 1}');
    await assert.rejects(createJsonStateFile(file, validate).load(), /bad shape/);
    assert.equal(await fs.readFile(file, "utf8"), '{"m": 1}');
  });
});
