/**
 * Differential test against upstream's real binary: the oracle corpus (test/oracle/corpus.ts) runs
 * against OUR csi-proxy.exe under Wine, and every answer is compared, as text, with what upstream's
 * exe answered to the same request (test/oracle/corpus/<tag>.json, recorded by
 * scripts/oracle-record.ts with provenance). Needs Wine (skips with the reason when it cannot be
 * installed), never upstream's exe.
 *
 * Each row must be equal (Wine's system-message wording mapped to Windows', compare.ts) or be a
 * deliberate difference of {@link DELIBERATE} (each one listed, with its reason, in
 * docs/driver-compat.md "Upstream's binary as the oracle"), or one of the known, not yet fixed
 * differences listed by id in test/oracle/remaining.json (counted in the docs). Rows upstream
 * answered through Wine's stub powershell.exe, or (v1.3.0) through Wine's WMI by the rule of
 * wine-wmi.ts, show Wine, not upstream, and are not compared.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { wineSuite } from "../windows/wine-harness.ts";
import { AWAITING_RECORDING, awaitingRecording, buildCorpus, flagCases, ORACLE_WORK } from "./corpus.ts";
import { bundleOracleClient, runFlags, runRows, substitute, type Answer } from "./oracle-run.ts";
import { answerText, type RecordedRow, type Recording } from "./compare.ts";
import { DELIBERATE, deliberateReason } from "./deliberate.ts";
import { shownByWineWmi } from "./wine-wmi.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const corpusDir = path.join(here, "corpus");
const recordings: Record<string, Recording> = Object.fromEntries(
  fs
    .readdirSync(corpusDir)
    .filter((f) => f.endsWith(".json"))
    .map((f) => [f.slice(0, -5), JSON.parse(fs.readFileSync(path.join(corpusDir, f), "utf8")) as Recording]),
);

let ours = new Map<string, Answer>();
const oursFlags = new Map<string, { exitCode: number | null; output: string }>();
const { w, skip } = await wineSuite("oracle");
before(async () => {
  if (skip) return;
  const r = await bundleOracleClient(w);
  ours = await runRows(r, w.exeWin, buildCorpus(), /Serving 23 endpoints/);
  for (const f of flagCases) oursFlags.set(f.id, await runFlags(r, w.exeWin, f.args));
});

test("the recordings cover exactly the corpus (re-record with scripts/oracle-record.ts after changing it)", () => {
  const ids = buildCorpus().map((r) => r.id).filter((id) => !awaitingRecording(id));
  assert.ok(Object.keys(recordings).length >= 2, "v1.1.3 and v1.3.0 are recorded");
  for (const [tag, rec] of Object.entries(recordings)) {
    assert.deepEqual(rec.rows.map((r) => r.id), ids, `${tag}: row ids (cases awaiting a recording, corpus.ts AWAITING_RECORDING: ${AWAITING_RECORDING.join(", ")}; recorded now? remove them there)`);
    for (const key of ["tag", "commit", "go", "wine"]) assert.ok(rec.provenance[key], `${tag}: provenance.${key}`);
  }
});

/**
 * Texts of Wine's WMI (upstream v1.3.0 asks WMI where v1.1.3 ran PowerShell): such a row compares
 * only when ours did not reach its own host layer either (ours, under Wine, finds no PowerShell).
 */
const WINE_HOST = /^error (Not Found$|.*: Not Found$|error updating host storage cache)/;

/** Per tag: rows equal, deliberate (by reason), Wine-only, and unexplained differences. */
function classify(tag: string) {
  const rec = recordings[tag]!;
  const older = new Map((recordings["v1.1.3"]?.rows ?? []).map((r) => [r.id, r]));
  const equal: string[] = [];
  const wineOnly: string[] = [];
  const deliberate = new Map<string, string[]>();
  const remaining: string[] = [];
  for (const row of rec.rows) {
    const mine = ours.get(row.id);
    const theirs = answerText(substitute(row, ORACLE_WORK));
    const got = answerText(mine);
    // answered through Wine's stub powershell.exe or Wine's WMI (v1.3.0, wine-wmi.ts), or not at
    // all under Wine: shows Wine, not upstream
    if (row.powershell || theirs.startsWith("none ") || (WINE_HOST.test(theirs) && /PowerShell worker/.test(got)) || (tag !== "v1.1.3" && shownByWineWmi(row, older.get(row.id), mine))) {
      wineOnly.push(row.id);
      continue;
    }
    if (theirs === got) {
      equal.push(row.id);
      continue;
    }
    const reason = deliberateReason(row, theirs, got);
    if (reason) deliberate.set(reason, [...(deliberate.get(reason) ?? []), row.id]);
    else remaining.push(`${row.id}\n    upstream ${tag}: ${theirs}\n    ours:          ${got}`);
  }
  return { equal, wineOnly, deliberate, remaining };
}

for (const tag of Object.keys(recordings).sort()) {
  test(`every answer equals upstream ${tag}'s or is a documented deliberate difference`, { skip }, (t) => {
    const c = classify(tag);
    const deliberateCount = [...c.deliberate.values()].reduce((n, ids) => n + ids.length, 0);
    t.diagnostic(`${tag}: ${recordings[tag]!.rows.length} rows: ${c.equal.length} equal, ${deliberateCount} deliberate, ${c.wineOnly.length} not compared (Wine's powershell stub or WMI, or no answer), ${c.remaining.length} remaining`);
    for (const [reason, ids] of c.deliberate) t.diagnostic(`  deliberate (${ids.length}): ${reason}`);
    // Known, not yet fixed differences are listed by id in remaining.json (ORACLE_WRITE_REMAINING=1
    // rewrites it): the set must match exactly, so a fix or a new difference both show here.
    const ids = c.remaining.map((r) => r.split("\n")[0]!).sort();
    const file = path.join(here, "remaining.json");
    const known = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, string[]>) : {};
    if (process.env.ORACLE_WRITE_REMAINING === "1") {
      known[tag] = ids;
      fs.writeFileSync(file, JSON.stringify(known, null, 1) + "\n");
    }
    const unexplained = c.remaining.filter((r) => !(known[tag] ?? []).includes(r.split("\n")[0]!));
    assert.deepEqual(unexplained, [], `rows that differ without a documented reason:\n${unexplained.join("\n")}`);
    assert.deepEqual((known[tag] ?? []).filter((id) => !ids.includes(id)), [], "rows listed in remaining.json that are equal now: remove them");
  });
}

for (const tag of Object.keys(recordings).sort()) {
  test(`flags: exit codes as upstream ${tag}'s, and the same first line for a bad flag`, { skip }, () => {
    for (const f of recordings[tag]!.flags) {
      const mine = oursFlags.get(f.id)!;
      assert.equal(mine.exitCode, f.exitCode, `${f.id}: exit code\n${mine.output}`);
      if (f.exitCode !== 0) assert.equal(mine.output.split("\n")[0], f.output.split("\n")[0], `${f.id}: first line`);
    }
  });
}

test("rows awaiting an upstream recording: ours answers as the deliberate rule naming them says", { skip }, () => {
  const rows = buildCorpus().filter((r) => awaitingRecording(r.id));
  assert.ok(rows.length > 0);
  for (const row of rows) {
    const got = answerText(ours.get(row.id));
    // upstream's answer is not recorded yet: the rule must cover ours against an answer upstream's checks let through
    const reason = deliberateReason(row as RecordedRow, "ok {}", got);
    assert.ok(reason, `${row.id}: ours ${got} is covered by a deliberate rule`);
  }
});

test("no Windows answer carries a Node errno name", { skip }, () => {
  const named = [...ours].filter(([, a]) => "message" in a && /\bE[A-Z]{3,}\b/.test(a.message) && /\b(ENOENT|ENOTEMPTY|EEXIST|ENOTDIR|EISDIR|EPERM|EACCES|EBUSY|EINVAL|ELOOP)\b/.test(a.message));
  assert.deepEqual(named.map(([id, a]) => `${id}: ${(a as { message: string }).message}`), []);
});

test("every deliberate difference is listed in docs/driver-compat.md", () => {
  const doc = fs.readFileSync(path.join(here, "..", "..", "docs", "driver-compat.md"), "utf8");
  for (const d of DELIBERATE) assert.ok(doc.includes(d.doc), `docs/driver-compat.md names "${d.doc}"`);
});
