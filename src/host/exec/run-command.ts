import { spawn } from "node:child_process";
import { CsiProxyError, Code } from "../../errors.ts";
import { redactWhole } from "../../log/redact.ts";
import { callSignal, outlivingRecorder } from "../../util/call-scope.ts";
import { abortError } from "../../util/stop-if-aborted.ts";
import { readFileSync } from "node:fs";

/** How to run one command. Arguments are an argv array: no shell is ever involved. */
export interface RunOptions {
  /** Extra environment variables (merged over a minimal PATH/LANG environment, not the daemon's). */
  env?: Record<string, string>;
  /** Written to the child's stdin, then stdin is closed. The only way secrets may reach a child. */
  stdin?: string | Buffer;
  /** After this many milliseconds the child gets SIGTERM, and SIGKILL {@link KILL_GRACE_MS} later. Default 60 s. */
  timeoutMs?: number;
  /**
   * The call's cancellation (default: the signal of the call this runs for, util/call-scope.ts):
   * SIGTERM, then SIGKILL {@link CANCEL_GRACE_MS} later; rejects with the signal's code once the child
   * has exited — or, when it has not exited {@link CANCEL_EXIT_WAIT_MS} after SIGKILL (uninterruptible
   * sleep), naming it (pid, command) and saying it is still running; it is then recorded as outliving
   * its call, so the operation lock it runs under stays held until it exits.
   */
  signal?: AbortSignal;
  /** Bytes per stream the result may hold (default 4 MiB); more is an error, never a truncated result. */
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

/** Milliseconds between SIGTERM and SIGKILL when a command outlives its timeout or the daemon stops. */
export const KILL_GRACE_MS = 2000;

/** Milliseconds between SIGTERM and SIGKILL when the call itself is cancelled (its work must stop within 1 s). */
export const CANCEL_GRACE_MS = 500;

/** Milliseconds a cancelled command may take to exit after SIGKILL before its call is answered without it. */
export const CANCEL_EXIT_WAIT_MS = 1000;

/** ` in uninterruptible sleep (D)` when /proc says so (Linux), else "". */
function sleepState(pid: number | undefined): string {
  if (pid === undefined || process.platform !== "linux") return "";
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state === "D" ? " (in uninterruptible sleep, state D)" : state ? ` (state ${state})` : "";
  } catch {
    return "";
  }
}

/**
 * A child process that failed: non-zero exit, signal, timeout, output past its bound or spawn error.
 * Carries the command (argv shown with JSON quoting, secrets masked), exit code, the signal that
 * ended it and the stderr tail. A host tool failing is not a bug of csi-proxy, so its gRPC code is
 * never Internal; callers re-throw with a better one where they recognise the failure. By default:
 * timed out → DeadlineExceeded (the step may have been partly done; a retry converges), the call's
 * own cancellation → Canceled, the daemon stopping → Unavailable, anything else (non-zero exit,
 * killed by a signal csi-proxy did not send, output past the bound, program missing or not
 * executable) → FailedPrecondition: a final failure of this call.
 */
export class HostCommandError extends CsiProxyError {
  override name = "HostCommandError";
  readonly command: string;
  /** The exit status, or null when the child was ended by a signal or never started. */
  readonly exitCode: number | null;
  /** The signal that ended the child (whoever sent it), or null. */
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
  readonly timedOut: boolean;
  constructor(
    message: string,
    command: string,
    details: { exitCode: number | null; signal?: NodeJS.Signals | null; stderr?: string; timedOut?: boolean; cause?: unknown; code?: Code },
  ) {
    const timedOut = details.timedOut ?? false;
    super(details.code ?? (timedOut ? Code.DeadlineExceeded : Code.FailedPrecondition), message, { cause: details.cause });
    this.command = command;
    this.exitCode = details.exitCode;
    this.signal = details.signal ?? null;
    this.stderr = details.stderr ?? "";
    this.timedOut = timedOut;
  }
}

/** Children still running, each with the function that ends it (SIGTERM, SIGKILL after a grace). */
const running = new Set<(graceMs: number) => void>();
const exited = new Set<Promise<void>>();
let stopping = false;

/**
 * Ends every running host command for a graceful daemon stop (SIGTERM, SIGKILL after
 * {@link KILL_GRACE_MS}) and refuses new ones (Unavailable); resolves once all have exited. A daemon
 * killed outright (SIGKILL) runs none of this: its children run to their own end.
 */
export async function stopHostCommands(): Promise<void> {
  stopping = true;
  for (const end of running) end(KILL_GRACE_MS);
  await Promise.all(exited);
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
 * The only place the daemon spawns short-lived processes (the long-lived PowerShell workers are
 * started by spawn-worker.ts). `file` is a program name or absolute path, `args` an
 * argv array passed verbatim (`shell: false`), so request data can never become shell syntax.
 * Resolves with the output on an accepted exit code; otherwise rejects with HostCommandError.
 */
export function runCommand(file: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const { timeoutMs: stepTimeoutMs = 60_000, maxOutputBytes = 4 * 1024 * 1024, okExitCodes = [0], redact = [] } = options;
  const timeoutMs = Math.min(stepTimeoutMs, timeoutCapMs);
  const mask = (s: string) => redactWhole(s, redact);
  const command = mask([file, ...args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(" "));
  if (stopping) return Promise.reject(new HostCommandError(`${command}: not started, csi-proxy is stopping`, command, { exitCode: null, code: Code.Unavailable }));
  const callSig = options.signal ?? callSignal();
  const noteOutliving = outlivingRecorder();
  if (callSig?.aborted) {
    const why = abortError(callSig);
    return Promise.reject(new HostCommandError(`${command}: not started: ${why.message}`, command, { exitCode: null, code: why.code }));
  }
  let settle!: () => void;
  const gone = new Promise<void>((resolve) => (settle = resolve));
  return new Promise<RunResult>((resolve, reject) => {
    const child = spawn(file, args, {
      shell: false,
      windowsHide: true,
      env: process.platform === "win32" ? { ...process.env, ...options.env } : { ...baseEnv, ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [], err: Buffer[] = [];
    let outBytes = 0, errBytes = 0;
    let endedBy: "timeout" | "cancel" | "stop" | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let giveUpTimer: NodeJS.Timeout | undefined;
    const started = Date.now();
    /** SIGTERM now, SIGKILL after `graceMs` if it is still running. The first reason to end it is the one reported. */
    const end = (reason: "timeout" | "cancel" | "stop", graceMs: number) => {
      if (endedBy || child.exitCode !== null || child.signalCode !== null) return;
      endedBy = reason;
      child.kill("SIGTERM");
      killTimer = setTimeout(() => {
        child.kill("SIGKILL");
        if (reason === "cancel") giveUpTimer = setTimeout(giveUp, CANCEL_EXIT_WAIT_MS);
      }, graceMs);
    };
    /** A cancelled child that SIGKILL did not end: the call is answered without it, the work recorded as outliving the call. */
    const giveUp = () => {
      const why = abortError(callSig!);
      const description = `${command} (pid ${child.pid})`;
      noteOutliving({ description, ended: gone });
      const state = child.exitCode !== null || child.signalCode !== null ? " exited but a process it started still holds its output" : `${sleepState(child.pid)} had not exited`;
      reject(
        new HostCommandError(
          `${command}: ${why.message}: SIGTERM and SIGKILL sent, but pid ${child.pid}${state} ${CANCEL_GRACE_MS + CANCEL_EXIT_WAIT_MS} ms later; ` +
            `the operation is still running and its device stays locked until it exits`,
          command,
          { exitCode: null, code: why.code },
        ),
      );
    };
    const onStop = (graceMs: number) => end("stop", graceMs);
    const onAbort = () => end("cancel", CANCEL_GRACE_MS);
    running.add(onStop);
    exited.add(gone);
    callSig?.addEventListener("abort", onAbort, { once: true });
    child.stdout.on("data", (b: Buffer) => {
      if ((outBytes += b.length) <= maxOutputBytes) out.push(b);
    });
    child.stderr.on("data", (b: Buffer) => {
      if ((errBytes += b.length) <= maxOutputBytes) err.push(b);
    });
    const timer = setTimeout(() => end("timeout", KILL_GRACE_MS), timeoutMs);
    const cleanUp = () => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      clearTimeout(giveUpTimer);
      running.delete(onStop);
      callSig?.removeEventListener("abort", onAbort);
      exited.delete(gone);
      settle();
    };
    child.stdin.on("error", () => {}); // a child that exits without reading stdin must not crash us
    child.stdin.end(options.stdin ?? "");
    child.once("error", (cause) => {
      // Only a failure to start ends here (no "close" follows); errors of a started child come with "close".
      if (child.pid !== undefined) return;
      cleanUp();
      const code = (cause as NodeJS.ErrnoException).code;
      const reason = code === "ENOENT" ? `${file} is not installed` : cause.message;
      reject(new HostCommandError(`${command}: ${reason}`, command, { exitCode: null, cause }));
    });
    child.once("close", (exitCode, signal) => {
      if (child.pid === undefined) return; // never started: answered by "error"
      cleanUp();
      const stdout = Buffer.concat(out).toString("utf8");
      const stderr = mask(Buffer.concat(err).toString("utf8"));
      const tooMuch = outBytes > maxOutputBytes ? `stdout` : errBytes > maxOutputBytes ? `stderr` : undefined;
      if (!endedBy && !tooMuch && exitCode !== null && okExitCodes.includes(exitCode)) return resolve({ stdout, stderr, exitCode });
      const by = signal ? ` (${signal})` : "";
      const why =
        endedBy === "timeout" ? `timed out after ${timeoutMs} ms${by}`
        : endedBy === "cancel" ? `${abortError(callSig!).message}: stopped${by} after ${Date.now() - started} ms`
        : endedBy === "stop" ? `ended because csi-proxy is stopping${by}`
        : signal ? `killed by ${signal}`
        : tooMuch ? `${tooMuch} exceeded ${maxOutputBytes} bytes (exit status ${exitCode}); the output was not used`
        : `exit status ${exitCode}`;
      const tail = (stderr.trim() || mask(stdout.trim())).slice(-2000);
      const code = endedBy === "timeout" ? Code.DeadlineExceeded : endedBy === "cancel" ? abortError(callSig!).code : endedBy === "stop" ? Code.Unavailable : Code.FailedPrecondition;
      reject(new HostCommandError(`${command}: ${why}${tail ? `: ${tail}` : ""}`, command, { exitCode, signal, stderr, timedOut: endedBy === "timeout", code }));
    });
  });
}
