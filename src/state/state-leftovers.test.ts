/**
 * The start-up sweep of temporary state files (state-leftovers.ts, atomic-file.ts): the copies a
 * killed write leaves are removed; the state files themselves, look-alike names, directories and
 * what a planted link points to are not; a refused area is not touched; nothing is created.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { sweepStateLeftovers } from "./state-leftovers.ts";
import { isTempFileOf, removeTempFiles } from "./atomic-file.ts";
import { StateDirRefusal } from "./state-dir-trust.ts";

const TMP_SECRET = ".mutual-chap-secret.tmp-4242-0123456789ab";
const TMP_SMB = ".smb-mappings.json.tmp-77-abcdefabcdef";

function stateDir(t: { after(fn: () => void): void }): { dir: string; outside: string } {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), "state-leftovers-"));
  t.after(() => fs.rmSync(base, { recursive: true, force: true }));
  const dir = path.join(base, "state");
  fs.mkdirSync(path.join(dir, "iscsi"), { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  fs.chmodSync(path.join(dir, "iscsi"), 0o700);
  const outside = path.join(base, "outside");
  fs.writeFileSync(outside, "not csi-proxy's");
  return { dir, outside };
}

const log = () => {
  const lines: string[] = [];
  return { lines, info: (m: string) => lines.push(m), warning: (m: string) => lines.push(m) };
};

test("temporary names: exactly what writeFileAtomic makes", () => {
  assert.ok(isTempFileOf(TMP_SECRET, "mutual-chap-secret"));
  assert.ok(isTempFileOf(TMP_SMB, "smb-mappings.json"));
  for (const n of ["mutual-chap-secret", ".mutual-chap-secret.tmp-1-0123", ".mutual-chap-secret.tmp-x-0123456789ab", ".mutual-chap-secret.tmp-1-0123456789abc", ".other.tmp-1-0123456789ab"]) {
    assert.ok(!isTempFileOf(n, "mutual-chap-secret"), n);
  }
});

test("Linux: leftover copies removed (a planted link itself, never its target); state files, look-alikes and directories kept", async (t) => {
  const { dir, outside } = stateDir(t);
  const iscsi = path.join(dir, "iscsi");
  fs.writeFileSync(path.join(iscsi, "mutual-chap-secret"), "current", { mode: 0o600 });
  fs.writeFileSync(path.join(iscsi, TMP_SECRET), "a full secret", { mode: 0o600 });
  fs.writeFileSync(path.join(iscsi, ".mutual-chap-secret.tmp-1-0123456789ac"), "another", { mode: 0o600 });
  fs.symlinkSync(outside, path.join(iscsi, ".mutual-chap-secret.tmp-2-0123456789ad"));
  fs.mkdirSync(path.join(iscsi, ".mutual-chap-secret.tmp-3-0123456789ae"));
  fs.writeFileSync(path.join(iscsi, ".mutual-chap-secret.tmp-x"), "look-alike");
  fs.writeFileSync(path.join(dir, TMP_SMB), "{}");
  fs.writeFileSync(path.join(dir, "smb-mappings.json"), "{}");
  const l = log();
  const removed = await sweepStateLeftovers({ dir, smb: null, iscsi: null }, "linux", l);
  assert.deepEqual(removed.sort(), [TMP_SMB, `iscsi/${TMP_SECRET}`, "iscsi/.mutual-chap-secret.tmp-1-0123456789ac", "iscsi/.mutual-chap-secret.tmp-2-0123456789ad"].sort());
  assert.deepEqual(fs.readdirSync(iscsi).sort(), [".mutual-chap-secret.tmp-3-0123456789ae", ".mutual-chap-secret.tmp-x", "mutual-chap-secret"]);
  assert.deepEqual(fs.readdirSync(dir).sort(), ["iscsi", "smb-mappings.json"]);
  assert.equal(fs.readFileSync(outside, "utf8"), "not csi-proxy's", "a link's target is never touched");
  assert.equal(fs.readFileSync(path.join(iscsi, "mutual-chap-secret"), "utf8"), "current");
  assert.ok(l.lines.some((m) => /removed 4 temporary file/.test(m)), l.lines.join("\n"));
  assert.ok(l.lines.some((m) => /could not remove iscsi\/\.mutual-chap-secret\.tmp-3/.test(m)), l.lines.join("\n"));
  assert.ok(!l.lines.join("\n").includes("a full secret"));
});

test("Linux: a refused area is not touched; a missing iscsi directory is not created", async (t) => {
  const { dir } = stateDir(t);
  fs.writeFileSync(path.join(dir, "iscsi", TMP_SECRET), "s");
  fs.writeFileSync(path.join(dir, TMP_SMB), "{}");
  const refusal = new StateDirRefusal("refused");
  assert.deepEqual(await sweepStateLeftovers({ dir, smb: null, iscsi: refusal }, "linux"), [TMP_SMB]);
  assert.ok(fs.existsSync(path.join(dir, "iscsi", TMP_SECRET)));
  fs.writeFileSync(path.join(dir, TMP_SMB), "{}");
  assert.deepEqual(await sweepStateLeftovers({ dir, smb: refusal, iscsi: null }, "linux"), [`iscsi/${TMP_SECRET}`]);
  assert.ok(fs.existsSync(path.join(dir, TMP_SMB)));
  fs.rmSync(path.join(dir, "iscsi"), { recursive: true });
  assert.deepEqual(await sweepStateLeftovers({ dir, smb: refusal, iscsi: null }, "linux"), []);
  assert.ok(!fs.existsSync(path.join(dir, "iscsi")), "nothing created");
});

test("Linux: a state sub-directory replaced by a link is refused (nothing removed through it)", { skip: process.platform !== "linux" }, async (t) => {
  const { dir } = stateDir(t);
  const elsewhere = path.join(path.dirname(dir), "elsewhere");
  fs.mkdirSync(elsewhere, { mode: 0o700 });
  fs.writeFileSync(path.join(elsewhere, TMP_SECRET), "someone else's");
  fs.rmSync(path.join(dir, "iscsi"), { recursive: true });
  fs.symlinkSync(elsewhere, path.join(dir, "iscsi"));
  const l = log();
  assert.deepEqual(await sweepStateLeftovers({ dir, smb: null, iscsi: null }, "linux", l), []);
  assert.ok(fs.existsSync(path.join(elsewhere, TMP_SECRET)), "never through a link");
  assert.ok(l.lines.some((m) => /sweep of temporary state files failed: .*symbolic link/.test(m)), l.lines.join("\n"));
});

test("Windows: regular leftover files in the state directory removed; links and directories kept", async (t) => {
  const { dir, outside } = stateDir(t);
  fs.writeFileSync(path.join(dir, TMP_SMB), "{}");
  fs.symlinkSync(outside, path.join(dir, ".smb-mappings.json.tmp-5-0123456789ab"));
  fs.writeFileSync(path.join(dir, "smb-mappings.json"), "{}");
  // what the Windows branch runs on its state directory (there joined with path.win32.join)
  const r = await removeTempFiles(dir, "smb-mappings.json");
  assert.deepEqual(r.removed, [TMP_SMB]);
  assert.deepEqual(r.failed, [".smb-mappings.json.tmp-5-0123456789ab"]);
  assert.equal(fs.readFileSync(outside, "utf8"), "not csi-proxy's");
  assert.ok(fs.existsSync(path.join(dir, "smb-mappings.json")));
});
