/**
 * SIGUSR1 never opens Node's inspector in the daemon (src/boot/no-inspector.ts): the real daemon
 * under the test's Node (24), reopening its -log_file on the signal, and the boot module under the
 * machine's own Node (/usr/bin/node, 20 on Debian 13). "Opens no port": no listening TCP socket among
 * the process's descriptors (per /proc/net/tcp{,6}), no "Debugger listening" line, and
 * the process still running.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import * as esbuild from "esbuild";
import { repoRoot, startDaemonProcess } from "../helpers/daemon-process.ts";

/** Inodes of TCP sockets in LISTEN state (st 0A), with their local ports, from /proc/net/tcp{,6}. */
function listeningTcp(): Map<string, number> {
  const out = new Map<string, number>();
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, "utf8").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== "0A") continue;
      out.set(f[9], parseInt(f[1].split(":")[1], 16));
    }
  }
  return out;
}

/** Local ports of the listening TCP sockets `pid` holds. */
function listeningPortsOf(pid: number): number[] {
  const listening = listeningTcp();
  const ports: number[] = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode !== undefined && listening.has(inode)) ports.push(listening.get(inode)!);
  }
  return ports;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitForFile(file: string, pattern: RegExp, timeoutMs = 10_000): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    if (existsSync(file) && pattern.test(readFileSync(file, "utf8"))) return;
    if (Date.now() - t0 > timeoutMs) assert.fail(`${file} never matched ${pattern}: ${existsSync(file) ? readFileSync(file, "utf8") : "(absent)"}`);
    await sleep(50);
  }
}

describe("SIGUSR1 opens no way into the daemon", () => {
  it("the daemon, signalled SIGUSR1 twice, listens on no TCP port, reopens its log file and serves on", async () => {
    const logDir = mkdtempSync(path.join(tmpdir(), "no-inspector-log-"));
    const logFile = path.join(logDir, "csi-proxy.log");
    const d = await startDaemonProcess({ args: ["-logtostderr=false", "-log_file", logFile], waitReady: false });
    try {
      await waitForFile(logFile, /Serving 23 endpoints/);
      renameSync(logFile, `${logFile}.1`); // as logrotate does
      const pid = d.child.pid!;
      assert.deepEqual(listeningPortsOf(pid), []);
      for (let i = 0; i < 2; i++) {
        process.kill(pid, "SIGUSR1");
        await sleep(400);
      }
      assert.equal(d.child.exitCode, null, "still running");
      assert.deepEqual(listeningPortsOf(pid), [], "no listening TCP socket");
      assert.doesNotMatch(d.stderr(), /Debugger listening|inspector/i);
      await waitForFile(logFile, /Reopened the log file/);
    } finally {
      assert.equal(await d.stop(), 0);
      rmSync(logDir, { recursive: true, force: true });
    }
  });

  it("under the machine's Node.js: the listener keeps the inspector shut and runs the reopen action", async (t) => {
    const old = "/usr/bin/node";
    const version = existsSync(old) ? spawnSync(old, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout.trim() : "";
    // A machine without its own Node.js, or with the test's: the daemon test above covers it.
    if (version === "" || version === process.versions.node) {
      t.diagnostic(`machine Node ${version || "absent"}: covered by the daemon test`);
      return;
    }
    const dir = mkdtempSync(path.join(tmpdir(), "no-inspector-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const entry = path.join(dir, "entry.ts");
    const marker = path.join(dir, "reopened");
    writeFileSync(
      entry,
      `import { setSigusr1Action } from ${JSON.stringify(path.join(repoRoot, "src/boot/no-inspector.ts"))};\n` +
        `import { appendFileSync } from "node:fs";\n` +
        `setSigusr1Action(() => appendFileSync(${JSON.stringify(marker)}, "x"));\n` +
        `process.stdout.write("ready\\n");\nsetTimeout(() => {}, 20_000);\n`,
    );
    const bundle = path.join(dir, "entry.mjs");
    await esbuild.build({ entryPoints: [entry], outfile: bundle, bundle: true, platform: "node", format: "esm", logLevel: "error" });
    const child = spawn(old, [bundle], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    await new Promise<void>((resolve) => child.stdout!.once("data", () => resolve()));
    try {
      process.kill(child.pid!, "SIGUSR1");
      await sleep(300);
      process.kill(child.pid!, "SIGUSR1");
      await sleep(400);
      assert.equal(child.exitCode, null, "still running");
      assert.deepEqual(listeningPortsOf(child.pid!), []);
      assert.doesNotMatch(stderr, /Debugger listening/);
      assert.equal(readFileSync(marker, "utf8"), "xx", "the reopen action ran once per signal");
    } finally {
      child.kill("SIGKILL");
    }
  });
});
