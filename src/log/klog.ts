/**
 * A klog-compatible text logger (the format of k8s.io/klog/v2 used by csi-proxy):
 *
 *     Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg
 *     I1122 04:23:37.447000   23767 server.ts:42] Starting CSI-Proxy Server ...
 *
 * L is the severity (I, W, E, F), the time is local, threadid is the pid right-aligned
 * to width 7, and file:line is the basename and line of the logging call site.
 * Also provides request formatting with secrets redacted.
 */
import { createWriteStream, openSync } from "node:fs";
import type { WriteStream } from "node:fs";
import { hostname } from "node:os";

export type Severity = "I" | "W" | "E" | "F";
const RANK: Record<Severity, number> = { I: 0, W: 1, E: 2, F: 3 };

/** Destination for lines; `callback` runs once the chunk is written (or failed). */
export interface LogSink {
  write(chunk: string, callback: (err?: Error | null) => void): unknown;
}

export interface LoggerOptions {
  /** klog `-v`: `v(level)` lines are emitted when `level <= verbosity`. */
  verbosity: number;
  /** klog `-logtostderr`: write to stderr only (the log file is ignored). */
  logToStderr: boolean;
  /** klog `-log_file`: appended to (created with mode 0600) when `logToStderr` is false. */
  logFile?: string;
  /** klog `-alsologtostderr`: with a log file, also copy every line to stderr. */
  alsoToStderr?: boolean;
  /** klog `-stderrthreshold`: with a log file, lines at or above it also go to stderr. Default "E". */
  stderrThreshold?: Severity;
  /** klog `-skip_log_headers`: omit the "Log file created at: ..." preamble of the log file. */
  skipHeaders?: boolean;
  /** Replaces process.stderr (tests). */
  stderr?: LogSink;
}

export interface VerboseLogger {
  /** Whether lines at this level are emitted; test it before building costly messages. */
  readonly enabled: boolean;
  info(msg: string): void;
}

/**
 * Logging calls never block: lines are queued and written asynchronously, in order.
 * A line that cannot be written to the log file is written to stderr instead.
 */
export interface Logger {
  info(msg: string): void;
  warning(msg: string): void;
  error(msg: string): void;
  /** klog `V(level)`: a logger whose `info` emits only when `level <= verbosity`. */
  v(level: number): VerboseLogger;
  /** Resolves once every line logged so far has been written. */
  flush(): Promise<void>;
  /** Flushes and closes the log file; lines logged afterwards go to stderr. Idempotent. */
  close(): Promise<void>;
  /**
   * Opens the log file's path again (after logrotate moved it) and writes on there; the old file is
   * flushed and closed. When the path cannot be opened, logging stays on the old file and the reason
   * is returned (null when reopened, or when there is no log file).
   */
  reopen(): Promise<string | null>;
}

const DISABLED: VerboseLogger = Object.freeze({ enabled: false, info() {} });

export function createLogger(options: LoggerOptions): Logger {
  return new KlogLogger(options);
}

class KlogLogger implements Logger {
  readonly #verbosity: number;
  readonly #alsoToStderr: boolean;
  readonly #threshold: number;
  readonly #stderr: LogSink;
  readonly #enabled: VerboseLogger;
  #file: WriteStream | undefined;
  #closing: Promise<void> | undefined;
  #pending = 0;
  #waiters: Array<() => void> = [];

  constructor(options: LoggerOptions) {
    this.#verbosity = options.verbosity;
    this.#alsoToStderr = options.alsoToStderr ?? false;
    this.#threshold = RANK[options.stderrThreshold ?? "E"];
    this.#stderr = options.stderr ?? process.stderr;
    // Same call depth as info(), so the caller's location is found at the same frame.
    this.#enabled = Object.freeze({ enabled: true, info: (msg: string) => this.#emit("I", msg) });
    if (!options.logToStderr && options.logFile) {
      this.#path = options.logFile;
      this.#skipHeaders = options.skipHeaders ?? false;
      // Opened here, synchronously: a log file that cannot be opened throws (klog exits on it).
      this.#file = this.#open(openSync(this.#path, "a", 0o600));
    }
  }

  readonly #skipHeaders: boolean = false;
  #path: string | undefined;

  #open(fd: number): WriteStream {
    const path = this.#path!;
    const file = createWriteStream(path, { fd });
    let reported = false;
    file.on("error", (err) => {
      if (this.#file === file) this.#file = undefined;
      if (!reported) this.#write(this.#stderr, `klog: cannot write log file ${path}: ${err.message}; logging to stderr\n`);
      reported = true;
    });
    if (!this.#skipHeaders) this.#write(file, fileHeader(new Date()));
    return file;
  }

  async reopen(): Promise<string | null> {
    const old = this.#file;
    if (old === undefined || this.#path === undefined || this.#closing !== undefined) return null;
    let fd: number;
    try {
      fd = openSync(this.#path, "a", 0o600);
    } catch (err) {
      return `cannot reopen log file ${this.#path}: ${(err as Error).message}`;
    }
    this.#file = this.#open(fd);
    await new Promise<void>((resolve) => {
      old.once("close", resolve);
      old.end();
    });
    return null;
  }

  info(msg: string): void {
    this.#emit("I", msg);
  }
  warning(msg: string): void {
    this.#emit("W", msg);
  }
  error(msg: string): void {
    this.#emit("E", msg);
  }
  v(level: number): VerboseLogger {
    return level <= this.#verbosity ? this.#enabled : DISABLED;
  }

  flush(): Promise<void> {
    if (this.#pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      const file = this.#file;
      this.#file = undefined;
      await this.flush();
      if (file !== undefined && !file.closed) {
        await new Promise<void>((resolve) => {
          file.once("close", resolve);
          file.end();
        });
      }
      await this.flush();
    })();
    return this.#closing;
  }

  /** Must be called directly by the public logging method (frame depth matters). */
  #emit(severity: Severity, msg: string): void {
    const line = formatHeader(severity, new Date(), process.pid, callerLocation()) + msg + (msg.endsWith("\n") ? "" : "\n");
    const file = this.#file;
    if (file === undefined) {
      this.#write(this.#stderr, line);
      return;
    }
    if (this.#alsoToStderr || RANK[severity] >= this.#threshold) this.#write(this.#stderr, line);
    this.#write(file, line, true);
  }

  #write(sink: LogSink, chunk: string, fallbackToStderr = false): void {
    this.#pending++;
    sink.write(chunk, (err) => {
      if (err && fallbackToStderr) this.#write(this.#stderr, chunk);
      if (--this.#pending === 0) {
        const waiters = this.#waiters;
        this.#waiters = [];
        for (const resolve of waiters) resolve();
      }
    });
  }
}

const two = (n: number) => String(n).padStart(2, "0");

/** klog's line header, e.g. `I1122 04:23:37.447000   23767 server.ts:42] ` (local time). */
export function formatHeader(severity: Severity, time: Date, pid: number, location: string): string {
  return (
    `${severity}${two(time.getMonth() + 1)}${two(time.getDate())} ` +
    `${two(time.getHours())}:${two(time.getMinutes())}:${two(time.getSeconds())}.` +
    `${String(time.getMilliseconds() * 1000).padStart(6, "0")} ${String(pid).padStart(7, " ")} ${location}] `
  );
}

/** The preamble klog writes at the top of a log file it opens. */
function fileHeader(now: Date): string {
  const date = `${now.getFullYear()}/${two(now.getMonth() + 1)}/${two(now.getDate())}`;
  const time = `${two(now.getHours())}:${two(now.getMinutes())}:${two(now.getSeconds())}`;
  return (
    `Log file created at: ${date} ${time}\n` +
    `Running on machine: ${hostname()}\n` +
    `Binary: Built with node ${process.version} for ${process.platform}/${process.arch}\n` +
    `Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg\n`
  );
}

// Frames: callerLocation, #emit, public method, caller.
const CALLER_FRAME = 3;
const FRAME_LOCATION = /([^/\\\s(]+):(\d+):\d+\)?\s*$/;

/**
 * Where the bundles' logging lines came from: bundle file basename (`*`: the exe's one script,
 * whatever the exe is named) → bundle line → `source.ts:line`, written into each bundle file when it
 * is built (scripts/log-sites.ts). Absent when running the
 * TypeScript sources, whose frames already name the source file.
 */
declare global {
  var __csiProxyLogSites: Record<string, Record<number, string>> | undefined;
}

/** `basename:line` of the logging call site (its source file when a bundle says so), or `???:1` when the stack cannot be read. */
function callerLocation(): string {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = CALLER_FRAME + 1;
  const stack = new Error().stack;
  Error.stackTraceLimit = limit;
  const frame = stack?.split("\n")[CALLER_FRAME + 1];
  const m = frame === undefined ? null : FRAME_LOCATION.exec(frame);
  if (m === null) return "???:1";
  const sites = globalThis.__csiProxyLogSites;
  return sites?.[m[1]]?.[Number(m[2])] ?? sites?.["*"]?.[Number(m[2])] ?? `${m[1]}:${m[2]}`;
}

/** Field names whose non-empty string values are replaced by {@link REDACTED}. */
export const SECRET_FIELD = /pass(word)?|secret|token|credential/i;
export const REDACTED = "***REDACTED***";

/**
 * Deep copy of `obj` (plain objects, protobuf-es messages, arrays, Maps, Sets) that is safe to log:
 * - every non-empty string under a field whose name matches {@link SECRET_FIELD} (directly or
 *   nested at any depth, also a Map key, or a protobuf oneof `{case, value}` whose case matches)
 *   becomes `"***REDACTED***"`; empty strings and non-string values are kept;
 * - bigint becomes its decimal string, Uint8Array base64, Date its ISO string;
 * - Maps become plain objects keyed by `String(key)`, Sets become arrays;
 * - functions and symbols become undefined, cycles become `"[Circular]"`.
 */
export function redactSecrets(obj: unknown): unknown {
  return copy(obj, false, new WeakSet());
}

function copy(value: unknown, secret: boolean, seen: WeakSet<object>): unknown {
  switch (typeof value) {
    case "string":
      return secret && value !== "" ? REDACTED : value;
    case "bigint":
      return value.toString();
    case "function":
    case "symbol":
      return undefined;
    case "object":
      break;
    default:
      return value;
  }
  if (value === null) return null;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("base64");
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "Invalid Date" : value.toISOString();
  if (seen.has(value)) return "[Circular]";
  seen.add(value);
  try {
    if (Array.isArray(value) || value instanceof Set) return Array.from(value, (e) => copy(e, secret, seen));
    const entries = value instanceof Map ? Array.from(value, ([k, v]) => [String(k), v] as const) : Object.entries(value);
    const oneofCase = (value as { case?: unknown }).case;
    const secretOneof = typeof oneofCase === "string" && SECRET_FIELD.test(oneofCase);
    const out: Record<string, unknown> = {};
    for (const [key, field] of entries) {
      out[key] = copy(field, secret || SECRET_FIELD.test(key) || (secretOneof && key === "value"), seen);
    }
    return out;
  } finally {
    seen.delete(value); // only ancestors count as cycles; shared subtrees are copied again
  }
}

/** Longest string {@link formatRequest} returns. */
export const MAX_REQUEST_LOG_LENGTH = 1024;

/**
 * One-line JSON of `obj` for logs: secrets redacted (see {@link redactSecrets}), bigints as
 * strings, protobuf-es bookkeeping fields `$typeName`/`$unknown` omitted, and cut to at most
 * 1024 characters (ending in `...` when cut).
 */
export function formatRequest(obj: unknown): string {
  const json = JSON.stringify(redactSecrets(obj), (key, v: unknown) => (key === "$typeName" || key === "$unknown" ? undefined : v));
  const s = json ?? String(json);
  if (s.length <= MAX_REQUEST_LOG_LENGTH) return s;
  let cut = MAX_REQUEST_LOG_LENGTH - 3;
  if (/[\uD800-\uDBFF]/.test(s[cut - 1])) cut--; // do not split a surrogate pair
  return s.slice(0, cut) + "...";
}
