// The optional packages of package-lock.json that this machine should have (os, cpu and libc match, as
// Node 24's npm decides) but node_modules lacks. Why: an npm run by an older Node (Debian bookworm's
// npm 9 on Node 18) skips optional packages whose `engines` that Node does not meet — oxlint's native
// binding — and Debian's npm 9 cannot run under Node 24 to redo the install.
//   node scripts/missing-optional-deps.ts           prints them, one a line; exits 1 when there is any
//   node scripts/missing-optional-deps.ts --fetch   fetches each with `npm pack` at the lock's version,
//                                                    checks it against the lock's integrity, unpacks it
// Run by scripts/ensure-node-deps.sh under node_modules/.bin/node.
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

interface LockEntry { version?: string; integrity?: string; optional?: boolean; os?: string[]; cpu?: string[]; libc?: string[] }

/** True when `value` passes an npm platform list (entries may be negated with "!"). */
function allowed(value: string, list: string[] | undefined): boolean {
  if (!list || list.length === 0) return true;
  if (list.includes(`!${value}`)) return false;
  const positive = list.filter((e) => !e.startsWith("!"));
  return positive.length === 0 || positive.includes(value);
}

/** "glibc" or "musl" on Linux, as npm names them; undefined elsewhere. */
function libcFamily(): string | undefined {
  if (process.platform !== "linux") return undefined;
  const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header;
  return header?.glibcVersionRuntime ? "glibc" : "musl";
}

/** The lock's `node_modules/...` keys of the optional packages this machine needs and lacks. */
export function missingOptionalDeps(root: string): Array<[string, LockEntry]> {
  const lock = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8")) as { packages: Record<string, LockEntry> };
  const libc = libcFamily();
  return Object.entries(lock.packages)
    .filter(([where, e]) => where.startsWith("node_modules/") && e.optional === true)
    .filter(([, e]) => allowed(process.platform, e.os) && allowed(process.arch, e.cpu) && (libc === undefined || allowed(libc, e.libc)))
    .filter(([where]) => !existsSync(path.join(root, where, "package.json")));
}

/** Fetches and unpacks one lock entry; throws when the tarball does not match the lock's integrity. */
function fetchInto(root: string, where: string, entry: LockEntry): void {
  const name = where.slice(where.lastIndexOf("node_modules/") + "node_modules/".length);
  const [algorithm, expected] = (entry.integrity ?? "").split(/-(.*)/s, 2);
  if (!entry.version || !algorithm || !expected) throw new Error(`${where}: no version or integrity in package-lock.json`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), "optional-dep-"));
  try {
    const file = execFileSync("npm", ["pack", "--silent", "--pack-destination", tmp, `${name}@${entry.version}`], { encoding: "utf8" }).trim().split("\n").at(-1)!;
    const tarball = path.join(tmp, file);
    const actual = createHash(algorithm).update(readFileSync(tarball)).digest("base64");
    if (actual !== expected) throw new Error(`${name}@${entry.version}: integrity ${algorithm}-${actual}, package-lock.json says ${entry.integrity}`);
    const dest = path.join(root, where);
    mkdirSync(dest, { recursive: true });
    execFileSync("tar", ["-xzf", tarball, "-C", dest, "--strip-components=1", "--no-same-owner"]);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const root = path.resolve(".");
  const missing = missingOptionalDeps(root);
  if (process.argv.includes("--fetch")) for (const [where, entry] of missing) fetchInto(root, where, entry);
  const left = process.argv.includes("--fetch") ? missingOptionalDeps(root) : missing;
  for (const [where] of left) console.log(where);
  process.exitCode = left.length > 0 ? 1 : 0;
}
