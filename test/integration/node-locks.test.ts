// The daemon and in-process users on one node share the state directory: node-wide locks
// (src/state/node-locks.ts) make them take turns. Two processes race on the same state here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, mkdirSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { repoRoot } from "../helpers/daemon-process.ts";
import { createNodeLocks, lockFileName, STRIPES } from "../../src/state/node-locks.ts";

const child = path.join(repoRoot, "test/helpers/node-locks-child.ts");

function run(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [child, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
    p.stderr.setEncoding("utf8").on("data", (s: string) => (err += s));
    p.on("exit", (code) => resolve({ code, out, err }));
  });
}

async function waitFor(file: string, ms = 60_000) {
  const until = Date.now() + ms;
  while (!existsSync(file)) {
    if (Date.now() > until) throw new Error(`no ${file}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test("two processes: read-increment-write turns on one file are never lost", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-locks-"));
  try {
    const counter = path.join(dir, "counter");
    writeFileSync(counter, "0");
    const n = 150;
    const runs = [run(["counter", dir, counter, String(n), "node"]), run(["counter", dir, counter, String(n), "node"])];
    await new Promise((r) => setTimeout(r, 1500)); // both children loaded and waiting at the barrier (if not, the race is only smaller)
    writeFileSync(path.join(dir, "go"), "");
    for (const r of await Promise.all(runs)) assert.equal(r.code, 0, r.err);
    assert.equal(Number(readFileSync(counter, "utf8")), 2 * n);
    assert.deepEqual(readdirSync(path.join(dir, "locks")), [lockFileName("counter:one")]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("two processes with state directories of their own: the one lock directory makes their turns exclusive, none lost", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-locks-"));
  try {
    const counter = path.join(dir, "counter");
    writeFileSync(counter, "0");
    const n = 150;
    const runs = [run(["counter", dir, counter, String(n), "nodewide"]), run(["counter", dir, counter, String(n), "nodewide"])];
    await new Promise((r) => setTimeout(r, 1500));
    writeFileSync(path.join(dir, "go"), "");
    for (const r of await Promise.all(runs)) assert.equal(r.code, 0, r.err);
    assert.equal(Number(readFileSync(counter, "utf8")), 2 * n);
    assert.deepEqual(readdirSync(path.join(dir, "nodewide")), [lockFileName("counter:one")]);
    assert.equal(readdirSync(dir).filter((f) => f.startsWith("state-")).length, 2, "two state directories, each with its own old-layout locks");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("two processes: SMB uses of one share root are all counted, the mapping made once and removed once", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-locks-smb-"));
  try {
    const stateDir = path.join(dir, "state"), world = path.join(dir, "world");
    mkdirSync(stateDir, { mode: 0o700 });
    mkdirSync(world);
    const n = 12;
    const runs = ["a", "b"].map((id) => run(["smb", stateDir, world, id, String(n), "node"]));
    await new Promise((r) => setTimeout(r, 1500));
    writeFileSync(path.join(world, "go"), "");
    await waitFor(path.join(world, "mapped-a"));
    await waitFor(path.join(world, "mapped-b"));
    const state = JSON.parse(readFileSync(path.join(stateDir, "smb-mappings.json"), "utf8"));
    assert.equal(state.roots["\\\\srv\\share"].users.length, 2 * n, "every use recorded once");
    const creates = () => readFileSync(path.join(world, "ops.log"), "utf8").split("\n").filter((l) => l.startsWith("create"));
    assert.equal(creates().length, 1, "mapped once");
    writeFileSync(path.join(world, "remove"), "");
    for (const r of await Promise.all(runs)) {
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(JSON.parse(r.out).errors, []);
    }
    const ops = readFileSync(path.join(world, "ops.log"), "utf8").trim().split("\n").map((l) => l.split(" ")[0]);
    assert.deepEqual(ops, ["create", "remove"], "removed once, after the last use of both processes");
    assert.deepEqual(JSON.parse(readFileSync(path.join(stateDir, "smb-mappings.json"), "utf8")).roots, {});
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("lock files are bounded: one per stripe and namespace; a key without a name has one file", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-locks-bound-"));
  try {
    const locks = createNodeLocks({ dir, platform: "linux" });
    for (let i = 0; i < 500; i++) await locks.run(`smb-root:\\\\srv${i}\\s`, async () => {});
    await locks.runAll(["smb-state", "disk:1", "disk:2"], async () => {});
    const files = readdirSync(dir);
    assert.ok(files.filter((f) => f.startsWith("smb-root.")).length <= STRIPES);
    assert.ok(files.includes("smb-state.lock"));
    // A disk has a lock file of its own: a device held by a long step locks no other disk.
    assert.ok(files.includes("disk.1.lock") && files.includes("disk.2.lock"));
    // Two keys of one stripe in one call do not wait for themselves.
    const a = "smb-root:\\\\srv1\\s";
    let b = "smb-root:\\\\srv2\\s";
    for (let i = 3; lockFileName(b) !== lockFileName(a); i++) b = `smb-root:\\\\srv${i}\\s`;
    await locks.runAll([a, b], async () => {});
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("work left running after its call was answered keeps the node-wide lock (another process waits), named in refusals; a waiter's deadline stops its poll", async () => {
  const { runInCall, noteOutliving } = await import("../../src/util/call-scope.ts");
  const { Code } = await import("../../src/errors.ts");
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-locks-"));
  try {
    // Two lock sets on one directory: flock(2) locks belong to open file descriptions, so these exclude each other as two processes do.
    const daemon = createNodeLocks({ dir, platform: "linux" });
    const other = createNodeLocks({ dir, platform: "linux" });
    let endWork!: () => void;
    const ended = new Promise<void>((r) => (endWork = r));
    const answered = await runInCall({}, () =>
      daemon.run("disk:3", async () => {
        noteOutliving({ description: "mkfs.ext4 -q /dev/sdz1 (pid 4242)", ended });
        throw new Error("deadline exceeded");
      }, { what: "FormatVolume of volume v" }),
    ).catch((e: Error) => e.message);
    assert.equal(answered, "deadline exceeded");

    const refused = await daemon.run("disk:3", async () => "ran", { what: "ResizeVolume of volume v" }).catch((e) => e);
    assert.equal(refused.code, Code.Aborted);
    assert.match(refused.message, /^cannot ResizeVolume of volume v: an operation is pending on disk\.\d+\.lock: FormatVolume of volume v \(started .*\) was answered .* but mkfs\.ext4 -q \/dev\/sdz1 \(pid 4242\) is still running/);

    let ran = false;
    const waiting = other.run("disk:3", async () => void (ran = true));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(ran, false, "another process does not get the disk while the work goes on");
    const ac = new AbortController();
    const third = createNodeLocks({ dir, platform: "linux" });
    const gaveUp = runInCall({ signal: ac.signal }, () => third.run("disk:3", async () => "ran", { what: "FormatVolume of volume w" })).catch((e) => e);
    await new Promise((r) => setTimeout(r, 100));
    ac.abort();
    const err = await gaveUp;
    assert.equal(err.code, Code.Canceled, String(err));
    assert.match(err.message, /FormatVolume of volume w was not started \(it was waiting for the node-wide lock .*disk\.\d+\.lock, held by another csi-proxy process on this node\); nothing was done/);

    endWork();
    await waiting;
    assert.equal(ran, true, "the disk is free once the work ended");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
