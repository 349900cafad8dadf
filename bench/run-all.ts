// `npm run bench`: every benchmark script, one after another. Each prints its figures and its
// ratio against a baseline measured in the same invocation: path-exists.ts (our server against a
// grpc-go server, loaded by a grpc-go client; RSS and start time), stage-flow.ts (PartitionDisk and
// the driver stage flow on loop devices against the raw tools), node-scale.ts (the per-sync RPCs as the
// node grows: mounts, namespaces, disks, SMB state, processes, churn; `--quick` for smaller sizes).
// Arguments are passed to each script.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const scripts = ["path-exists.ts", "stage-flow.ts", "node-scale.ts"];
let failed = 0;
for (const script of scripts) {
  const file = fileURLToPath(new URL(script, import.meta.url));
  if (!existsSync(file)) continue;
  console.log(`\n== ${script}`);
  const r = spawnSync(process.execPath, [file, ...process.argv.slice(2)], { stdio: "inherit" });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
