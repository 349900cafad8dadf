// What a starting and an idle daemon keep off its start path: koffi (the FFI addon and the libc it
// opens) is loaded by the first call or settling that needs it, never while the hosts are built
// before the endpoints listen, nor by an idle server (docs/performance.md "Memory and start").
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { nodeBinary, repoRoot, startDaemonProcess } from "../helpers/daemon-process.ts";

/** koffi's native addon among the files mapped by process `pid` (Linux /proc/<pid>/maps). */
function mapsKoffi(pid: number): boolean {
  return readFileSync(`/proc/${pid}/maps`, "utf8")
    .split("\n")
    .some((line) => line.endsWith("/koffi.node"));
}

describe("start-up path", { skip: process.platform !== "linux" && "reads /proc/<pid>/maps" }, () => {
  it("the check sees koffi in a process that loaded it", async () => {
    // The same import the daemon uses, in a process of its own: the detector must see it mapped.
    const child = spawn(nodeBinary, ["--input-type=module", "-e", 'await import("koffi"); process.stdout.write("loaded\\n"); setInterval(() => {}, 1000);'], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on("data", (d: Buffer) => d.toString().includes("loaded") && resolve());
        child.once("exit", (code) => reject(new Error(`koffi loader exited ${code}`)));
      });
      assert.equal(mapsKoffi(child.pid!), true);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("no koffi when all 23 endpoints listen, nor once the idle server settled", async () => {
    const d = await startDaemonProcess({ args: ["-v=2"] });
    try {
      assert.equal(mapsKoffi(d.child.pid!), false, "koffi was loaded before the endpoints listened");
      await d.waitFor(/After start: .*/);
      // What runs after start (settling, the quiet-footprint watch) has had its chance to load it:
      // a load begun then finishes within milliseconds; 1.5 s is the margin for a loaded machine.
      await sleep(1500);
      assert.equal(mapsKoffi(d.child.pid!), false, "an idle daemon loaded koffi");
    } finally {
      assert.equal(await d.stop(), 0);
    }
  });
});
