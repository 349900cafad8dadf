// The one process spawner: argv reaches the child byte for byte (no shell), stdin carries data,
// failures, timeouts (SIGTERM, then SIGKILL after the grace), cancellation, output past the bound and
// the daemon's stop are coded HostCommandErrors with the signal and secrets masked.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { runCommand, HostCommandError, setHostCommandTimeoutCap, KILL_GRACE_MS, CANCEL_GRACE_MS, CANCEL_EXIT_WAIT_MS } from "./run-command.ts";
import { Code, CsiProxyError } from "../../errors.ts";
import { runInCall } from "../../util/call-scope.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import { hostileStrings } from "../../../test/helpers/hostile-strings.ts";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

const echo = `process.stdout.write(JSON.stringify({ argv: process.argv.slice(1), stdin: require("fs").readFileSync(0, "utf8"), env: process.env.CSI_PROXY_ARG_X ?? null }))`;
const node = process.execPath;

describe("runCommand()", () => {
  it("passes hostile arguments verbatim, never through a shell", async () => {
    const args = hostileStrings.filter((s) => !s.includes("\0"));
    const { stdout } = await runCommand(node, ["-e", echo, "--", ...args]);
    assert.deepEqual(JSON.parse(stdout).argv, args);
  });

  it("delivers stdin and extra env exactly, with a minimal base environment", async () => {
    const data = hostileStrings.join("\n");
    const { stdout } = await runCommand(node, ["-e", `${echo};process.stderr.write(String(process.env.HOME))`], { stdin: data, env: { CSI_PROXY_ARG_X: "$(id)" } });
    const out = JSON.parse(stdout);
    assert.equal(out.stdin, data);
    assert.equal(out.env, "$(id)");
  });

  it("rejects a NUL byte in an argument instead of truncating it", async () => {
    await assert.rejects(runCommand(node, ["-e", "1", "a\0b"]));
  });

  it("turns a non-zero exit into a FailedPrecondition HostCommandError (a tool failing is not our bug) with the stderr tail, secrets masked", async () => {
    const secret = "s3cr3t-Pa55";
    await assert.rejects(
      runCommand(node, ["-e", `process.stderr.write("bad password ${secret}"); process.exit(3)`], { redact: [secret] }),
      (err: unknown) => {
        assert.ok(err instanceof HostCommandError);
        assert.equal(err.code, Code.FailedPrecondition);
        assert.equal(err.exitCode, 3);
        assert.match(err.message, /exit status 3: bad password \*\*\*/);
        assert.ok(!err.message.includes(secret) && !err.stderr.includes(secret) && !err.command.includes(secret));
        return true;
      },
    );
  });

  it("accepts listed exit codes", async () => {
    assert.equal((await runCommand(node, ["-e", "process.exit(2)"], { okExitCodes: [0, 2] })).exitCode, 2);
  });

  it("kills a child that runs past its timeout", async () => {
    const t0 = Date.now();
    await assert.rejects(
      runCommand(node, ["-e", "setTimeout(() => {}, 60000)"], { timeoutMs: 300 }),
      (err: HostCommandError) => err.timedOut && err.code === Code.DeadlineExceeded && /timed out after 300 ms/.test(err.message),
    );
    assert.ok(Date.now() - t0 < 10_000);
  });

  it("caps every timeout at the process-wide bound (-host-command-timeout)", async () => {
    setHostCommandTimeoutCap(300);
    try {
      await assert.rejects(runCommand(node, ["-e", "setTimeout(() => {}, 60000)"], { timeoutMs: 60_000 }), (err: HostCommandError) => err.code === Code.DeadlineExceeded && /timed out after 300 ms/.test(err.message));
    } finally {
      setHostCommandTimeoutCap(0);
    }
  });

  it("a child killed by a signal csi-proxy did not send is FailedPrecondition (final; never an in-progress code); the call's own cancellation is Canceled", async () => {
    await assert.rejects(runCommand(node, ["-e", "process.kill(process.pid, 'SIGKILL')"]), (err: HostCommandError) => err.code === Code.FailedPrecondition && /killed by SIGKILL/.test(err.message));
    const controller = new AbortController();
    const run = runCommand(node, ["-e", "setTimeout(() => {}, 60000)"], { signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    await assert.rejects(run, (err: HostCommandError) => err.code === Code.Canceled);
  });

  it("says which program is missing (FailedPrecondition: install it)", async () => {
    await assert.rejects(runCommand("/nonexistent/tool", []), (err: HostCommandError) => err.code === Code.FailedPrecondition && /\/nonexistent\/tool is not installed/.test(err.message));
  });

  it("output past the bound is an error naming the command and the stream, never a truncated result", async () => {
    const print = (n: number, stream: string) => [node, ["-e", `process.${stream}.write('x'.repeat(${n}))`]] as const;
    assert.equal((await runCommand(...print(1000, "stdout"), { maxOutputBytes: 1000 })).stdout.length, 1000);
    for (const stream of ["stdout", "stderr"]) {
      await assert.rejects(runCommand(...print(1 << 20, stream), { maxOutputBytes: 1000 }), (err: HostCommandError) => {
        assert.equal(err.code, Code.FailedPrecondition);
        assert.equal(err.exitCode, 0);
        assert.match(err.message, new RegExp(`^${node.replace(/[/.]/g, "\\$&")} -e .*: ${stream} exceeded 1000 bytes \\(exit status 0\\)`));
        return true;
      });
    }
  });

  it("a timeout sends SIGTERM first: a child that handles it ends on its own terms, and the call is still DeadlineExceeded", async () => {
    const script = `trap 'echo got-TERM >&2; kill $!; exit 0' TERM; sleep 60 >/dev/null 2>&1 & wait`;
    await assert.rejects(runCommand("/bin/sh", ["-c", script], { timeoutMs: 300 }), (err: HostCommandError) => {
      assert.equal(err.code, Code.DeadlineExceeded);
      assert.ok(err.timedOut);
      assert.equal(err.signal, null);
      assert.match(err.message, /timed out after 300 ms: got-TERM$/);
      return true;
    });
  });

  it(`a timeout sends SIGKILL ${KILL_GRACE_MS} ms after SIGTERM to a child that ignores SIGTERM; the error carries the signal`, async () => {
    const t0 = Date.now();
    await assert.rejects(runCommand("/bin/sh", ["-c", "trap '' TERM; exec sleep 60"], { timeoutMs: 300 }), (err: HostCommandError) => {
      assert.equal(err.code, Code.DeadlineExceeded);
      assert.equal(err.signal, "SIGKILL");
      assert.match(err.message, /timed out after 300 ms \(SIGKILL\)/);
      return true;
    });
    const ms = Date.now() - t0;
    assert.ok(ms >= 300 + KILL_GRACE_MS - 50 && ms < 300 + KILL_GRACE_MS + 10_000, `${ms} ms`);
  });

  it(`cancelling the call ends a child that ignores SIGTERM within ${CANCEL_GRACE_MS} ms (SIGKILL) and answers only after it has exited`, async () => {
    const controller = new AbortController();
    const run = runCommand("/bin/sh", ["-c", "trap '' TERM; echo $$ >&2; exec sleep 60"], { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    const t0 = Date.now() + 200;
    await assert.rejects(run, (err: HostCommandError) => {
      const ms = Date.now() - t0;
      assert.equal(err.code, Code.Canceled);
      assert.equal(err.signal, "SIGKILL");
      assert.ok(ms >= CANCEL_GRACE_MS - 50 && ms < 1000 + 5000, `${ms} ms`);
      const pid = Number(err.stderr.trim());
      assert.throws(() => process.kill(pid, 0), { code: "ESRCH" }, "the child has exited when the call answers");
      return true;
    });
  });

  it("without a signal in its options it takes the call's (call scope): aborted, it stops the child and answers with the signal's code", async () => {
    const controller = new AbortController();
    const run = runInCall({ signal: controller.signal }, () => runCommand("/bin/sh", ["-c", "exec sleep 60"]));
    setTimeout(() => controller.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded")), 100);
    await assert.rejects(run, (err: HostCommandError) => {
      assert.equal(err.code, Code.DeadlineExceeded);
      assert.match(err.message, /^\/bin\/sh -c "exec sleep 60": deadline exceeded: stopped \(SIGTERM\) after \d+ ms$/);
      return true;
    });
    const err = await runInCall({ signal: controller.signal }, () => runCommand("/bin/true", [])).catch((e) => e);
    assert.equal(err.code, Code.DeadlineExceeded, "an aborted call starts no new command");
    assert.match(err.message, /not started/);
  });

  it(`a cancelled child whose work goes on after SIGKILL: answered ${CANCEL_GRACE_MS + CANCEL_EXIT_WAIT_MS} ms after the abort naming its pid, still running; its lock stays held until it ended`, async () => {
    // The child execs into sleep (killed at once); a process it started keeps its output open for 4 s
    // more, as an uninterruptible child would keep running: the call cannot wait for it. The abort comes
    // once that process exists (the shell marks it in a file), however slow the machine is to start it.
    const mutex = createKeyedMutex();
    const controller = new AbortController();
    const dir = mkdtempSync(path.join(tmpdir(), "run-command-"));
    const ready = path.join(dir, "ready");
    const run = runInCall({ signal: controller.signal }, () =>
      mutex.run("disk:9", () => runCommand("/bin/sh", ["-c", 'sleep 4 & : > "$0"; exec sleep 60', ready]), { what: "FormatVolume of volume V" }),
    );
    for (const until = Date.now() + 20_000; !existsSync(ready) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
    rmSync(dir, { recursive: true, force: true });
    const t0 = Date.now();
    controller.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded"));
    const err = await run.catch((e) => e);
    const answeredAfter = Date.now() - t0;
    assert.equal(err.code, Code.DeadlineExceeded, String(err));
    assert.match(err.message, /^\/bin\/sh -c .*: deadline exceeded: SIGTERM and SIGKILL sent, but pid \d+ exited but a process it started still holds its output \d+ ms later; the operation is still running and its device stays locked until it exits$/);
    assert.ok(answeredAfter >= CANCEL_GRACE_MS + CANCEL_EXIT_WAIT_MS - 50 && answeredAfter < 1900, `answered ${answeredAfter} ms after the abort (within the transport's 2 s grace)`);
    const retry = await mutex.run("disk:9", async () => "second tool").catch((e) => e);
    assert.equal(retry.code, Code.Aborted, "a retry during it is refused, never run");
    assert.match(retry.message, /FormatVolume of volume V .* is still running/);
    assert.match(retry.message, /\(pid \d+\)/);
    while (mutex.size > 0) await new Promise((r) => setTimeout(r, 50));
    const freedAfter = Date.now() - t0;
    assert.ok(freedAfter >= 2000 && freedAfter > answeredAfter + 300, `the lock was held past the answer until the work ended (${freedAfter} ms after the abort; the work ends 4 s after it started)`);
    assert.equal(await mutex.run("disk:9", async () => "later"), "later");
  });

  it("a child killed by someone else carries that signal", async () => {
    await assert.rejects(runCommand("/bin/sh", ["-c", "kill -TERM $$"]), (err: HostCommandError) => err.signal === "SIGTERM" && err.exitCode === null && err.code === Code.FailedPrecondition && /killed by SIGTERM/.test(err.message));
  });

  it(`stopHostCommands (a graceful daemon stop) ends every running child — SIGTERM, SIGKILL after ${KILL_GRACE_MS} ms — and refuses new ones`, async () => {
    // In its own process: the stop is process-wide and final.
    const script = `
      import { runCommand, stopHostCommands } from ${JSON.stringify(new URL("./run-command.ts", import.meta.url).href)};
      const outcome = (p) => p.then(() => "resolved", (e) => [e.code, e.signal, e.message.replace(/^.*: /, "")]);
      const polite = outcome(runCommand("/bin/sh", ["-c", "exec sleep 60"]));
      const stubborn = outcome(runCommand("/bin/sh", ["-c", "trap '' TERM; exec sleep 60"]));
      await new Promise((r) => setTimeout(r, 300));
      const t0 = Date.now();
      await stopHostCommands();
      const ms = Date.now() - t0;
      const late = await outcome(runCommand("/bin/true", []));
      console.log(JSON.stringify({ ms, polite: await polite, stubborn: await stubborn, late }));`;
    const { stdout } = await runCommand(node, ["--input-type=module", "-e", script], { timeoutMs: 30_000 });
    const result = JSON.parse(stdout);
    assert.deepEqual(result.polite, [Code.Unavailable, "SIGTERM", "ended because csi-proxy is stopping (SIGTERM)"]);
    assert.deepEqual(result.stubborn, [Code.Unavailable, "SIGKILL", "ended because csi-proxy is stopping (SIGKILL)"]);
    assert.deepEqual(result.late, [Code.Unavailable, null, "not started, csi-proxy is stopping"]);
    assert.ok(result.ms >= KILL_GRACE_MS - 50 && result.ms < KILL_GRACE_MS + 10_000, `${result.ms} ms`);
  });
});
