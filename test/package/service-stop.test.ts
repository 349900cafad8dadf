// Production starts stop cleanly on SIGTERM: the systemd unit (verified by systemd-analyze, its
// ExecStart run as written on the built bin) and `npm start`, where a supervisor signals the npm
// process — the server must not survive as an orphan still serving.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { repoRoot } from "../helpers/daemon-process.ts";
import { build } from "../../scripts/build.ts";

const unitFile = path.join(repoRoot, "packaging/systemd/csi-proxy.service");

/** PIDs of live processes whose command line mentions `needle`. */
function processesMentioning(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(needle)) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<string> {
  let out = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = (s: string) => {
      out += s;
      if (pattern.test(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    };
    child.stdout?.setEncoding("utf8").on("data", onData);
    child.stderr?.setEncoding("utf8").on("data", onData);
    child.once("exit", () => setTimeout(() => reject(new Error(`exited before ${pattern}:\n${out}`)), 50));
  });
}

async function settle(pids: () => number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  while (pids().length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return pids();
}

describe("stopping on SIGTERM", () => {
  before(() => build());

  it("the systemd unit verifies, runs the installed bin and its ExecStart stops cleanly on KillSignal", async (t) => {
    const unit = readFileSync(unitFile, "utf8");
    const execStart = /^ExecStart=(.*)$/m.exec(unit)![1].split(/\s+/);
    assert.equal(execStart[0], "/usr/local/bin/csi-proxy", "ExecStart runs the bin `npm install -g` installs, not npm");
    assert.match(unit, /^KillSignal=SIGTERM$/m);
    assert.match(unit, /^Type=simple$/m);
    for (const option of ["ProtectSystem", "PrivateTmp", "PrivateDevices", "PrivateMounts", "ProtectHome", "ProtectHostname", "ProtectKernelModules", "ProtectKernelTunables", "ProtectControlGroups", "ReadOnlyPaths", "MemoryDenyWriteExecute", "DevicePolicy"]) {
      assert.doesNotMatch(unit, new RegExp(`^${option}=`, "m"), `${option} would break mounts/devices/V8`);
    }
    const bin = path.join(repoRoot, "dist/bundle/main.js");
    const root = mkdtempSync(path.join(tmpdir(), "csi-proxy-unit-"));
    try {
      if (spawnSync("systemd-analyze", ["--version"]).status === 0) {
        const copy = path.join(root, "csi-proxy.service");
        writeFileSync(copy, unit.replace(`ExecStart=${execStart[0]}`, `ExecStart=${bin}`));
        const verify = spawnSync("systemd-analyze", ["verify", copy], { encoding: "utf8" });
        assert.equal(verify.status, 0, verify.stderr);
        assert.equal(verify.stderr, "", "no unknown or misspelt keys");
      } else {
        t.diagnostic("systemd-analyze not installed: unit syntax not verified");
      }
      // The unit's own argv, with the directories systemd would create moved into the temp root.
      const dirs: Record<string, string> = { "-kubelet-path": "kubelet", "-socket-dir": "sockets", "-state-dir": "state" };
      const argv = execStart.slice(1).map((a, i, all) => (dirs[all[i - 1]] ? path.join(root, dirs[all[i - 1]]) : a));
      mkdirSync(path.join(root, "kubelet"));
      // The unit runs the bin through `#!/usr/bin/env node`: a supported Node.js (≥ 22.12) first on PATH, as
      // the unit's comment asks of the host (this machine's /usr/bin/node may be older).
      const env = { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH}` };
      const server = spawn(bin, argv, { stdio: ["ignore", "ignore", "pipe"], env });
      const exited = new Promise<number | null>((resolve) => server.once("exit", resolve));
      await waitForOutput(server, /Serving 23 endpoints/, 20_000);
      assert.ok(existsSync(path.join(root, "sockets", "csi-proxy-disk-v1.sock")));
      server.kill("SIGTERM");
      assert.equal(await exited, 0);
      assert.deepEqual(readdirSync(path.join(root, "sockets")), [], "every socket removed");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("SIGTERM to the npm process of `npm start` stops the server and removes its sockets", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "csi-proxy-npm-start-"));
    const socketDir = path.join(root, "sockets");
    mkdirSync(path.join(root, "kubelet"));
    try {
      const npm = spawn("npm", ["start", "--", "-socket-dir", socketDir, "-kubelet-path", path.join(root, "kubelet")], {
        cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"],
      });
      const npmExited = new Promise<void>((resolve) => npm.once("exit", () => resolve()));
      await waitForOutput(npm, /Serving 23 endpoints/, 120_000);
      const server = processesMentioning(socketDir).filter((pid) => pid !== npm.pid);
      assert.ok(server.length > 0, "the server runs");
      npm.kill("SIGTERM");
      await npmExited;
      const left = await settle(() => processesMentioning(socketDir), 10_000);
      for (const pid of left) process.kill(pid, "SIGKILL");
      assert.deepEqual(left, [], "no process outlives npm (orphaned server)");
      assert.deepEqual(readdirSync(socketDir), [], "every socket removed");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
