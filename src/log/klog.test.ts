import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { NewSmbGlobalMappingRequestSchema } from "../gen/smb/v1/api_pb.ts";
import { createLogger, formatHeader, formatRequest, MAX_REQUEST_LOG_LENGTH, REDACTED, redactSecrets } from "./klog.ts";
import type { LoggerOptions, LogSink, Severity } from "./klog.ts";

/** A stderr replacement that records chunks and completes writes asynchronously. */
function memorySink(): LogSink & { chunks: string[]; lines(): string[] } {
  const chunks: string[] = [];
  return {
    chunks,
    write(chunk, callback) {
      chunks.push(chunk);
      setImmediate(callback);
    },
    lines: () => chunks.join("").split("\n").filter((l) => l !== ""),
  };
}

/** Line number of the caller of here(). */
function here(): number {
  const frame = new Error().stack!.split("\n")[2];
  return Number(/:(\d+):\d+\)?$/.exec(frame)![1]);
}

const pid = String(process.pid).padStart(7, " ");
/** klog header: severity, mmdd, hh:mm:ss.uuuuuu (ms precision), pid width 7, file:line. */
function headerRegex(severity: Severity, line: number, msg: string): RegExp {
  const escaped = msg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^${severity}(0[1-9]|1[0-2])(0[1-9]|[12]\\d|3[01]) ([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d\\.\\d{3}000 ${pid} klog\\.test\\.ts:${line}\\] ${escaped}$`);
}

function stderrLogger(options: Partial<LoggerOptions> = {}) {
  const stderr = memorySink();
  const logger = createLogger({ verbosity: 0, logToStderr: true, stderr, ...options });
  return { logger, stderr };
}

describe("formatHeader", () => {
  const cases: Array<{ name: string; severity: Severity; time: Date; pid: number; location: string; want: string }> = [
    { name: "brief example", severity: "I", time: new Date(2023, 10, 22, 4, 23, 37, 447), pid: 23767, location: "server.ts:42", want: "I1122 04:23:37.447000   23767 server.ts:42] " },
    { name: "zero padding", severity: "W", time: new Date(2024, 0, 5, 0, 0, 9, 7), pid: 1, location: "a.ts:1", want: "W0105 00:00:09.007000       1 a.ts:1] " },
    { name: "seven digit pid", severity: "E", time: new Date(2024, 11, 31, 23, 59, 59, 999), pid: 4194304, location: "b.ts:10", want: "E1231 23:59:59.999000 4194304 b.ts:10] " },
    { name: "fatal", severity: "F", time: new Date(2024, 5, 15, 12, 30, 0, 0), pid: 42, location: "???:1", want: "F0615 12:30:00.000000      42 ???:1] " },
  ];
  for (const tc of cases) {
    it(tc.name, () => assert.equal(formatHeader(tc.severity, tc.time, tc.pid, tc.location), tc.want));
  }
});

describe("createLogger to stderr", () => {
  it("writes klog lines with the caller's file:line", async () => {
    const { logger, stderr } = stderrLogger();
    const line = here(); logger.info("Starting CSI-Proxy Server ...");
    await logger.flush();
    assert.equal(stderr.chunks.length, 1);
    assert.match(stderr.chunks[0], /\n$/);
    assert.match(stderr.lines()[0], headerRegex("I", line, "Starting CSI-Proxy Server ..."));
  });

  // `line` is where the logging call is written (the lambda), which klog must report.
  const severities: Array<{ name: string; log: (l: ReturnType<typeof stderrLogger>["logger"], m: string) => void; severity: Severity; line: number }> = [
    { name: "info", log: (l, m) => l.info(m), severity: "I", line: here() },
    { name: "warning", log: (l, m) => l.warning(m), severity: "W", line: here() },
    { name: "error", log: (l, m) => l.error(m), severity: "E", line: here() },
    { name: "v(0).info", log: (l, m) => l.v(0).info(m), severity: "I", line: here() },
  ];
  for (const tc of severities) {
    it(`${tc.name} uses severity ${tc.severity} and its own call site`, async () => {
      const { logger, stderr } = stderrLogger();
      tc.log(logger, "msg");
      await logger.flush();
      assert.match(stderr.lines()[0], headerRegex(tc.severity, tc.line, "msg"));
    });
  }

  const gating: Array<{ name: string; verbosity: number; level: number; enabled: boolean }> = [
    { name: "level below verbosity", verbosity: 2, level: 1, enabled: true },
    { name: "level equal to verbosity", verbosity: 2, level: 2, enabled: true },
    { name: "level above verbosity", verbosity: 2, level: 3, enabled: false },
    { name: "level 0 at verbosity 0", verbosity: 0, level: 0, enabled: true },
    { name: "level 1 at verbosity 0", verbosity: 0, level: 1, enabled: false },
    { name: "level 5 at verbosity 10", verbosity: 10, level: 5, enabled: true },
  ];
  for (const tc of gating) {
    it(`V-gating: ${tc.name}`, async () => {
      const { logger, stderr } = stderrLogger({ verbosity: tc.verbosity });
      const v = logger.v(tc.level);
      assert.equal(v.enabled, tc.enabled);
      v.info("verbose");
      await logger.flush();
      assert.equal(stderr.chunks.length, tc.enabled ? 1 : 0);
    });
  }

  it("does not double a trailing newline and keeps multi-line messages", async () => {
    const { logger, stderr } = stderrLogger();
    logger.info("one\n");
    logger.info("two\nthree");
    await logger.flush();
    assert.match(stderr.chunks[0], /\] one\n$/);
    assert.match(stderr.chunks[1], /\] two\nthree\n$/);
  });

  it("writes to stderr when logToStderr is false and there is no file", async () => {
    const { logger, stderr } = stderrLogger({ logToStderr: false });
    logger.info("hello");
    await logger.close();
    assert.equal(stderr.lines().length, 1);
  });

  it("close is idempotent and later lines still go to stderr", async () => {
    const { logger, stderr } = stderrLogger();
    await Promise.all([logger.close(), logger.close()]);
    logger.info("after close");
    await logger.flush();
    assert.equal(stderr.lines().length, 1);
  });
});

describe("createLogger to a file", () => {
  let dir = "";
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "klog-test-"));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("appends klog lines after the klog file header; errors also reach stderr", async () => {
    const path = join(dir, "csi-proxy.log");
    const stderr = memorySink();
    const logger = createLogger({ verbosity: 1, logToStderr: false, logFile: path, stderr });
    const line = here(); logger.info("info line"); logger.v(1).info("v1 line"); logger.v(2).info("v2 line"); logger.warning("warn line"); logger.error("error line");
    await logger.close();
    const lines = (await readFile(path, "utf8")).split("\n");
    assert.match(lines[0], /^Log file created at: \d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d$/);
    assert.match(lines[1], /^Running on machine: /);
    assert.match(lines[2], /^Binary: Built with node v\d+/);
    assert.equal(lines[3], "Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg");
    assert.match(lines[4], headerRegex("I", line, "info line"));
    assert.match(lines[5], headerRegex("I", line, "v1 line"));
    assert.match(lines[6], headerRegex("W", line, "warn line"));
    assert.match(lines[7], headerRegex("E", line, "error line"));
    assert.deepEqual(lines.slice(8), [""]);
    assert.equal(stderr.lines().length, 1, "only ERROR reaches stderr by default (stderrthreshold)");
    assert.match(stderr.lines()[0], headerRegex("E", line, "error line"));
    if (process.platform !== "win32") assert.equal((await stat(path)).mode & 0o777, 0o600);
  });

  it("appends to an existing file; skipHeaders omits the preamble", async () => {
    const path = join(dir, "append.log");
    await writeFile(path, "existing\n");
    const logger = createLogger({ verbosity: 0, logToStderr: false, logFile: path, skipHeaders: true, stderr: memorySink() });
    logger.info("new");
    await logger.close();
    const lines = (await readFile(path, "utf8")).split("\n");
    assert.equal(lines[0], "existing");
    assert.match(lines[1], /^I\d{4} .*\] new$/);
    assert.equal(lines.length, 3);
  });

  const copies: Array<{ name: string; options: Partial<LoggerOptions>; stderrLines: number }> = [
    { name: "alsoToStderr copies every line", options: { alsoToStderr: true }, stderrLines: 3 },
    { name: "stderrThreshold W copies warnings and errors", options: { stderrThreshold: "W" }, stderrLines: 2 },
    { name: "stderrThreshold F copies nothing", options: { stderrThreshold: "F" }, stderrLines: 0 },
    { name: "logToStderr ignores the file", options: { logToStderr: true }, stderrLines: 3 },
  ];
  for (const tc of copies) {
    it(tc.name, async () => {
      const path = join(dir, `copies-${tc.stderrLines}-${Math.random()}.log`);
      const stderr = memorySink();
      const logger = createLogger({ verbosity: 0, logToStderr: false, logFile: path, skipHeaders: true, stderr, ...tc.options });
      logger.info("i");
      logger.warning("w");
      logger.error("e");
      await logger.close();
      assert.equal(stderr.lines().length, tc.stderrLines);
      const fileLines = await readFile(path, "utf8").then((s) => s.split("\n").length - 1, () => 0);
      assert.equal(fileLines, tc.options.logToStderr ? 0 : 3);
    });
  }

  it("flush waits until lines are in the file", async () => {
    const path = join(dir, "flush.log");
    const logger = createLogger({ verbosity: 0, logToStderr: false, logFile: path, skipHeaders: true });
    logger.info("flushed");
    await logger.flush();
    assert.match(await readFile(path, "utf8"), /\] flushed\n$/);
    await logger.close();
  });

  it("loses no lines at close under load", async () => {
    const path = join(dir, "load.log");
    const logger = createLogger({ verbosity: 0, logToStderr: false, logFile: path, skipHeaders: true });
    const n = 20000;
    for (let i = 0; i < n; i++) logger.info(`line ${i}`);
    await logger.close();
    const lines = (await readFile(path, "utf8")).split("\n").slice(0, -1);
    assert.equal(lines.length, n);
    assert.match(lines[n - 1], /\] line 19999$/);
  });

  it("throws when the file cannot be opened (klog exits on it): nothing is logged elsewhere", () => {
    const stderr = memorySink();
    assert.throws(() => createLogger({ verbosity: 0, logToStderr: false, logFile: join(dir, "missing", "x.log"), stderr }), { code: "ENOENT" });
    assert.equal(stderr.chunks.join(""), "");
  });

  it("reopen: lines go to a new file at the path (after a rotation), the old file keeps what came before", async () => {
    const path = join(dir, "rotated.log");
    const logger = createLogger({ verbosity: 0, logToStderr: false, logFile: path, skipHeaders: true, stderr: memorySink() });
    logger.info("before");
    await logger.flush();
    await rename(path, `${path}.1`);
    assert.equal(await logger.reopen(), null);
    logger.info("after");
    await logger.close();
    assert.match(await readFile(`${path}.1`, "utf8"), /\] before\n$/);
    assert.match(await readFile(path, "utf8"), /^I.*\] after\n$/);
  });

  it("reopen: a path that cannot be opened any more keeps the old file and says why", async () => {
    const sub = join(dir, "gone");
    await mkdir(sub);
    const path = join(sub, "x.log");
    const logger = createLogger({ verbosity: 0, logToStderr: false, logFile: path, skipHeaders: true, stderr: memorySink() });
    await rename(sub, `${sub}.old`);
    assert.match((await logger.reopen()) ?? "", /cannot reopen log file .*x\.log: ENOENT/);
    logger.info("still in the old file");
    await logger.close();
    assert.match(await readFile(join(`${sub}.old`, "x.log"), "utf8"), /still in the old file/);
  });
});

describe("redactSecrets", () => {
  const cases: Array<{ name: string; input: unknown; want: unknown }> = [
    { name: "primitives pass through", input: 5, want: 5 },
    { name: "null", input: null, want: null },
    { name: "bigint becomes string", input: { size: 10n }, want: { size: "10" } },
    {
      name: "secret-like fields",
      input: { username: "u", password: "p", pass: "p", chapSecret: "s", MutualChapSecret: "m", token: "t", Credentials: "c", remotePath: "\\\\srv\\share" },
      want: { username: "u", password: REDACTED, pass: REDACTED, chapSecret: REDACTED, MutualChapSecret: REDACTED, token: REDACTED, Credentials: REDACTED, remotePath: "\\\\srv\\share" },
    },
    { name: "empty secret kept", input: { password: "" }, want: { password: "" } },
    { name: "non-string secret kept", input: { tokenCount: 3, passwordSet: true }, want: { tokenCount: 3, passwordSet: true } },
    { name: "nested objects and arrays", input: { a: [{ secret: "x", b: "y" }], c: { d: { apiToken: "z" } } }, want: { a: [{ secret: REDACTED, b: "y" }], c: { d: { apiToken: REDACTED } } } },
    { name: "everything under a secret field", input: { secrets: { user: "x", list: ["a", ""] } }, want: { secrets: { user: REDACTED, list: [REDACTED, ""] } } },
    { name: "Map becomes object, keys checked", input: new Map<unknown, unknown>([["password", "p"], [1, "one"]]), want: { password: REDACTED, 1: "one" } },
    { name: "Set becomes array", input: new Set(["a"]), want: ["a"] },
    { name: "protobuf oneof with secret case", input: { auth: { case: "password", value: "p" } }, want: { auth: { case: "password", value: REDACTED } } },
    { name: "protobuf oneof with plain case", input: { auth: { case: "user", value: "u" } }, want: { auth: { case: "user", value: "u" } } },
    { name: "bytes become base64", input: { data: new Uint8Array([1, 2, 255]) }, want: { data: "AQL/" } },
    { name: "functions dropped", input: { f() {}, a: 1 }, want: { f: undefined, a: 1 } },
  ];
  for (const tc of cases) {
    it(tc.name, () => assert.deepEqual(redactSecrets(tc.input), tc.want));
  }

  it("handles cycles and shared subtrees", () => {
    const shared = { x: 1 };
    const obj: Record<string, unknown> = { a: shared, b: shared };
    obj.self = obj;
    assert.deepEqual(redactSecrets(obj), { a: { x: 1 }, b: { x: 1 }, self: "[Circular]" });
  });

  it("does not modify its input", () => {
    const input = { password: "p", nested: { token: "t" } };
    redactSecrets(input);
    assert.deepEqual(input, { password: "p", nested: { token: "t" } });
  });

  it("redacts protobuf-es messages", () => {
    const req = create(NewSmbGlobalMappingRequestSchema, { remotePath: "\\\\srv\\s", localPath: "C:\\m", username: "admin", password: "hunter2" });
    assert.deepEqual(redactSecrets(req), { $typeName: "v1.NewSmbGlobalMappingRequest", remotePath: "\\\\srv\\s", localPath: "C:\\m", username: "admin", password: REDACTED });
  });
});

describe("formatRequest", () => {
  const cases: Array<{ name: string; input: unknown; want: string }> = [
    { name: "plain object", input: { a: 1, b: "x" }, want: '{"a":1,"b":"x"}' },
    { name: "bigint", input: { totalBytes: 12345678901234567890n }, want: '{"totalBytes":"12345678901234567890"}' },
    { name: "redaction", input: { user: "u", password: "p" }, want: `{"user":"u","password":"${REDACTED}"}` },
    { name: "protobuf bookkeeping omitted", input: create(NewSmbGlobalMappingRequestSchema, { password: "p" }), want: `{"remotePath":"","localPath":"","username":"","password":"${REDACTED}"}` },
    { name: "undefined", input: undefined, want: "undefined" },
    { name: "exactly the limit is kept", input: "x".repeat(MAX_REQUEST_LOG_LENGTH - 2), want: `"${"x".repeat(MAX_REQUEST_LOG_LENGTH - 2)}"` },
  ];
  for (const tc of cases) {
    it(tc.name, () => assert.equal(formatRequest(tc.input), tc.want));
  }

  it("truncates to 1024 characters", () => {
    const s = formatRequest({ paths: Array.from({ length: 500 }, (_, i) => `path-${i}`) });
    assert.equal(s.length, 1024);
    assert.equal(MAX_REQUEST_LOG_LENGTH, 1024);
    assert.match(s, /^\{"paths":\["path-0",.*\.\.\.$/);
  });

  it("does not split a surrogate pair when truncating", () => {
    const s = formatRequest("😀".repeat(1000));
    assert.ok(s.length <= 1024);
    assert.doesNotMatch(s.slice(0, -3), /[\uD800-\uDBFF]$/);
  });
});
