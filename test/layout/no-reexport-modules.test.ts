// A symbol is imported from the module that defines it: no module of src/ only passes on what other
// modules export (a barrel), so a reader who follows an import lands on the code. The package's
// entry points (package.json "exports", mapped dist/ → src/) are the exception: they are the public
// surface and re-export by design.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { it } from "node:test";
import { productModules, repoRoot } from "./module-tests.ts";

/** src/ modules behind package.json "exports" (wildcards, i.e. the generated code, left out). */
function entryPoints(): Set<string> {
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { exports: Record<string, string | Record<string, string>> };
  const out = new Set<string>();
  for (const target of Object.values(pkg.exports)) {
    const js = typeof target === "string" ? target : target.default;
    if (js === undefined || js.includes("*")) continue;
    const m = /^\.\/dist\/(.+)\.js$/.exec(js);
    if (m) out.add(`src/${m[1]}.ts`);
  }
  return out;
}

/**
 * True when every top-level statement of `text` is an import, an `export … from`, or an
 * `export { … }` list (of imported names: the module defines nothing). Comments are dropped first;
 * a module with any code of its own has a statement that matches none of these.
 */
function onlyReExports(text: string): boolean {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|\s)\/\/.*$/gm, "$1");
  const statements = code.split(";").map((s) => s.trim()).filter((s) => s !== "");
  const reExport = /^export\s+(type\s+)?(\*(\s+as\s+\w+)?|\{[^}]*\})(\s+from\s+["'][^"']+["'])?$/;
  return statements.some((s) => s.startsWith("export")) && statements.every((s) => /^import\s/.test(s) || reExport.test(s));
}

it("recognises a re-export-only module and not a module with code of its own", () => {
  assert.equal(onlyReExports(`/** doc */\nexport { a, type B } from "./a.ts";\nexport * from "./c.ts";\n`), true);
  assert.equal(onlyReExports(`import { a } from "./a.ts";\nexport { a };\n`), true);
  assert.equal(onlyReExports(`export { a } from "./a.ts";\nexport const b = 1;\n`), false);
  assert.equal(onlyReExports(`import { a } from "./a.ts";\nconsole.log(a);\n`), false);
});

it("no src/ module but the package entry points only re-exports", () => {
  const entries = entryPoints();
  assert.ok(entries.has("src/index.ts"), "package.json exports: the main entry point maps to src/index.ts");
  const barrels = productModules()
    .map((f) => path.relative(repoRoot, f))
    .filter((rel) => !entries.has(rel) && onlyReExports(readFileSync(path.join(repoRoot, rel), "utf8")));
  assert.deepEqual(barrels, [], "modules that only re-export: import each symbol from the module that defines it, and delete these");
});
