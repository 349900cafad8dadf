// src/ has no import cycles (static or dynamic imports of our own modules): shared types live below
// the modules that use them.
import { it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { repoRoot } from "../helpers/daemon-process.ts";

const src = path.join(repoRoot, "src");

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") && !e.name.endsWith(".test.ts"))
    .map((e) => path.join(e.parentPath, e.name));
}

/** Relative .ts imports of `file`: `from "…"`, `import("…")`, `import "…"`, `export … from "…"`. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specs = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+\.ts)["']/g)].map((m) => m[1]);
  return specs.map((s) => path.resolve(path.dirname(file), s));
}

it("src/ has no import cycles", () => {
  const graph = new Map(modules(src).map((f) => [f, importsOf(f)]));
  const cycles: string[] = [];
  const state = new Map<string, "visiting" | "done">();
  const stack: string[] = [];
  const visit = (f: string) => {
    if (state.get(f) === "done") return;
    if (state.get(f) === "visiting") {
      cycles.push(stack.slice(stack.indexOf(f)).concat(f).map((p) => path.relative(src, p)).join(" → "));
      return;
    }
    state.set(f, "visiting");
    stack.push(f);
    for (const dep of graph.get(f) ?? []) visit(dep);
    stack.pop();
    state.set(f, "done");
  };
  for (const f of graph.keys()) visit(f);
  assert.ok(graph.size > 50, "modules found");
  assert.deepEqual(cycles, []);
});

it("the product imports nothing outside src/ (test doubles live in test/, outside the build)", () => {
  const outside = modules(src).flatMap((f) =>
    importsOf(f)
      .filter((dep) => path.relative(src, dep).startsWith(".."))
      .map((dep) => `${path.relative(src, f)} → ${path.relative(repoRoot, dep)}`),
  );
  assert.deepEqual(outside, []);
});
