#!/usr/bin/env node
/**
 * `npm run build`: compiles src/ (tests excluded) into dist/ with tsconfig.build.json — JavaScript,
 * .d.ts and source maps with the sources inlined — after removing any previous dist/ (so files of
 * moved or deleted sources never linger), then marks the two bins executable.
 * Deterministic: the same sources give byte-identical output.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** The package's bins (package.json "bin"), relative to the root. */
export const bins = ["dist/main.js", "dist/cli/ctl.js"];

export function build(): void {
  fs.rmSync(path.join(root, "dist"), { recursive: true, force: true });
  execFileSync(process.execPath, [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", path.join(root, "tsconfig.build.json")], { cwd: root, stdio: "inherit" });
  for (const bin of bins) fs.chmodSync(path.join(root, bin), 0o755);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) build();
