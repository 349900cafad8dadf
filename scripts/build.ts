#!/usr/bin/env node
/**
 * `npm run build`: compiles src/ (tests excluded) into dist/ with tsconfig.build.json — JavaScript,
 * .d.ts and source maps with the sources inlined, for the library and client exports — after
 * removing any previous dist/ (so files of moved or deleted sources never linger); then bundles the
 * two programs (the server, dist/main.js, and csi-proxyctl, dist/cli/ctl.js) with esbuild into
 * dist/bundle/: one ES module per program plus shared chunks for what they load on demand (the
 * Windows host, metrics, compression), so starting a program parses one file instead of resolving
 * and compiling ~150 modules. The bins, `npm start` and the systemd unit run the bundles.
 * Log lines of the bundles cite source files and lines, resolved at build time (scripts/log-sites.ts).
 * Deterministic: the same sources give byte-identical output.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { addLogSites } from "./log-sites.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** The package's bins (package.json "bin"), relative to the root: the bundles of the two programs. */
export const bins = ["dist/bundle/main.js", "dist/bundle/ctl.js"];
/** The compiled entries they are bundled from. */
const entries = ["dist/main.js", "dist/cli/ctl.js"];

/**
 * The bundles: ESM for Node ≥ 22.12 (package.json engines), code split so lazily imported modules
 * stay lazy, koffi (a native addon, loaded on first use) left to node_modules. CommonJS
 * dependencies (hpack.js, prom-client) call `require`, which an ES module lacks: the banner
 * defines it. The version is fixed at build time (version.ts reads ../package.json relative to its
 * own file, which a bundle is not). Source maps are linked files, read only with
 * --enable-source-maps, so they cost no memory in the running program.
 */
/** The commit built (`-version` prints it): CSI_PROXY_COMMIT, else git's short HEAD, else "unknown" (no git). */
export function sourceCommit(): string {
  if (process.env.CSI_PROXY_COMMIT) return process.env.CSI_PROXY_COMMIT;
  try {
    return execFileSync("git", ["rev-parse", "--short=12", "HEAD"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() || "unknown";
  } catch {
    return "unknown";
  }
}

function bundle(): void {
  const { version } = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { version: string };
  const result = esbuild.buildSync({
    absWorkingDir: root,
    entryPoints: entries.map((e) => path.join(root, e)),
    outdir: path.join(root, "dist", "bundle"),
    entryNames: "[name]",
    chunkNames: "chunks/[name]-[hash]",
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node22.12",
    sourcemap: "linked",
    sourcesContent: false,
    legalComments: "none",
    logLevel: "warning",
    external: ["koffi", "@koromix/*"],
    define: { "globalThis.CSI_PROXY_VERSION": JSON.stringify(`v${version}`), "globalThis.CSI_PROXY_COMMIT": JSON.stringify(sourceCommit()) },
    banner: { js: 'import { createRequire as __csiProxyCreateRequire } from "node:module";\nconst require = __csiProxyCreateRequire(import.meta.url);' },
  });
  if (result.errors.length) throw new Error(`esbuild: ${result.errors.map((e) => e.text).join("; ")}`);
  addLogSites(path.join(root, "dist", "bundle"));
}

export function build(): void {
  const inputs = buildInputsHash();
  fs.rmSync(path.join(root, STAMP), { force: true });
  fs.rmSync(path.join(root, "dist"), { recursive: true, force: true });
  execFileSync(process.execPath, [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", path.join(root, "tsconfig.build.json")], { cwd: root, stdio: "inherit" });
  bundle();
  for (const bin of bins) fs.chmodSync(path.join(root, bin), 0o755);
  fs.mkdirSync(path.join(root, ".cache"), { recursive: true });
  fs.writeFileSync(path.join(root, STAMP), inputs);
}

/** What a build is made from: src/ (tests included: cheap, and safe), the build's configuration and scripts. */
const BUILD_INPUTS = ["src", "package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json", "scripts/build.ts", "scripts/log-sites.ts"];
/** The hash of the inputs the current dist/ was built from (every build writes it; outside dist/, which is packed). */
const STAMP = path.join(".cache", "build-inputs");

/** SHA-256 over the build inputs under `dir` (paths and contents, in sorted order) and the commit. */
export function buildInputsHash(dir: string = root, commit: string = sourceCommit()): string {
  const hash = createHash("sha256").update(`commit ${commit}\0`);
  const walk = (rel: string) => {
    const abs = path.join(dir, rel);
    const st = fs.statSync(abs, { throwIfNoEntry: false });
    if (st === undefined) return;
    if (st.isDirectory()) {
      for (const name of fs.readdirSync(abs).sort()) walk(path.join(rel, name));
    } else if (st.isFile()) {
      hash.update(`${rel}\0`).update(fs.readFileSync(abs)).update("\0");
    }
  };
  for (const input of BUILD_INPUTS) walk(input);
  return hash.digest("hex");
}

/**
 * `--if-changed` (what `npm start` runs): builds only when the inputs differ from those of the
 * current dist/ (or there is none); returns whether it built.
 */
export function buildIfChanged(): boolean {
  const want = buildInputsHash();
  const stamp = path.join(root, STAMP);
  const have = fs.existsSync(stamp) && bins.every((b) => fs.existsSync(path.join(root, b))) ? fs.readFileSync(stamp, "utf8") : "";
  if (have === want) return false;
  build();
  return true;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes("--if-changed")) buildIfChanged();
  else build();
}
