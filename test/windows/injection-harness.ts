/**
 * What the injection proofs of the Windows hosts share (injection.test.ts for the storage script,
 * injection-smb-iscsi-system.test.ts for the SMB/iSCSI/System script): the hostile corpus, the
 * recorder of the requests the fake worker received, and the per-operation round-trip test.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { FakePool } from "./fake-pool.ts";

/** Strings that would break out of, or change the meaning of, PowerShell / WQL / wildcard text. */
export const HOSTILE: string[] = [
  "'; Remove-Item -Recurse -Force C:\\; '",
  '"; Stop-Computer -Force; "',
  "$(Stop-Computer -Force)",
  "${env:SystemRoot}",
  "$env:PATH",
  "`$(whoami)`",
  "a`nb`0c",
  "line1\nline2\r\nline3",
  "\u0000nul\u0000",
  "a | Format-Volume -Force",
  "a & calc.exe",
  "a; calc.exe",
  "%PATH%%SystemRoot%",
  "@(1,2) + @{a=1}",
  "{ } . { }",
  "<# comment #> #",
  "-Force",
  "--% verbatim",
  "*",
  "\\\\?\\Volume{*}\\",
  "[a-z]?*",
  "\u2018; Stop-Computer; \u2019", // PowerShell treats U+2018/U+2019 as single quotes
  "\u201c; Stop-Computer; \u201d", // … and U+201C/U+201D as double quotes
  "\u2013Force \u2014Confirm", // … and en/em dashes as parameter dashes
  "\uff04(calc)", // fullwidth dollar
  "a\u037ecalc", // Greek question mark (looks like ;)
  "C:\\x\u202egpj.exe",
  "é日本語😀\ud800", // non-ASCII, astral, lone surrogate
  "'".repeat(1000),
  "x".repeat(100_000),
];

/** A worker operation of a Windows host: how to call it with `s` in each string field, and the args expected on the wire. */
export interface WorkerOperation {
  name: string;
  op: string;
  call: (s: string) => Promise<unknown>;
  args: (s: string) => Record<string, unknown>;
}

/**
 * `sent(fn)` runs `fn` and returns the requests it added to `fake`'s record, after checking that
 * every worker ran `script` (`scriptName` in the message) and that the request lines are pure ASCII.
 */
export function requestRecorder(fake: FakePool, script: string, scriptName: string) {
  return async function sent(fn: () => Promise<unknown>) {
    const before = fake.recorded().raw.length;
    await fn();
    const rec = fake.recorded();
    for (const s of rec.starts) assert.equal(s.script, script, `every worker runs ${scriptName}`);
    for (const line of rec.raw.slice(before)) assert.match(line, /^[\x20-\x7e]*$/, "request lines are pure ASCII");
    return rec.requests.slice(before);
  };
}

/**
 * One test per operation: with each hostile string in its string fields (or once, when it has
 * none), exactly one request is sent, with the operation's op and its args round-tripping exactly.
 */
export function testHostileStringsReachWorkerAsData(operations: WorkerOperation[], sent: ReturnType<typeof requestRecorder>): void {
  for (const operation of operations) {
    test(`${operation.name}: hostile strings reach the worker only as data`, async () => {
      const takesString = Object.values(operation.args("probe")).includes("probe");
      for (const s of takesString ? HOSTILE : [""]) {
        const reqs = await sent(() => operation.call(s));
        assert.equal(reqs.length, 1);
        assert.equal(reqs[0].op, operation.op);
        assert.deepEqual(reqs[0].args, operation.args(s), `${operation.name}: data round-trips exactly`);
      }
    });
  }
}
