import { spawn } from "node:child_process";
import { CsiProxyError, Code } from "../../errors.ts";
import { redactWhole } from "../../log/redact.ts";

/** How to run one command. Arguments are an argv array: no shell is ever involved. */
export interface RunOptions {
  /** Extra environment variables (merged over a minimal PATH/LANG environment, not the daemon's). */
  env?: Record<string, string>;
  /** Written to the child's stdin, then stdin is closed. The only way secrets may reach a child. */
  stdin?: string | Buffer;
  /** Kills the child (SIGKILL) after this many milliseconds. Default 60 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Output beyond this many bytes per stream is dropped. Default 4 MiB. */
  maxOutputBytes?: number;
  /** Strings masked as *** in error messages, as whole values (secrets that might echo back). */
  redact?: string[];
  /** Exit codes that count as success. Default [0]. */
  okExitCodes?: number[];
}

export interface RunResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/**
 * A child process that failed: non-zero exit, signal, timeout or spawn error. Carries the command
 * (argv shown with JSON quoting, secrets masked), exit code and stderr tail. A host tool failing is
 * not a bug of csi-proxy, so its gRPC code is never Internal; callers re-throw with a better one
 * where they recognise the failure. By default: timed out → DeadlineExceeded (the step may have
 * been partly done; a retry converges), the call's own cancellation → Canceled, anything else
 * (non-zero exit, killed by a signal csi-proxy did not send, program missing or not executable) →
 * FailedPrecondition: a final failure of this call.
 */
export class HostCommandError extends CsiProxyError {
  override name = "HostCommandError";
  readonly command: string;
  readonly exitCode: number | null;
  readonly stderr: string;
  readonly timedOut: boolean;
  constructor(message: string, command: string, exitCode: number | null, stderr: string, timedOut: boolean, cause?: unknown, code?: Code) {
    super(code ?? (timedOut ? Code.DeadlineExceeded : Code.FailedPrecondition), message, { cause });
    this.command = command;
    this.exitCode = exitCode;
    this.stderr = stderr;
    this.timedOut = timedOut;
  }
}

/** Process-wide upper bound for every command's timeout (flag -host-command-timeout); Infinity = none. */
let timeoutCapMs = Infinity;

/** Caps every later command's timeout at `ms` (0 or less: no cap beyond each step's own bound). */
export function setHostCommandTimeoutCap(ms: number): void {
  timeoutCapMs = ms > 0 ? ms : Infinity;
}

/** A host step's bound under that cap: `stepTimeoutMs`, or the cap when it is lower (for host calls made in process, such as libblkid's). */
export function cappedTimeoutMs(stepTimeoutMs: number): number {
  return Math.min(stepTimeoutMs, timeoutCapMs);
}

/** The environment children get: enough to find tools and print untranslated messages. */
const baseEnv: Record<string, string> = {
  PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  LANG: "C",
  LC_ALL: "C",
};

/**
 * The only place the daemon spawns processes. `file` is a program name or absolute path, `args` an
 * argv array passed verbatim (`shell: false`), so request data can never become shell syntax.
 * Resolves with the output on an accepted exit code; otherwise rejects with HostCommandError.
 */
export function runCommand(file: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const { timeoutMs: stepTimeoutMs = 60_000, maxOutputBytes = 4 * 1024 * 1024, okExitCodes = [0], redact = [] } = options;
  const timeoutMs = Math.min(stepTimeoutMs, timeoutCapMs);
  const mask = (s: string) => redactWhole(s, redact);
  const command = mask([file, ...args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(" "));
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      shell: false,
      windowsHide: true,
      env: process.platform === "win32" ? { ...process.env, ...options.env } : { ...baseEnv, ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
      signal: options.signal,
    });
    const out: Buffer[] = [], err: Buffer[] = [];
    let outBytes = 0, errBytes = 0, timedOut = false;
    child.stdout.on("data", (b: Buffer) => {
      if (outBytes < maxOutputBytes) out.push(b);
      outBytes += b.length;
    });
    child.stderr.on("data", (b: Buffer) => {
      if (errBytes < maxOutputBytes) err.push(b);
      errBytes += b.length;
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.stdin.on("error", () => {}); // a child that exits without reading stdin must not crash us
    child.stdin.end(options.stdin ?? "");
    child.once("error", (cause) => {
      clearTimeout(timer);
      const code = (cause as NodeJS.ErrnoException).code;
      const reason = code === "ENOENT" ? `${file} is not installed` : code === "ABORT_ERR" ? "aborted" : cause.message;
      reject(new HostCommandError(`${command}: ${reason}`, command, null, "", false, cause, code === "ABORT_ERR" ? Code.Canceled : undefined));
    });
    child.once("close", (exitCode, signal) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString("utf8");
      const stderr = mask(Buffer.concat(err).toString("utf8"));
      if (exitCode !== null && okExitCodes.includes(exitCode)) return resolve({ stdout, stderr, exitCode });
      const why = timedOut ? `timed out after ${timeoutMs} ms` : signal ? `killed by ${signal}` : `exit status ${exitCode}`;
      const tail = (stderr.trim() || mask(stdout.trim())).slice(-2000);
      // Killed by a signal csi-proxy did not send (the OOM killer, an operator): a final failure of this call.
      const code = !timedOut && signal ? Code.FailedPrecondition : undefined;
      reject(new HostCommandError(`${command}: ${why}${tail ? `: ${tail}` : ""}`, command, exitCode, stderr, timedOut, undefined, code));
    });
  });
}
