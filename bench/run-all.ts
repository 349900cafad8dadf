// `npm run bench`: every benchmark script, one after another. Each prints its figures and its
// ratio against a baseline measured in the same invocation: path-exists.ts (our server against a
// grpc-go server, loaded by a grpc-go client; RSS and start time), stage-flow.ts (PartitionDisk and
// the driver stage flow on loop devices against the raw tools), node-scale.ts (the per-sync RPCs as the
// node grows: mounts, namespaces, disks, SMB state, processes, churn; `--quick` for smaller sizes),
// windows-engine.ts (the Windows disk/volume calls over our PowerShell worker pool against one pwsh
// per call with upstream v1.1.3's cmdlet command lines, on pwsh 7.6.9; skipped without the engine).
// Arguments are passed to each script.
//
// What the run printed is also written to bench/results/<UTC time>-<commit>.txt, headed by the date,
// the commit (and whether the tree had changes), Node's version and the load average before and after
// each script: the figures docs/performance.md quotes come from such a file.
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync } from "node:fs";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";

const scripts = ["path-exists.ts", "stage-flow.ts", "node-scale.ts", "windows-engine.ts"];
const root = fileURLToPath(new URL("..", import.meta.url));
const git = (...args: string[]) => spawnSync("git", ["-C", root, ...args], { encoding: "utf8" }).stdout?.trim() ?? "";
const commit = git("rev-parse", "--short", "HEAD") || "unknown";
const dirty = git("status", "--porcelain", "--untracked-files=no") !== "";
const started = new Date();
const resultsDir = fileURLToPath(new URL("results/", import.meta.url));
mkdirSync(resultsDir, { recursive: true });
const file = `${resultsDir}${started.toISOString().replace(/[:.]/g, "-").slice(0, 19)}Z-${commit}${dirty ? "-dirty" : ""}.txt`;
const out = createWriteStream(file);
const load = () => loadavg().map((x) => x.toFixed(2)).join(" ");
const say = (text: string) => {
  process.stdout.write(text);
  out.write(text);
};

say(`# npm run bench ${process.argv.slice(2).join(" ")}\n# date ${started.toISOString()}\n# commit ${commit}${dirty ? " (with uncommitted changes)" : ""}\n# node ${process.version}\n`);
let failed = 0;
for (const script of scripts) {
  const path = fileURLToPath(new URL(script, import.meta.url));
  if (!existsSync(path)) continue;
  say(`\n== ${script} (load average ${load()})\n`);
  const child = spawn(process.execPath, [path, ...process.argv.slice(2)], { stdio: ["inherit", "pipe", "pipe"] });
  child.stdout.on("data", (b: Buffer) => say(b.toString()));
  child.stderr.on("data", (b: Buffer) => {
    process.stderr.write(b);
    out.write(b);
  });
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  say(`== ${script}: exit ${code} (load average ${load()})\n`);
  if (code !== 0) failed++;
}
await new Promise<void>((resolve) => out.end(resolve));
console.log(`\nwritten to ${file}`);
process.exit(failed ? 1 : 0);
