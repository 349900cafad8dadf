// The one process spawner: argv reaches the child byte for byte (no shell), stdin carries data,
// failures and timeouts are coded HostCommandErrors with secrets masked.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { runCommand, HostCommandError, setHostCommandTimeoutCap } from "./run-command.ts";
import { Code } from "../../errors.ts";
import { hostileStrings } from "../../../test/helpers/hostile-strings.ts";

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

  it("caps captured output", async () => {
    const { stdout } = await runCommand(node, ["-e", "process.stdout.write('x'.repeat(1 << 20))"], { maxOutputBytes: 1000 });
    assert.ok(stdout.length < 1 << 20);
  });
});
