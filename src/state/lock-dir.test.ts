// The node-wide lock directory (lock-dir.ts, node-locks-for.ts): created 0700, refused with a
// fix-it line when others could write it (failing closed: no locks "off"), both the lock
// directory's and the old <state-dir>/locks lock taken, the daemon's marker.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Code, CsiProxyError } from "../errors.ts";
import { defaultLockDir, markLockDir, privateLockDirWarning, secureLinuxLockDir } from "./lock-dir.ts";
import { nodeLocks } from "./node-locks-for.ts";
import { createNodeLocks } from "./node-locks.ts";
import { noteOutliving, runInCall } from "../util/call-scope.ts";
import { runCommand } from "../host/exec/run-command.ts";

const linux = process.platform === "linux";
const root = linux && process.getuid?.() === 0;

function refused(fn: () => unknown, text: RegExp) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof CsiProxyError && e.code === Code.FailedPrecondition, String(e));
    assert.match(e.message, text);
    return true;
  });
}

test("a missing lock directory is created 0700; one others could write is refused with the fix", { skip: !root && "needs root (chown)" }, () => {
  const top = mkdtempSync(path.join(tmpdir(), "csi-proxy-lockdir-"));
  try {
    const dir = path.join(top, "run", "csi-proxy-locks");
    secureLinuxLockDir(dir);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    chmodSync(dir, 0o777);
    refused(() => secureLinuxLockDir(dir), new RegExp(`^lock directory ${dir} \\(-lock-dir\\) is group- or world-writable \\(mode 0777\\): .*refusing it.*\\(fix: chmod 0700 ${dir}\\)$`));
    chmodSync(dir, 0o700);
    chownSync(dir, 65534, 0);
    refused(() => secureLinuxLockDir(dir), new RegExp(`is owned by uid 65534, not csi-proxy's uid 0: .*\\(fix: chown 0 ${dir} && chmod 0700 ${dir}\\)$`));
    const real = path.join(top, "elsewhere");
    mkdirSync(real, { mode: 0o700 });
    const link = path.join(top, "link");
    symlinkSync(real, link);
    refused(() => secureLinuxLockDir(link), new RegExp(`is a symbolic link to ${readlinkSync(link)}: .*\\(fix: rm ${link} \\(csi-proxy creates it\\), or pass the real directory as -lock-dir\\)$`));
    const open = path.join(top, "open");
    mkdirSync(open, { mode: 0o777 });
    chmodSync(open, 0o777);
    refused(() => secureLinuxLockDir(path.join(open, "locks")), /has a parent .*open writable by others without the sticky bit \(mode 0777\).*\(fix: chmod go-w /);
  } finally {
    rmSync(top, { recursive: true, force: true });
  }
});

test("a refused lock directory fails closed: no locks are made (never in-process only)", { skip: !linux && "Linux" }, async () => {
  const top = mkdtempSync(path.join(tmpdir(), "csi-proxy-lockdir-"));
  try {
    const lockDir = path.join(top, "locks");
    mkdirSync(lockDir);
    chmodSync(lockDir, 0o777);
    const logger = { info() {}, warning() {} };
    await assert.rejects(nodeLocks({ platform: "linux", stateDir: path.join(top, "state"), lockDir, logger }, null), (e: unknown) => {
      assert.ok(e instanceof CsiProxyError && e.code === Code.FailedPrecondition, String(e));
      assert.match(e.message, /fix: chmod 0700/);
      return true;
    });
  } finally {
    rmSync(top, { recursive: true, force: true });
  }
});

test("both locks are taken: the lock directory's and the old <state-dir>/locks one (a device writer holds both, fds 3 and 4)", { skip: !linux && "Linux" }, async () => {
  const top = mkdtempSync(path.join(tmpdir(), "csi-proxy-lockdir-"));
  try {
    const lockDir = path.join(top, "locks"), stateDir = path.join(top, "state");
    mkdirSync(stateDir, { mode: 0o700 });
    const locks = await nodeLocks({ platform: "linux", stateDir, lockDir, logger: { info() {}, warning() {} } }, null);
    const newFile = path.join(lockDir, "disk.7.lock"), oldFile = path.join(stateDir, "locks", "disk.7.lock");
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let fds: string[] = [];
    const holding = locks.run("disk:7", async () => {
      const r = await runCommand("/bin/sh", ["-c", 'for f in /proc/$$/fd/*; do echo "${f##*/} $(readlink "$f")"; done'], { step: "mkfs" });
      fds = r.stdout.split("\n").filter((l) => l.endsWith(".lock"));
      await held;
    });
    await new Promise((r) => setTimeout(r, 100));
    // Another process's lock set on either directory (flock locks belong to open file descriptions) waits.
    for (const dir of [lockDir, path.join(stateDir, "locks")]) {
      const ac = new AbortController();
      const waiting = runInCall({ signal: ac.signal }, () => createNodeLocks({ dir, platform: "linux" }).run("disk:7", async () => "ran")).catch((e: CsiProxyError) => e.code);
      setTimeout(() => ac.abort(), 200);
      assert.equal(await waiting, Code.Canceled, `${dir}: the disk's lock is held there`);
    }
    release();
    await holding;
    assert.deepEqual(fds, [`3 ${newFile}`, `4 ${oldFile}`]);
    // Released: both free.
    assert.equal(await createNodeLocks({ dir: path.join(stateDir, "locks"), platform: "linux" }).run("disk:7", async () => "free"), "free");
    // A state dir refused (or the lock directory itself) takes only the lock directory's lock.
    const only = await nodeLocks({ platform: "linux", stateDir: top, lockDir, logger: { info() {}, warning() {} } }, null);
    assert.equal(await only.run("disk:8", async () => "one"), "one");
  } finally {
    rmSync(top, { recursive: true, force: true });
  }
});

test("the daemon marks the lock directory; a user that finds no mark warns that it may be private to its pod", { skip: !linux && "Linux" }, async () => {
  const top = mkdtempSync(path.join(tmpdir(), "csi-proxy-lockdir-"));
  try {
    const lockDir = path.join(top, "locks");
    const warnings: string[] = [];
    const logger = { info() {}, warning: (m: string) => void warnings.push(m) };
    await nodeLocks({ platform: "linux", stateDir: path.join(top, "state"), lockDir, logger }, new Error("refused"));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], new RegExp(`^lock directory ${lockDir} has no mark of a csi-proxy daemon .*mount the node's ${lockDir} there \\(hostPath`));
    markLockDir(lockDir);
    assert.equal(privateLockDirWarning(lockDir), null);
    await nodeLocks({ platform: "linux", stateDir: path.join(top, "state"), lockDir, logger }, null);
    assert.equal(warnings.length, 1, "no warning once marked");
  } finally {
    rmSync(top, { recursive: true, force: true });
  }
});

test("work left running after its answer keeps both locks: the same process refuses (Aborted), another process's lock set waits", { skip: !linux && "Linux" }, async () => {
  const top = mkdtempSync(path.join(tmpdir(), "csi-proxy-lockdir-"));
  try {
    const lockDir = path.join(top, "locks"), stateDir = path.join(top, "state");
    mkdirSync(stateDir, { mode: 0o700 });
    const locks = await nodeLocks({ platform: "linux", stateDir, lockDir, logger: { info() {}, warning() {} } }, null);
    let endWork!: () => void;
    const ended = new Promise<void>((r) => (endWork = r));
    const answered = await runInCall({}, () =>
      locks.run("disk:3", async () => {
        noteOutliving({ description: "mkfs.ext4 -q /dev/sdz1 (pid 4242)", ended });
        throw new Error("deadline exceeded");
      }, { what: "FormatVolume of volume v" }),
    ).catch((e: Error) => e.message);
    assert.equal(answered, "deadline exceeded");
    const again = await locks.run("disk:3", async () => "ran", { what: "ResizeVolume of volume v" }).catch((e: CsiProxyError) => e);
    assert.ok(again instanceof CsiProxyError && again.code === Code.Aborted, String(again));
    for (const dir of [lockDir, path.join(stateDir, "locks")]) {
      const ac = new AbortController();
      const waiting = runInCall({ signal: ac.signal }, () => createNodeLocks({ dir, platform: "linux" }).run("disk:3", async () => "ran")).catch((e: CsiProxyError) => e.code);
      setTimeout(() => ac.abort(), 200);
      assert.equal(await waiting, Code.Canceled, `${dir}: held while the work goes on`);
    }
    endWork();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(await createNodeLocks({ dir: lockDir, platform: "linux" }).run("disk:3", async () => "free"), "free");
  } finally {
    rmSync(top, { recursive: true, force: true });
  }
});

test("the default lock directory: /run/csi-proxy-locks for root, a directory of its own for another user", () => {
  assert.equal(defaultLockDir("linux", 0), "/run/csi-proxy-locks");
  const saved = process.env.XDG_RUNTIME_DIR;
  try {
    delete process.env.XDG_RUNTIME_DIR;
    assert.equal(defaultLockDir("linux", 1000), "/tmp/csi-proxy-locks-1000");
    process.env.XDG_RUNTIME_DIR = "/run/user/1000";
    assert.equal(defaultLockDir("linux", 1000), "/run/user/1000/csi-proxy-locks");
  } finally {
    if (saved === undefined) delete process.env.XDG_RUNTIME_DIR;
    else process.env.XDG_RUNTIME_DIR = saved;
  }
});
