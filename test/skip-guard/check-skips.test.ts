import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { it } from "node:test";
import { enforced, parseSkips, unexpectedSkips } from "./check-skips.ts";
import { allowedSkips } from "./allowed-skips.ts";

const here = import.meta.dirname;

it("only CI's root run is held to the list; a listed skip passes, any other fails", () => {
  assert.equal(enforced({ CI: "true" }, 0), true);
  assert.equal(enforced({ CI: "true" }, 1000), false);
  assert.equal(enforced({}, 0), false);
  const skips = parseSkips('{"file":"a.test.ts","name":"x","reason":"no tool"}\n\n{"file":"b.test.ts","name":"y","reason":""}\n');
  assert.deepEqual(unexpectedSkips(skips, [{ file: "a.test.ts", name: "x", why: "w" }]), [{ file: "b.test.ts", name: "y", reason: "" }]);
});

it("the reporter records a skipped test and the guard fails CI's run on it", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "skip-guard-"));
  try {
    const t = path.join(dir, "s.test.ts");
    fs.writeFileSync(t, 'import { test } from "node:test";\ntest("needs a tool", { skip: "tool missing" }, () => {});\ntest("runs", () => {});\n');
    const out = path.join(dir, "skips.jsonl");
    // without NODE_TEST_CONTEXT, which would make the child report to this runner instead of its reporter
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "NODE_TEST_CONTEXT"));
    const run = spawnSync(process.execPath, ["--test", `--test-reporter=${path.join(here, "skip-reporter.ts")}`, `--test-reporter-destination=${out}`, t], { encoding: "utf8", env });
    assert.equal(run.status, 0, run.stderr);
    const recorded = parseSkips(fs.readFileSync(out, "utf8"));
    assert.deepEqual(recorded.map((s) => [s.name, s.reason]), [["needs a tool", "tool missing"]]);
    const guard = spawnSync(process.execPath, [path.join(here, "check-skips.ts"), out], { encoding: "utf8", env: { ...env, CI: "true" } });
    if (process.getuid?.() === 0) {
      assert.equal(guard.status, 1, guard.stdout);
      assert.match(guard.stderr, /1 test\(s\) skipped in CI that are not on test\/skip-guard\/allowed-skips\.ts/);
      assert.match(guard.stderr, /"needs a tool" — tool missing/);
    } else assert.equal(guard.status, 0, guard.stderr);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it("a listed skip with a reason pattern passes only with that reason", () => {
  const allowed = [{ file: "k.test.ts", name: "suite", why: "w", reason: /: not in the initial PID namespace$/ }];
  const ns = { file: "k.test.ts", name: "suite", reason: "the kernel's listing cannot be had here: not in the initial PID namespace" };
  const other = { file: "k.test.ts", name: "suite", reason: "the kernel's listing cannot be had here: kernel BTF has no task_struct.pid" };
  assert.deepEqual(unexpectedSkips([ns, other], allowed), [other]);
});

it("in a private PID namespace (a container's), the kernel listing suite skips with its reason, is on the allowed list, and nothing fails", { timeout: 120_000 }, () => {
  const repo = path.resolve(here, "..", "..");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "skip-guard-pidns-"));
  try {
    const out = path.join(dir, "skips.jsonl");
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "NODE_TEST_CONTEXT"));
    const file = "src/host/linux/kernel/kernel-task-listing.test.ts";
    // A private PID namespace with its own /proc: the /proc mount made private in the new mount namespace
    // first (`--mount-proc` needs "/" to be a mount point, which it is not in a chroot such as a fresh
    // debootstrap root), so the new proc never reaches the parent's.
    const run = spawnSync("unshare", ["--pid", "--fork", "--mount", "--propagation", "unchanged", "--", "sh", "-c", 'mount --make-private /proc && mount -t proc proc /proc && exec "$0" "$@"', process.execPath, "--test", "--test-reporter=tap", "--test-reporter-destination=stdout", `--test-reporter=${path.join(here, "skip-reporter.ts")}`, `--test-reporter-destination=${out}`, file], { encoding: "utf8", env, cwd: repo, timeout: 110_000 });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const recorded = parseSkips(fs.readFileSync(out, "utf8"));
    assert.equal(recorded.length, 1, JSON.stringify(recorded));
    assert.match(recorded[0].reason, /not in the initial PID namespace$/);
    assert.deepEqual(unexpectedSkips(recorded, allowedSkips), []);
    assert.doesNotMatch(run.stdout, /^not ok/m);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
