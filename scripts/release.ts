#!/usr/bin/env node
/**
 * `npm run release [-- --out DIR]`: the release artefacts of the current commit, in DIR (default
 * release/<version>/):
 *
 *   csi-proxy-ts-<version>.tgz                 the npm package (`npm pack`, which builds dist/ first)
 *   csi-proxy-<version>-windows-amd64.zip      csi-proxy.exe (scripts/build-exe.ts), koffi/, VERSION,
 *                                              LICENSE, README.txt (packaging/windows/README.txt)
 *   SHA256SUMS                                 `sha256sum -c` format, sorted by file name
 *
 * Reproducible: the same commit gives byte-identical files. The zip's entries have a fixed order,
 * mode and timestamp (SOURCE_DATE_EPOCH, default the commit's time) and DOS times are written in
 * UTC; npm pack fixes its own tar timestamps; the exe is a deterministic SEA injection.
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import yazl from "yazl";
import { buildExe } from "./build-exe.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export interface ZipEntry {
  name: string;
  data: Buffer;
  executable?: boolean;
}

/** A zip of `entries` in the given order, every entry dated `mtime`, modes 0644/0755, deflated. */
export function deterministicZip(entries: ZipEntry[], mtime: Date): Promise<Buffer> {
  const previousTz = process.env.TZ;
  process.env.TZ = "UTC"; // yazl writes DOS times in local time
  const zip = new yazl.ZipFile();
  for (const e of entries) zip.addBuffer(e.data, e.name, { mtime, mode: e.executable ? 0o100755 : 0o100644, compress: true });
  zip.end();
  const chunks: Buffer[] = [];
  return new Promise<Buffer>((resolve, reject) => {
    zip.outputStream.on("data", (c: Buffer) => chunks.push(c));
    zip.outputStream.on("error", reject);
    zip.outputStream.on("end", () => resolve(Buffer.concat(chunks)));
  }).finally(() => {
    if (previousTz === undefined) delete process.env.TZ;
    else process.env.TZ = previousTz;
  });
}

/** SOURCE_DATE_EPOCH, else the commit time of HEAD (seconds). */
export function sourceDateEpoch(): number {
  const env = process.env.SOURCE_DATE_EPOCH;
  if (env) return Number(env);
  return Number(execFileSync("git", ["log", "-1", "--format=%ct"], { cwd: root, encoding: "utf8" }).trim());
}

export async function release(options: { outDir?: string; quiet?: boolean; rebuildExe?: boolean } = {}): Promise<{ dir: string; files: string[] }> {
  const quiet = options.quiet ?? false;
  const say = (m: string) => quiet || process.stderr.write(`release: ${m}\n`);
  const version = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).version as string;
  const dir = path.resolve(root, options.outDir ?? path.join("release", version));
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const epoch = sourceDateEpoch();
  const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: root, encoding: "utf8" }).trim();
  if (dirty) say("warning: the work tree has uncommitted changes; the artefacts are not those of the commit");

  say("npm pack");
  const packed = execFileSync("npm", ["pack", "--silent", "--pack-destination", dir], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const tarball = packed.trim().split("\n").pop()!.trim();

  say("windows exe");
  const exe = await buildExe({ quiet: true, version: `v${version}`, rebuild: options.rebuildExe });
  const zipName = `csi-proxy-${version}-windows-amd64.zip`;
  const zip = await deterministicZip(
    [
      { name: "csi-proxy.exe", data: fs.readFileSync(exe.exe), executable: true },
      { name: "koffi/win32_x64/koffi.node", data: fs.readFileSync(path.join(exe.dir, "koffi", "win32_x64", "koffi.node")) },
      { name: "VERSION", data: fs.readFileSync(path.join(exe.dir, "VERSION")) },
      { name: "LICENSE", data: fs.readFileSync(path.join(root, "LICENSE")) },
      { name: "README.txt", data: fs.readFileSync(path.join(root, "packaging", "windows", "README.txt")) },
    ],
    new Date(epoch * 1000),
  );
  fs.writeFileSync(path.join(dir, zipName), zip);

  const files = [tarball, zipName].sort();
  const sums = files.map((f) => `${createHash("sha256").update(fs.readFileSync(path.join(dir, f))).digest("hex")}  ${f}\n`).join("");
  fs.writeFileSync(path.join(dir, "SHA256SUMS"), sums);
  say(`wrote ${path.relative(root, dir) || "."}/{${files.join(",")},SHA256SUMS}`);
  return { dir, files: [...files, "SHA256SUMS"] };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const outIdx = args.indexOf("--out");
  release({ outDir: outIdx >= 0 ? args[outIdx + 1] : undefined, rebuildExe: args.includes("--rebuild-exe") }).then(
    ({ dir }) => process.stdout.write(fs.readFileSync(path.join(dir, "SHA256SUMS"), "utf8")),
    (err) => {
      process.stderr.write(`release: ${err?.stack ?? err}\n`);
      process.exit(1);
    },
  );
}
