// Generated code must match the protos (regenerated in a temp dir and compared file by file), and
// the protos must not break the released contract (buf breaking against proto-lock/released.binpb).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, cpSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const buf = path.join(root, "node_modules/.bin/buf");

function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

test("src/gen is what `npm run generate` produces from proto/", () => {
  const work = mkdtempSync(path.join(tmpdir(), "csi-proxy-gen-"));
  try {
    cpSync(path.join(root, "proto"), path.join(work, "proto"), { recursive: true });
    cpSync(path.join(root, "buf.yaml"), path.join(work, "buf.yaml"));
    const template = readFileSync(path.join(root, "buf.gen.yaml"), "utf8");
    writeFileSync(path.join(work, "buf.gen.yaml"), template);
    execFileSync(buf, ["generate"], { cwd: work, env: { ...process.env, PATH: `${path.join(root, "node_modules/.bin")}:${process.env.PATH}` } });
    const expected = path.join(work, "src/gen"), actual = path.join(root, "src/gen");
    assert.deepEqual(listFiles(actual), listFiles(expected), "generated file list is stale: run `npm run generate`");
    for (const file of listFiles(expected)) {
      assert.equal(readFileSync(path.join(actual, file), "utf8"), readFileSync(path.join(expected, file), "utf8"), `${file} is stale: run \`npm run generate\``);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test("protos make no breaking change against the released contract", () => {
  execFileSync(buf, ["breaking", "--against", "proto-lock/released.binpb"], { cwd: root, stdio: "pipe" });
});
