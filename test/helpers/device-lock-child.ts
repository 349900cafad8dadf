// A csi-proxy process that dies while a tool of its call runs (device-lock-handover.test.ts). argv:
//   <lockDir> <readyFile>
// Takes the node-wide lock of disk:5, runs a device-writing step (host-steps.ts "mkfs": it is handed
// the lock) that writes its pid to <readyFile> and sleeps 2 s; the test kill -9s this process meanwhile.
import { createNodeLocks } from "../../src/state/node-locks.ts";
import { runCommand } from "../../src/host/exec/run-command.ts";

const [dir, ready] = process.argv.slice(2);
const locks = createNodeLocks({ dir, platform: "linux" });
await locks.run("disk:5", () => runCommand("/bin/sh", ["-c", 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec sleep 2', ready], { step: "mkfs" }));
