// The daemon process as operators see it: flags, exit codes, endpoint ownership, stale sockets,
// socket permissions, clean stops and log files.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { connectGroup } from "../../src/client/connect-group.ts";
import { nodeBinary, repoRoot, startDaemonProcess } from "../helpers/daemon-process.ts";

const main = path.join(repoRoot, "src/main.ts");
const run = (args: string[]) => spawnSync(nodeBinary, [main, ...args], { encoding: "utf8", timeout: 20_000 });

describe("csi-proxy command line", () => {
  it("exits 2 with Go's message and the usage on an unknown flag", () => {
    const r = run(["-bogus-flag=1"]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /^flag provided but not defined: -bogus-flag$/m);
    assert.match(r.stderr, /Usage of csi-proxy:/);
    assert.match(r.stderr, /-kubelet-path string/);
  });

  it("exits 2 when a flag misses its value or a bool is malformed", () => {
    assert.equal(run(["-kubelet-path"]).status, 2);
    const r = run(["-require-privacy=maybe"]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /invalid boolean value "maybe" for -require-privacy/);
  });

  it("-help prints the usage and exits 0", () => {
    const r = run(["-help"]);
    assert.equal(r.status, 0);
    assert.match(r.stderr, /-working-dir value/);
  });

  it("refuses -windows-service off Windows", () => {
    const r = run(["-windows-service", "-socket-dir", path.join(tmpdir(), "csi-proxy-never")]);
    assert.equal(r.status, 2, "a configuration error");
    assert.match(r.stderr, /only supported on Windows/);
  });
});

describe("csi-proxy endpoints", () => {
  it("serves 23 sockets owned by its user only (0600 in a 0700 dir) and removes them on SIGTERM", async () => {
    const d = await startDaemonProcess();
    const sockets = readdirSync(d.socketDir).sort();
    assert.equal(sockets.length, 23);
    assert.ok(sockets.includes("csi-proxy-volume-v2alpha1.sock"));
    assert.equal(statSync(d.socketDir).mode & 0o777, 0o700);
    for (const s of sockets) assert.equal(statSync(path.join(d.socketDir, s)).mode & 0o777, 0o600, s);
    d.child.kill("SIGTERM");
    assert.equal(await d.exited, 0);
    assert.deepEqual(readdirSync(d.socketDir), []);
    assert.match(d.stderr(), /Received SIGTERM, stopping/);
    await d.stop();
  });

  it("stops cleanly on SIGINT", async () => {
    const d = await startDaemonProcess();
    d.child.kill("SIGINT");
    assert.equal(await d.exited, 0);
    await d.stop();
  });

  it("settles its start-up memory once serving (compilers released, full GC), then serves as before", async () => {
    const d = await startDaemonProcess({ args: ["-v=2"] });
    const [line] = await d.waitFor(/After start: .*/);
    assert.match(line, /After start: RSS [\d.]+ → [\d.]+ MB in [\d.]+ ms \(compilers resumed, full GC done\)/);
    const fs = await connectGroup("filesystem", { socketDir: d.socketDir, versions: ["v1"] });
    // Enough calls for the serving code to be compiled by the released compilers.
    for (let i = 0; i < 300; i++) assert.equal((await fs.client.pathExists({ path: d.kubeletDir })).exists, true);
    fs.close();
    assert.equal(await d.stop(), 0);
  });

  it("refuses to start when another live process serves the endpoints, and leaves it serving", async () => {
    const first = await startDaemonProcess();
    const r = run(["-socket-dir", first.socketDir, "-kubelet-path", first.kubeletDir]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /already served by another process/);
    const fs = await connectGroup("filesystem", { socketDir: first.socketDir, versions: ["v1"] });
    assert.deepEqual((await fs.client.pathExists({ path: first.kubeletDir })).exists, true);
    fs.close();
    assert.equal(await first.stop(), 0);
  });

  it("replaces sockets left behind by a killed daemon", async () => {
    const first = await startDaemonProcess();
    first.child.kill("SIGKILL");
    await first.exited;
    assert.equal(readdirSync(first.socketDir).length, 23, "stale sockets left by SIGKILL");
    const second = await startDaemonProcess({ socketDir: first.socketDir });
    const fs = await connectGroup("filesystem", { socketDir: first.socketDir, versions: ["v1"] });
    assert.equal((await fs.client.pathExists({ path: second.kubeletDir })).exists, true);
    fs.close();
    assert.equal(await second.stop(), 0);
    await first.stop();
  });

  it("refuses a socket directory others can write (0777): exit 2, one fix-it line, nothing served, mode untouched", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-open-"));
    try {
      chmodSync(dir, 0o777);
      const r = run(["-socket-dir", dir, "-kubelet-path", dir]);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /-socket-dir \S+ is group- or world-writable \(mode 0777\): others could replace its sockets; refusing it \(fix: chmod 0700 \S+\)\n$/);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.deepEqual(readdirSync(dir), []);
      assert.equal(statSync(dir).mode & 0o777, 0o777);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("never replaces a file that is not a socket", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-notsock-"));
    const precious = path.join(dir, "csi-proxy-disk-v1.sock");
    writeFileSync(precious, "precious data");
    const r = run(["-socket-dir", dir, "-kubelet-path", dir]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /exists and is not a socket/);
    assert.equal(readFileSync(precious, "utf8"), "precious data");
    assert.deepEqual(readdirSync(dir), ["csi-proxy-disk-v1.sock"], "nothing half-started left behind");
    rmSync(dir, { recursive: true, force: true });
  });

  it("accepts Go-style flags: repeated --working-dir with = or a space, and writes -log_file", async () => {
    const extra = mkdtempSync(path.join(tmpdir(), "csi-proxy-wd-"));
    const a = path.join(extra, "a"), b = path.join(extra, "b"), log = path.join(extra, "csi-proxy.log");
    mkdirSync(a);
    mkdirSync(b);
    const d = await startDaemonProcess({ args: [`--working-dir=${a}`, "-working-dir", b, "-logtostderr=false", `-log_file=${log}`, "-v=2"], waitReady: false });
    for (let i = 0; i < 100 && !readFileSync(log, { flag: "a+" }).toString().includes("Serving 23 endpoints"); i++) await new Promise((r) => setTimeout(r, 100));
    const fs = await connectGroup("filesystem", { socketDir: d.socketDir, versions: ["v1"] });
    await fs.client.mkdir({ path: path.join(a, "x") });
    await fs.client.mkdir({ path: path.join(b, "y") });
    assert.ok(existsSync(path.join(a, "x")) && existsSync(path.join(b, "y")));
    fs.close();
    assert.equal(await d.stop(), 0);
    const text = readFileSync(log, "utf8");
    assert.match(text, new RegExp(`Working directories: \\[${a} ${b} ${d.kubeletDir}\\]`));
    assert.match(text, /\/v1\.Filesystem\/Mkdir code=OK/);
    rmSync(extra, { recursive: true, force: true });
  });
});
