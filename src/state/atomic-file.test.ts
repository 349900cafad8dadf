import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { execFileSync } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { Code } from "../errors.ts";
import { createJsonStateFile, readFileIfExists, readStateFile, removeFileDurably, writeFileAtomic } from "./atomic-file.ts";

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

describe("readStateFile()", () => {
  const failed = (re: RegExp) => (err: unknown) => (err as { code?: number }).code === Code.FailedPrecondition && re.test((err as Error).message);

  it("reads a regular file of ours; null when absent", async () => {
    const file = path.join(dir, "plain-state");
    assert.equal(await readStateFile(file), null);
    await writeFileAtomic(file, "content");
    assert.equal(await readStateFile(file), "content");
  });

  it("refuses a symbolic link (O_NOFOLLOW) with FailedPrecondition, even to a file of ours", async () => {
    const target = path.join(dir, "link-target");
    await writeFileAtomic(target, "secret");
    const link = path.join(dir, "linked-state");
    await fs.symlink(target, link);
    await assert.rejects(readStateFile(link), failed(/linked-state is a symbolic link; csi-proxy reads state only from regular files it owns/));
    const dangling = path.join(dir, "dangling-state");
    await fs.symlink(path.join(dir, "nothing-here"), dangling);
    await assert.rejects(readStateFile(dangling), failed(/is a symbolic link/), "a dangling link is not 'absent'");
  });

  it("refuses a FIFO without blocking, and a directory", async () => {
    const fifo = path.join(dir, "fifo-state");
    execFileSync("mkfifo", [fifo]);
    await assert.rejects(readStateFile(fifo), failed(/fifo-state is not a regular file/));
    await fs.mkdir(path.join(dir, "dir-state"));
    await assert.rejects(readStateFile(path.join(dir, "dir-state")), failed(/is not a regular file/));
  });

  it("refuses a file owned by another uid (fstat of the opened file)", async () => {
    const file = path.join(dir, "foreign-state");
    await writeFileAtomic(file, "x");
    const mine = process.getuid!();
    await assert.rejects(readStateFile(file, { uid: mine + 1 }), failed(new RegExp(`foreign-state is owned by uid ${mine}, not by the user csi-proxy runs as \\(uid ${mine + 1}\\)`)));
    if (mine === 0) {
      await fs.chown(file, 65534, 65534);
      await assert.rejects(readStateFile(file), failed(/is owned by uid 65534/));
    }
    assert.equal(await readStateFile(file, { uid: null }), "x", "uid null: no owner check (Windows)");
  });

  it("createJsonStateFile().load() goes through it", async () => {
    const target = path.join(dir, "json-target.json");
    await fs.writeFile(target, '{"n": 1}');
    const link = path.join(dir, "json-link.json");
    await fs.symlink(target, link);
    await assert.rejects(createJsonStateFile(link, (raw) => raw).load(), failed(/json-link\.json is a symbolic link/));
  });
});
