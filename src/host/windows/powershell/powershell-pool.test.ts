/**
 * The PowerShell worker pool, driven against the fake worker (a node script speaking the worker
 * protocol, started with exactly the arguments powershell.exe gets): one script, workers reused,
 * bounded concurrency, per-call timeout, restart after death, stray output ignored, start-up
 * failures reported and backed off.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, CsiProxyError } from "../../../errors.ts";
import { PowerShellPool } from "./powershell-pool.ts";
import { asciiJson } from "./powershell-worker.ts";
import { WORKER_OPS, WORKER_SCRIPT, powershellArgs } from "./scripts/worker-script.ts";
import { powershellExe } from "./powershell-pool.ts";
import { createFakePool } from "../../../../test/windows/fake-pool.ts";
import { processAlive } from "../../../../test/helpers/process-alive.ts";

const codeOf = (err: unknown) => (err as CsiProxyError).code;

test("workers get powershell.exe's arguments, and the script is byte-identical to the constant", async () => {
  const f = createFakePool();
  try {
    await f.pool.call("ping", { echo: "x" });
    const { starts } = f.recorded();
    assert.equal(starts.length, 1);
    assert.deepEqual(starts[0].argv, powershellArgs());
    assert.equal(starts[0].script, WORKER_SCRIPT);
    assert.deepEqual(powershellArgs().slice(0, 10), ["-NoLogo", "-NoProfile", "-NonInteractive", "-InputFormat", "None", "-OutputFormat", "Text", "-ExecutionPolicy", "Bypass", "-EncodedCommand"]);
    // the whole command line stays far below CreateProcess's 32767-character limit
    assert.ok([powershellExe({ SystemRoot: "C:\\Windows" }), ...powershellArgs()].join(" ").length < 30_000);
  } finally {
    await f.close();
  }
});

test("powershell.exe is found by absolute path under %SystemRoot%, never through PATH", () => {
  assert.equal(powershellExe({ SystemRoot: "D:\\Win" }), "D:\\Win\\System32\\WindowsPowerShell\\v1.0\\powershell.exe");
  assert.equal(powershellExe({}), "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe");
});

test("workers are started once and reused: 40 calls, 2 workers", async () => {
  const f = createFakePool();
  try {
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => f.pool.call("ping", { echo: i })));
    assert.deepEqual(results.map((r) => (r as { echo: number }).echo), Array.from({ length: 40 }, (_, i) => i));
    for (let i = 0; i < 10; i++) await f.pool.call("ping", { echo: i });
    const { starts, requests } = f.recorded();
    assert.equal(f.pool.started, 2, "exactly pool-size processes were started");
    assert.ok(starts.length <= 2, `${starts.length} worker processes ran`);
    assert.equal(requests.length, 50);
  } finally {
    await f.close();
  }
});

test("concurrency is bounded by the pool size, and the queue is bounded too", async () => {
  const f = createFakePool({ "volume.flush": { delayMs: 300, result: null } }, { size: 2, maxQueue: 5 });
  try {
    const t0 = Date.now();
    const calls = Array.from({ length: 5 }, () => f.pool.call("volume.flush", { volumeId: "v" }));
    const rejected = await f.pool.call("volume.flush", { volumeId: "v" }).catch((e) => e);
    assert.equal(codeOf(rejected), Code.ResourceExhausted, String(rejected));
    await Promise.all(calls);
    const elapsed = Date.now() - t0;
    assert.ok(elapsed >= 850, `5 calls of 300 ms on 2 workers take 3 rounds (${elapsed} ms)`);
    assert.equal(f.recorded().starts.length, 2);
  } finally {
    await f.close();
  }
});

test("per-call timeout: DeadlineExceeded, the hung worker is replaced, later calls work", async () => {
  const f = createFakePool({ "volume.format": { hang: true } }, { size: 1 });
  try {
    const err = await f.pool.call("volume.format", { volumeId: "v" }, { timeoutMs: 300 }).catch((e) => e);
    assert.equal(codeOf(err), Code.DeadlineExceeded, String(err));
    assert.match(String(err.message), /did not answer within 300 ms/);
    assert.deepEqual(await f.pool.call("ping", { echo: 1 }), { pong: true, echo: 1 });
    assert.equal(f.recorded().starts.length, 2, "a fresh worker replaced the hung one");
  } finally {
    await f.close();
  }
});

test("a worker that dies fails its call with Unavailable and is replaced", async () => {
  const f = createFakePool({ "disk.rescan": { exit: 3 } }, { size: 1 });
  try {
    const err = await f.pool.call("disk.rescan").catch((e) => e);
    assert.equal(codeOf(err), Code.Unavailable, String(err));
    assert.match(String(err.message), /exited \(code 3\)/);
    assert.deepEqual(await f.pool.call("ping", { echo: 2 }), { pong: true, echo: 2 });
    assert.equal(f.recorded().starts.length, 2);
  } finally {
    await f.close();
  }
});

test("output without the protocol marker (cmdlet noise) is ignored", async () => {
  const f = createFakePool({ "volume.get": { noise: "WARNING: something {\"id\":1,\"ok\":true}", result: { uniqueId: "x", fileSystemType: 0, fileSystem: "", size: "1", sizeRemaining: "1" } } });
  try {
    const r = await f.pool.call("volume.get", { volumeId: "x" });
    assert.deepEqual(r, { uniqueId: "x", fileSystemType: 0, fileSystem: "", size: "1", sizeRemaining: "1" });
  } finally {
    await f.close();
  }
});

test("a worker that cannot start: Unavailable with the reason; retries are backed off", async () => {
  const missing = new PowerShellPool({ command: { file: "/nonexistent/powershell.exe", args: powershellArgs() } });
  try {
    const err = await missing.call("ping").catch((e) => e);
    assert.equal(codeOf(err), Code.Unavailable, String(err));
    assert.match(String(err.message), /cannot start PowerShell worker/);
  } finally {
    await missing.close();
  }
  const f = createFakePool({}, { size: 1, env: { CSI_FAKE_PS_EXIT_AT_START: "1" } });
  try {
    const e1 = await f.pool.call("ping").catch((e) => e);
    assert.equal(codeOf(e1), Code.Unavailable, String(e1));
    const e2 = await f.pool.call("ping").catch((e) => e);
    assert.equal(codeOf(e2), Code.Unavailable);
    assert.ok(f.pool.started <= 2, `restarts are backed off (${f.pool.started} starts)`);
  } finally {
    await f.close();
  }
  const slow = createFakePool({}, { size: 1, startTimeoutMs: 300, env: { CSI_FAKE_PS_NEVER_READY: "1" } });
  try {
    const e = await slow.pool.call("ping").catch((err) => err);
    assert.equal(codeOf(e), Code.Unavailable);
    assert.match(String(e.message), /did not start within 300 ms/);
  } finally {
    await slow.close();
  }
});

test("while workers cannot start, calls in the back-off window fail at once with the start-up error", async () => {
  const f = createFakePool({}, { size: 1, env: { CSI_FAKE_PS_EXIT_AT_START: "3" } });
  try {
    const first = await f.pool.call("ping").catch((e) => e);
    assert.equal(codeOf(first), Code.Unavailable);
    // the call that waited for the failed start and those in the back-off answer in one shape
    assert.match(String(first.message), /^ping: PowerShell worker exited \(code 3\) \(PowerShell workers cannot start; next attempt in \d+ ms\)$/);
    const t0 = Date.now();
    const errs = await Promise.all(Array.from({ length: 5 }, () => f.pool.call("ping").catch((e) => e)));
    assert.ok(Date.now() - t0 < 200, `no call waited for the next start attempt (${Date.now() - t0} ms)`);
    for (const e of errs) {
      assert.equal(codeOf(e), Code.Unavailable);
      assert.match(String(e.message), /^ping: PowerShell worker exited \(code 3\) \(PowerShell workers cannot start; next attempt in \d+ ms\)$/);
    }
    assert.equal(f.pool.started, 1, "no start attempt during the back-off");
    await new Promise((r) => setTimeout(r, 300)); // first back-off: 250 ms
    await f.pool.call("ping").catch(() => {});
    assert.equal(f.pool.started, 2, "after the back-off the next call tries again");
  } finally {
    await f.close();
  }
});

test("only the script's constant ops can be called; requests are pure ASCII JSON", async () => {
  const f = createFakePool();
  try {
    const err = await f.pool.call("Remove-Item C:\\ -Recurse", {}).catch((e) => e);
    assert.equal(codeOf(err), Code.Internal);
    assert.equal(f.recorded().raw.length, 0, "an unknown op never reaches a worker");
    for (const op of WORKER_OPS) assert.ok(WORKER_SCRIPT.includes(`'${op}' = {`), `the script defines ${op}`);
    assert.equal(asciiJson({ s: "é\u2019\u{1F600}\n" }), '{"s":"\\u00e9\\u2019\\ud83d\\ude00\\n"}');
  } finally {
    await f.close();
  }
});

test("close() fails queued calls and ends the workers", async () => {
  const f = createFakePool({ "volume.flush": { delayMs: 2000 } }, { size: 1 });
  const running = f.pool.call("volume.flush", { volumeId: "a" }).catch((e) => e);
  const queued = f.pool.call("volume.flush", { volumeId: "b" }).catch((e) => e);
  await new Promise((r) => setTimeout(r, 300));
  await f.close();
  assert.equal(codeOf(await queued), Code.Unavailable);
  assert.equal(codeOf(await running), Code.Unavailable);
  assert.equal(codeOf(await f.pool.call("ping").catch((e) => e)), Code.Unavailable);
});

test("the worker script never turns data into code: no Invoke-Expression, script-block creation, WQL text or -Filter", () => {
  for (const banned of [/Invoke-Expression/i, /\biex\b/i, /ScriptBlock\]::Create/i, /\$ExecutionContext\.(?!SessionState\.LanguageMode\b)/i, /-Filter\b/i, /-Query\b/i, /\bAdd-Type\b/i, /\bStart-Process\b/i, /\bcmd(\.exe)?\b/i, /"[^"]*\$a\./]) {
    assert.doesNotMatch(WORKER_SCRIPT, banned);
  }
  // request data is only read as $a.<field> / $req.<field> and cast or compared
  const uses = WORKER_SCRIPT.match(/\$a\.\w+/g) ?? [];
  // ($a.expect: the facts a write was decided on, only read field by field as strings and compared: Unchanged)
  assert.deepEqual([...new Set(uses)].sort(), ["$a.diskNumber", "$a.echo", "$a.expect", "$a.gptType", "$a.online", "$a.partitionNumber", "$a.partitionStyle", "$a.size", "$a.volumeId"]);
  // brackets balance outside string literals and comments (a cheap well-formedness check; the
  // script runs for real on pwsh in test/windows-engine/)
  let depth = { "(": 0, "{": 0, "[": 0 } as Record<string, number>;
  const close: Record<string, string> = { ")": "(", "}": "{", "]": "[" };
  for (let i = 0; i < WORKER_SCRIPT.length; i++) {
    const c = WORKER_SCRIPT[i];
    if (c === "'") {
      i = WORKER_SCRIPT.indexOf("'", i + 1);
      assert.ok(i > 0, "unterminated single-quoted string");
    } else if (c === '"') {
      i = WORKER_SCRIPT.indexOf('"', i + 1);
      assert.ok(i > 0, "unterminated double-quoted string");
    } else if (c === "#") {
      i = WORKER_SCRIPT.indexOf("\n", i);
    } else if (c in depth) depth[c]++;
    else if (c in close) {
      depth[close[c]]--;
      assert.ok(depth[close[c]] >= 0, `unbalanced ${c} at ${i}: ${WORKER_SCRIPT.slice(Math.max(0, i - 60), i + 1)}`);
    }
  }
  assert.deepEqual(depth, { "(": 0, "{": 0, "[": 0 });
});

const alive = processAlive;

test("a cancelled running call ends its worker process before it answers (signal's code); a fresh worker serves the next call", async () => {
  const f = createFakePool({ "volume.format": { hang: true } }, { size: 1 });
  try {
    const ac = new AbortController();
    const t0 = Date.now();
    const pending = f.pool.call("volume.format", { volumeId: "v" }, { signal: ac.signal }).catch((e) => e);
    while ((() => {
      try {
        return f.recorded().requests.length;
      } catch {
        return 0; // a record line still being written
      }
    })() === 0) await new Promise((r) => setTimeout(r, 10));
    const pid = f.recorded().starts[0].pid;
    ac.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded"));
    const err = await pending;
    assert.equal(codeOf(err), Code.DeadlineExceeded, String(err));
    assert.match(err.message, new RegExp(`volume.format: deadline exceeded: stopped; its PowerShell worker \\(pid ${pid}\\) was ended`));
    assert.equal(alive(pid), false, "the worker process had exited when the call answered");
    assert.ok(Date.now() - t0 < 10_000);
    assert.deepEqual(await f.pool.call("ping", { echo: 3 }), { pong: true, echo: 3 });
    assert.equal(f.recorded().starts.length, 2, "a fresh worker replaced the killed one");
  } finally {
    await f.close();
  }
});

test("a cancelled queued call is never sent to a worker", async () => {
  const f = createFakePool({ "volume.format": { result: null, delayMs: 400 } }, { size: 1 });
  try {
    const first = f.pool.call("volume.format", { volumeId: "first" });
    const ac = new AbortController();
    const queued = f.pool.call("volume.resize", { volumeId: "queued", size: "1" }, { signal: ac.signal }).catch((e) => e);
    ac.abort();
    const err = await queued;
    assert.equal(codeOf(err), Code.Canceled, String(err));
    assert.match(err.message, /not started/);
    await first;
    await f.pool.call("ping", {});
    assert.deepEqual(f.recorded().requests.map((r) => r.op), ["volume.format", "ping"]);
  } finally {
    await f.close();
  }
});
