// Red team: a recursive delete that fails part-way — an immutable file (chattr +i,
// EPERM) or a busy writer re-creating files in a subdirectory (ENOTEMPTY) — while concurrent Mkdir
// calls keep opening directories in the same daemon, so descriptor numbers are closed and reused
// all the time. Rmdir(force) and RmdirContents alternate. After every answer:
// - every file outside the named tree (in the kubelet dir, the working dir and outside both, in the
//   very directories Mkdir opens, under the same names the tree uses) keeps its checksum;
// - the answer is a deliberate refusal whose text says how much was removed and what is left;
// - (immutable case) nothing in the tree changes after the answer: the call's work has stopped.
// Real daemon (test/helpers/daemon-process.ts), Linux, root (chattr). Attempts per case:
// DELETE_RACE_ATTEMPTS (default 24). Figures are printed as "delete-figures {json}" lines
// (docs/reliability.md, "Failing deletes").
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { startDaemonProcess, type DaemonProcess } from "../helpers/daemon-process.ts";
import { connectGroup } from "../../src/client/connect-group.ts";

const ATTEMPTS = Number(process.env.DELETE_RACE_ATTEMPTS ?? 20);
const FILES = 40;
const SUBDIRS = 6;
const MKDIR_STREAMS = Number(process.env.DELETE_RACE_MKDIRS ?? 8);

const skip = process.platform !== "linux" ? "Linux only" : process.getuid?.() !== 0 ? "needs root (chattr +i)" : undefined;

type Fs = Awaited<ReturnType<typeof connectGroup<"filesystem", "v2alpha1">>>;
const names = Array.from({ length: FILES }, (_, i) => `t${i}`);

/** Files t0..t63 in `dir` (each with its own content). */
function fill(dir: string, tag: string) {
  mkdirSync(dir, { recursive: true });
  for (const n of names) writeFileSync(path.join(dir, n), `${tag}/${n}\n`);
}

/** Checksum of the t* files directly in each of `dirs` (names and contents). */
function fingerprint(dirs: string[]): string {
  const h = createHash("sha256");
  for (const d of dirs) {
    let list: string[];
    try {
      list = readdirSync(d);
    } catch {
      h.update(`${d} missing\0`);
      continue;
    }
    for (const n of list.filter((x) => /^t\d+$/.test(x)).sort()) {
      h.update(`${d}/${n}\0`);
      h.update(readFileSync(path.join(d, n)));
    }
  }
  return h.digest("hex");
}

/** Every entry below `dir` (names only), as one string: equal before and after means nothing changed. */
function treeState(dir: string): string {
  const out: string[] = [];
  const walk = (d: string) => {
    let es;
    try {
      es = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of es) {
      out.push(path.join(d, e.name));
      if (e.isDirectory()) walk(path.join(d, e.name));
    }
  };
  walk(dir);
  return out.sort().join("\n");
}

/** The tree to delete: t* files at every level, SUBDIRS subdirectories each with t* and a nested one. */
function buildTree(root: string) {
  fill(root, "tree");
  for (let i = 0; i < SUBDIRS; i++) {
    fill(path.join(root, `d${i}`), `tree/d${i}`);
    fill(path.join(root, `d${i}`, "e"), `tree/d${i}/e`);
  }
}

/** Removes the tree as the test's own cleanup (immutable flags dropped first). */
function removeTree(root: string) {
  try {
    execFileSync("chattr", ["-R", "-i", root], { stdio: "ignore" });
  } catch {}
  rmSync(root, { recursive: true, force: true });
}

const WRITER = `
const fs = require("node:fs"), path = require("node:path");
const dir = process.argv[1];
for (let i = 0; ; i++) {
  try { fs.writeFileSync(path.join(dir, "w" + (i % 50)), "busy"); } catch { try { fs.mkdirSync(dir); } catch {} }
}`;

interface Figures {
  case: string;
  attempts: number;
  outcomes: Record<string, number>;
  outsideTouched: number;
  changedAfterAnswer: number;
  /** Refusals whose text does not say how much was removed. */
  answersWithoutCounts: number;
  ms: number;
  sample?: string;
}

describe("a failing recursive delete while Mkdir calls open directories", { skip: skip ?? false }, () => {
  let daemon: DaemonProcess;
  let fs: Fs;
  let K: string;
  let W: string;
  let watched: string[];
  let clean: string;
  let wdRoot: string;

  before(async () => {
    wdRoot = mkdtempSync(path.join(tmpdir(), "csi-delete-wd-"));
    W = path.join(wdRoot, "wd");
    mkdirSync(W);
    daemon = await startDaemonProcess({ args: ["-working-dir", W] });
    K = daemon.kubeletDir;
    // Directories Mkdir opens (every ancestor of its targets) and one it never opens, each holding
    // files under the tree's own names.
    watched = [
      daemon.root, wdRoot, path.join(daemon.root, "outside"), K, path.join(K, "others"), path.join(K, "others", "a"),
      path.join(K, "others", "a", "b"), path.join(K, "pods"), W, path.join(W, "x"), path.join(W, "x", "y"),
    ];
    watched = watched.flatMap((d) => [d, ...Array.from({ length: SUBDIRS }, (_, i) => path.join(d, `d${i}`))]);
    for (const d of watched) fill(d, `outside:${d}`);
    clean = fingerprint(watched);
    fs = await connectGroup("filesystem", { socketDir: daemon.socketDir, versions: ["v2alpha1"] });
  });

  after(async () => {
    fs?.close();
    if (daemon) {
      removeTree(path.join(daemon.kubeletDir, "pods"));
      const log = daemon.stderr();
      await daemon.stop();
      rmSync(wdRoot, { recursive: true, force: true });
      assert.doesNotMatch(log, /Closing file descriptor \d+ on garbage collection/, "a handle was closed by GC");
    }
  });

  /** Mkdir calls in MKDIR_STREAMS loops until `stop` resolves: each opens every ancestor of its target. */
  function mkdirStorm(stop: Promise<void>): Promise<void> {
    let stopped = false;
    void stop.then(() => (stopped = true));
    let n = 0;
    const loop = async (s: number) => {
      while (!stopped) {
        const base = s % 2 === 0 ? path.join(K, "others", "a", "b") : path.join(W, "x", "y");
        await fs.client.mkdir({ path: path.join(base, `mk-${s}`, `n${n++ % 8}`) }).catch(() => {});
      }
    };
    return Promise.all(Array.from({ length: MKDIR_STREAMS }, (_, s) => loop(s))).then(() => {});
  }

  async function run(name: string, trigger: "immutable" | "writer"): Promise<Figures> {
    const fig: Figures = { case: name, attempts: 0, outcomes: {}, outsideTouched: 0, changedAfterAnswer: 0, answersWithoutCounts: 0, ms: 0 };
    const t0 = Date.now();
    const tree = path.join(K, "pods", `victim-${name}`);
    // One writer for the case, let loose only while a call runs (SIGCONT/SIGSTOP).
    const writer = trigger === "writer" ? spawn(process.execPath, ["-e", WRITER, path.join(tree, "d0", "busy")], { stdio: "ignore" }) : undefined;
    if (writer) process.kill(writer.pid!, "SIGSTOP");
    try {
    for (let i = 0; i < ATTEMPTS; i++) {
      removeTree(tree);
      buildTree(tree);
      if (trigger === "immutable") execFileSync("chattr", ["+i", path.join(tree, `d${i % SUBDIRS}`, names[(i * 7) % FILES])]);
      else {
        process.kill(writer!.pid!, "SIGCONT");
        await new Promise((r) => setTimeout(r, 20));
      }
      let release!: () => void;
      const stop = new Promise<void>((r) => (release = r));
      const storm = mkdirStorm(stop);
      let outcome: string;
      try {
        await new Promise((r) => setTimeout(r, 5 + (i % 4) * 5));
        const contents = i % 2 === 1;
        const call = contents ? fs.client.rmdirContents({ path: tree }) : fs.client.rmdir({ path: tree, force: true });
        outcome = await call.then(() => "OK", (e: { code?: number; message?: string }) => {
          fig.sample ??= e.message;
          if (!/removed \d+ entr/.test(e.message ?? "")) fig.answersWithoutCounts++;
          return `code ${e.code}`;
        });
        if (trigger === "immutable") {
          const s1 = treeState(tree);
          await new Promise((r) => setTimeout(r, 150));
          if (treeState(tree) !== s1) fig.changedAfterAnswer++;
        }
      } finally {
        if (writer) process.kill(writer.pid!, "SIGSTOP");
        release();
        await storm;
      }
      fig.attempts++;
      fig.outcomes[outcome] = (fig.outcomes[outcome] ?? 0) + 1;
      if (fingerprint(watched) !== clean) {
        fig.outsideTouched++;
        for (const d of watched) fill(d, `outside:${d}`);
      }
      removeTree(tree);
    }
    } finally {
      writer?.kill("SIGKILL");
    }
    fig.ms = Date.now() - t0;
    process.stdout.write(`delete-figures ${JSON.stringify(fig)}\n`);
    return fig;
  }

  it("immutable file (EPERM): nothing outside the tree changes, the answer says what is left, nothing moves after it", async () => {
    const f = await run("immutable", "immutable");
    assert.equal(f.outsideTouched, 0, `files outside the named tree changed in ${f.outsideTouched} of ${f.attempts} attempts`);
    assert.equal(f.changedAfterAnswer, 0, `the tree still changed after the answer in ${f.changedAfterAnswer} of ${f.attempts} attempts`);
    assert.equal(f.outcomes["code 7"], f.attempts, `every attempt is PermissionDenied: ${JSON.stringify(f.outcomes)} ${f.sample}`);
    assert.equal(f.answersWithoutCounts, 0, `answers without counts: ${f.sample}`);
  });

  it("busy writer (ENOTEMPTY): nothing outside the tree changes", async () => {
    const f = await run("writer", "writer");
    assert.equal(f.outsideTouched, 0, `files outside the named tree changed in ${f.outsideTouched} of ${f.attempts} attempts`);
    const bad = Object.keys(f.outcomes).filter((o) => o !== "OK" && o !== "code 9");
    assert.deepEqual(bad, [], `only OK or FailedPrecondition: ${JSON.stringify(f.outcomes)} ${f.sample}`);
    assert.equal(f.answersWithoutCounts, 0, `answers without counts: ${f.sample}`);
  });
});

