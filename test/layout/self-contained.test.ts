// A clone explains itself: every Markdown file the sources, tests, scripts and docs cite is in the
// repository, and no text names a directory of the machine it was written on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const roots = ["src", "test", "docs", "scripts", "bench", "packaging", "deploy", "proto", ".ci", "README.md", "package.json"];
/** Paths inside archives the tests build (e.g. `package/README.md` in the npm tarball), not in the repository. */
const archivePaths = new Set(["package/README.md"]);

function textFiles(): string[] {
  const files: string[] = [];
  for (const top of roots) {
    const abs = path.join(root, top);
    if (!existsSync(abs)) continue;
    const entries = top.includes(".") && !top.startsWith(".") ? [abs] : readdirSync(abs, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
    for (const f of entries) if (/\.(ts|js|md|sh|py|go|json|yaml|yml|proto|service|txt)$|(^|\/)run$/.test(f) && !f.includes(`${path.sep}gen${path.sep}`)) files.push(f);
  }
  return files;
}

test("every cited .md file is in the repository", () => {
  const missing: string[] = [];
  for (const file of textFiles()) {
    for (const m of readFileSync(file, "utf8").matchAll(/(?<![\w/.-])((?:[\w.-]+\/)*[\w.-]+\.md)\b/g)) {
      const cited = m[1];
      if (archivePaths.has(cited)) continue;
      const candidates = [path.join(root, cited), path.join(path.dirname(file), cited)];
      if (!cited.includes("/")) candidates.push(path.join(root, "docs", cited));
      if (!candidates.some((c) => existsSync(c))) missing.push(`${path.relative(root, file)}: ${cited}`);
    }
  }
  assert.deepEqual(missing, []);
});

test("every cited repository file exists (src/…, test/…, docs/…, scripts/…)", () => {
  const missing: string[] = [];
  const cite = /(?<![\w./-])((?:src|test|docs|scripts|bench|packaging|deploy|proto)\/[\w./-]+\.(?:ts|md|sh|py|json|go|proto|service|yaml))\b/g;
  for (const file of textFiles()) {
    for (const m of readFileSync(file, "utf8").matchAll(cite)) {
      const cited = m[1];
      // Relative to the root, or to the citing file's directory or a parent of it (src/host/windows/ cites its own scripts/…).
      const dirs = [root];
      for (let d = path.dirname(file); d.startsWith(root) && d !== root; d = path.dirname(d)) dirs.push(d);
      if (!dirs.some((d) => existsSync(path.join(d, cited)))) missing.push(`${path.relative(root, file)}: ${cited}`);
    }
  }
  assert.deepEqual(missing, []);
});

test("no text names a directory of a build machine", () => {
  const found: string[] = [];
  for (const file of textFiles()) {
    readFileSync(file, "utf8").split("\n").forEach((line, i) => {
      // also after a JSON string's escaped tab or newline (recorded stack traces)
      if (/(^|[\s"'`(=:]|\\[tn])\/(work|root|home\/[\w.-]+)\//.test(line)) found.push(`${path.relative(root, file)}:${i + 1}: ${line.trim().slice(0, 120)}`);
    });
  }
  assert.deepEqual(found, []);
});
