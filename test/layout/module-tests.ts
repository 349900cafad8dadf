/**
 * Which test files test a module of src/: those that import it directly (a relative `.ts` import),
 * run it as a program (name its path, `src/cli/ctl.ts`, in a string) or load it in a child process
 * (`new URL("./x.ts", import.meta.url)`). Used by the layout test
 * (every module has one, or an exemption with its reason) and by `scripts/tests-of.ts`.
 */
import { readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";

export const repoRoot = path.resolve(import.meta.dirname, "../..");

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => path.join(e.parentPath, e.name));
}

/** Product modules: src/**.ts but generated code, declarations and tests (absolute paths). */
export function productModules(): string[] {
  return tsFiles(path.join(repoRoot, "src")).filter((f) => !f.endsWith(".test.ts") && !f.endsWith(".d.ts") && !f.includes(`${path.sep}src${path.sep}gen${path.sep}`));
}

/** Test files: src/**.test.ts and everything under test/ (suites, their helpers and doubles) but the layout rules (test/layout/: they name modules as data, they test the tree). */
export function testFiles(): string[] {
  const own = path.join(repoRoot, "test", "layout") + path.sep;
  return [...tsFiles(path.join(repoRoot, "src")).filter((f) => f.endsWith(".test.ts")), ...tsFiles(path.join(repoRoot, "test")).filter((f) => !f.startsWith(own))];
}

/** Modules `file` imports directly or names as a program to run (absolute paths). */
export function modulesUsedBy(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const imports = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+\.ts)["']/g)].map((m) => path.resolve(path.dirname(file), m[1]));
  const programs = [...text.matchAll(/["'`/](src\/[\w./-]+\.ts)["'`]/g)].map((m) => path.join(repoRoot, m[1]));
  // a module loaded in a child process: `new URL("./x.ts", import.meta.url)`
  const urls = [...text.matchAll(/\bnew URL\(\s*["'](\.{1,2}\/[^"']+\.ts)["']\s*,\s*import\.meta\.url\s*\)/g)].map((m) => path.resolve(path.dirname(file), m[1]));
  return [...imports, ...programs, ...urls];
}

/** Module (repository-relative) → the test files (repository-relative) that test it directly. */
export function testsByModule(): Map<string, string[]> {
  const rel = (f: string) => path.relative(repoRoot, f);
  const map = new Map(productModules().map((m) => [rel(m), [] as string[]]));
  for (const t of testFiles()) {
    for (const m of new Set(modulesUsedBy(t).map(rel))) map.get(m)?.push(rel(t));
  }
  return map;
}
