// The server as production runs it: `npm run build`, then the command package.json's "start"
// script runs (today `node dist/bundle/main.js`), with this Node binary. Benchmarks never run the .ts sources.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("..", import.meta.url));

let built = false;

/** Runs `npm run build` once per process (quietly unless it fails). */
export function buildProduction(): void {
  if (built) return;
  execFileSync("npm", ["run", "--silent", "build"], { cwd: repoRoot, stdio: ["ignore", "ignore", "inherit"] });
  built = true;
}

/** argv (after the node binary) of package.json's "start" script, which must be `[exec] node <args…>`. */
export function startArgs(): string[] {
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8"));
  const words = String(pkg.scripts?.start ?? "node dist/bundle/main.js").trim().split(/\s+/);
  if (words[0] === "exec") words.shift();
  if (words[0] !== "node") throw new Error(`package.json "start" is not a node command: ${pkg.scripts.start}`);
  return words.slice(1).map((w) => (w.startsWith("-") || path.isAbsolute(w) ? w : path.join(repoRoot, w)));
}

/** Spawns the production server with `flags`; stderr is collected into `log()`. */
export function spawnServer(flags: string[], nodeFlags: string[] = []): { child: ChildProcess; log: () => string } {
  buildProduction();
  const child = spawn(process.execPath, [...nodeFlags, ...startArgs(), ...flags], { cwd: repoRoot, stdio: ["ignore", "ignore", "pipe"] });
  let text = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (text += d));
  return { child, log: () => text };
}

/**
 * Resident memory of a process in MB (/proc/<pid>/status): `rss` (VmRSS) = `anon` (RssAnon: heap,
 * stacks, malloc) + `file` (RssFile: pages of the node binary and libraries mapped from the page
 * cache, shared with every process mapping the same file) + shmem (RssShmem).
 */
export function residentMB(pid: number): { rss: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kB = (field: string) => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
    return m ? Number(m[1]) / 1024 : NaN;
  };
  return { rss: kB("VmRSS"), anon: kB("RssAnon"), file: kB("RssFile") };
}

/** "56.6 MB (anon 14.9, file 41.8)". */
export const formatResident = (m: { rss: number; anon: number; file: number }) => `${m.rss.toFixed(1)} MB (anon ${m.anon.toFixed(1)}, file ${m.file.toFixed(1)})`;

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}
