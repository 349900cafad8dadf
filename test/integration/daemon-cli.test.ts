// The daemon's command line as its peers behave: -version, positional arguments refused, one exit code
// per class (2 usage/configuration, 1 runtime), errors naming their flag and cause, a warning for a
// missing kubelet directory, an unopenable -log_file fatal, SIGQUIT stopping like SIGTERM and SIGHUP
// reopening the log file.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { nodeBinary, repoRoot, startDaemonProcess } from "../helpers/daemon-process.ts";

const main = path.join(repoRoot, "src/main.ts");
const run = (args: string[]) => spawnSync(nodeBinary, [main, ...args], { encoding: "utf8", timeout: 30_000 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function scratch(): { dir: string; [Symbol.dispose](): void } {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-cli-"));
  return { dir, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
}

async function waitForFile(file: string, pattern: RegExp, timeoutMs = 15_000): Promise<string> {
  const t0 = Date.now();
  for (;;) {
    const text = existsSync(file) ? readFileSync(file, "utf8") : "";
    if (pattern.test(text)) return text;
    if (Date.now() - t0 > timeoutMs) assert.fail(`${file} never matched ${pattern}:\n${text}`);
    await sleep(50);
  }
}

describe("csi-proxy command line, as its peers", () => {
  it("--version and -version print version, commit and Node.js on stdout, exit 0, start nothing", () => {
    using s = scratch();
    for (const flag of ["--version", "-version"]) {
      const r = run([flag, "-socket-dir", path.join(s.dir, "sockets")]);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /^csi-proxy v\d+\.\d+\.\d+\S* \(commit \S+, Node\.js v\d+\.\d+\.\d+ linux\/\w+\)\n$/);
      assert.equal(r.stderr, "");
      assert.ok(!existsSync(path.join(s.dir, "sockets")), "nothing started");
    }
  });

  it("a positional argument (`csi-proxy version`) is refused with the usage, exit 2, nothing started", () => {
    using s = scratch();
    const r = run(["-socket-dir", path.join(s.dir, "sockets"), "version"]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /^csi-proxy: unexpected argument "version" \(flags only; -version prints the version\)\n/);
    assert.match(r.stderr, /Usage of csi-proxy:/);
    assert.ok(!existsSync(path.join(s.dir, "sockets")), "nothing started");
  });

  it("configuration errors exit 2 with one line naming the flag and the cause", () => {
    using s = scratch();
    const base = ["-socket-dir", path.join(s.dir, "sockets"), "-kubelet-path", s.dir, "-state-dir", path.join(s.dir, "state")];
    const cases: [string[], RegExp][] = [
      [["-windows-service"], /-windows-service is only supported on Windows/],
      [["-metrics-bind-address", "127.0.0.1:99999"], /-metrics-bind-address "127\.0\.0\.1:99999": port 99999 is out of range \(0-65535\)/],
      [["-kubelet-path", "var/lib/kubelet"], /-kubelet-path "var\/lib\/kubelet" must be an absolute path/],
      [["-socket-dir", "rel-sockets"], /-socket-dir "rel-sockets" must be an absolute path/],
      [["-log_file", path.join(s.dir, "no", "such", "dir", "x.log"), "-logtostderr=false"], /^csi-proxy: -log_file \S+x\.log: cannot open: ENOENT/],
    ];
    for (const [extra, line] of cases) {
      const r = run([...base, ...extra]);
      assert.equal(r.status, 2, `${extra.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, line, extra.join(" "));
      assert.equal(r.stderr.trim().split("\n").length, 1, `one line: ${r.stderr}`);
    }
    assert.ok(!existsSync(path.join(repoRoot, "rel-sockets")), "a relative socket dir is not created under the working directory");
  });

  it("a lock directory others could write is refused with the fix, exit 2: the daemon does not start without node-wide locks", () => {
    using s = scratch();
    const lockDir = path.join(s.dir, "locks");
    mkdirSync(lockDir);
    chmodSync(lockDir, 0o777);
    const r = run(["-socket-dir", path.join(s.dir, "sockets"), "-kubelet-path", s.dir, "-state-dir", path.join(s.dir, "state"), "-lock-dir", lockDir]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`lock directory ${lockDir} \\(-lock-dir\\) is group- or world-writable \\(mode 0777\\).*\\(fix: chmod 0700 ${lockDir}\\)`));
    assert.equal(r.stderr.trim().split("\n").length, 1, `one line: ${r.stderr}`);
    assert.ok(!existsSync(path.join(lockDir, ".csi-proxy-daemon")), "not marked");
  });

  it("a socket directory on a read-only filesystem is refused naming EROFS, exit 2", () => {
    using s = scratch();
    // A private mount namespace: a read-only tmpfs over the scratch directory, seen by the daemon only.
    // The mount holding it is made private there first (`--propagation private` needs "/" to be a mount
    // point, which it is not in a chroot such as a fresh debootstrap root).
    const script = 'mount --make-rprivate "$(findmnt -no TARGET -T "$1")" && mount -t tmpfs -o ro none "$1" && exec "$2" "$3" -socket-dir "$1/sockets" -kubelet-path "$1"';
    const r = spawnSync("unshare", ["--mount", "--propagation", "unchanged", "--", "sh", "-c", script, "sh", s.dir, nodeBinary, main], { encoding: "utf8", timeout: 30_000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /-socket-dir \S+sockets: cannot create \S+sockets: EROFS: read-only file system/);
  });

  it("a missing kubelet directory is a warning, and the daemon serves", async () => {
    using s = scratch();
    const d = await startDaemonProcess({ args: ["-kubelet-path", path.join(s.dir, "kubelet-to-be")] });
    try {
      assert.match(d.stderr(), /^W.*-kubelet-path \S+kubelet-to-be does not exist \(yet\); calls under it fail until the kubelet creates it$/m);
    } finally {
      assert.equal(await d.stop(), 0);
    }
  });

  it("SIGQUIT stops like SIGTERM: a log line, exit 0, every socket removed", async () => {
    const d = await startDaemonProcess({});
    assert.equal(readdirSync(d.socketDir).length, 23);
    d.child.kill("SIGQUIT");
    assert.equal(await d.exited, 0, d.stderr());
    assert.match(d.stderr(), /Received SIGQUIT, stopping/);
    assert.match(d.stderr(), /\] Stopped\n/);
    assert.deepEqual(readdirSync(d.socketDir), []);
    await d.stop();
  });

  it("SIGHUP reopens the log file (after a rotation) and the daemon keeps serving", async () => {
    using s = scratch();
    const log = path.join(s.dir, "csi-proxy.log");
    const d = await startDaemonProcess({ args: ["-logtostderr=false", "-log_file", log], waitReady: false });
    try {
      await waitForFile(log, /Serving 23 endpoints/);
      renameSync(log, `${log}.1`);
      d.child.kill("SIGHUP");
      const reopened = await waitForFile(log, /Reopened the log file/);
      assert.match(reopened, /^Log file created at: /, "a new file, with klog's header");
      await sleep(200);
      assert.equal(d.child.exitCode, null, "still running");
      assert.equal(readdirSync(d.socketDir).length, 23);
    } finally {
      assert.equal(await d.stop(), 0);
    }
  });
});
