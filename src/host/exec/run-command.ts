import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { CsiProxyError, Code } from "../../errors.ts";
import { redactWhole } from "../../log/redact.ts";
import { callSignal, deviceLockFds, outlivingRecorder } from "../../util/call-scope.ts";
import { abortError } from "../../util/stop-if-aborted.ts";
import { readFileSync } from "node:fs";
import { hostStep, MUST_FINISH_STOP_WAIT_MS, type HostStepName } from "./host-steps.ts";
import { noteLateStep } from "./late-steps.ts";

/** How to run one command. Arguments are an argv array: no shell is ever involved. */
export interface RunOptions {
  /** Extra environment variables (merged over a minimal PATH/LANG environment, not the daemon's). */
  env?: Record<string, string>;
  /** Written to the child's stdin, then stdin is closed. The only way secrets may reach a child. */
  stdin?: string | Buffer;
  /**
   * After this many milliseconds (capped by -host-command-timeout) a stoppable child gets SIGTERM, and
   * SIGKILL {@link KILL_GRACE_MS} later; a must-finish one is answered without (DeadlineExceeded) and
   * runs on. Default 60 s.
   */
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
  /**
   * Which step of host-steps.ts this is (default: a stoppable read). A `must-finish` step is never
   * signalled: its call's abort and its bound answer the call (DeadlineExceeded/Canceled naming it
   * and its pid, still running) and record it as outliving the call; a graceful stop waits for it.
   * A step that `writesDevice` is handed the call's device lock descriptors (call-scope.ts
   * deviceLockFds) as its fds 3, 4, …: the lock then lasts as long as the tool.
   */
  step?: HostStepName;
  /** The device the step acts on, for the late-step records (late-steps.ts) and answers. */
  device?: string;
  /** Told the child's pid once it was spawned, and a promise settled once it exited (intent records, state/intent-records.ts). */
  onSpawn?: (pid: number, exited: Promise<void>) => void;
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

/** Stoppable children still running, each with the function that ends it (SIGTERM, SIGKILL after a grace). */
const running = new Set<(graceMs: number) => void>();
const exited = new Set<Promise<void>>();
/** Must-finish children still running: never signalled, waited for by a graceful stop. */
const mustFinish = new Map<Promise<void>, string>();
let stopping = false;

/**
 * Ends every running stoppable host command for a graceful daemon stop (SIGTERM, SIGKILL after
 * {@link KILL_GRACE_MS}) and refuses new ones (Unavailable); resolves once they have exited and the
 * running must-finish steps have ended — those are never signalled; `onWait` is told each one
 * waited for (command and pid), and the wait ends after `mustFinishWaitMs` (default
 * {@link MUST_FINISH_STOP_WAIT_MS}) leaving them running. Resolves with the must-finish steps still
 * running then. A daemon killed outright (SIGKILL) runs none of this: its children run to their own end.
 */
export async function stopHostCommands(options: { onWait?: (what: string) => void; mustFinishWaitMs?: number } = {}): Promise<string[]> {
  stopping = true;
  for (const end of running) end(KILL_GRACE_MS);
  for (const what of mustFinish.values()) options.onWait?.(what);
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, options.mustFinishWaitMs ?? MUST_FINISH_STOP_WAIT_MS)));
  await Promise.all(exited);
  await Promise.race([Promise.all(mustFinish.keys()), bound]);
  clearTimeout(timer);
  return [...mustFinish.values()];
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
  const step = hostStep(options.step);
  // The lock descriptors go to this child only: the daemon opens every file close-on-exec, and these
  // are dup2'd into fds 3, 4, … of this one child (no close-on-exec there: the tool keeps them).
  const lockFds = step.writesDevice ? deviceLockFds() : [];
  let settle!: () => void;
  const gone = new Promise<void>((resolve) => (settle = resolve));
  return new Promise<RunResult>((resolve, reject) => {
    const child = spawn(file, args, {
      shell: false,
      windowsHide: true,
      env: process.platform === "win32" ? { ...process.env, ...options.env } : { ...baseEnv, ...options.env },
      stdio: ["pipe", "pipe", "pipe", ...lockFds],
    }) as ChildProcessWithoutNullStreams;
    const out: Buffer[] = [], err: Buffer[] = [];
    let outBytes = 0, errBytes = 0;
    let endedBy: "timeout" | "cancel" | "stop" | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let answered = false;
    let giveUpTimer: NodeJS.Timeout | undefined;
    const started = Date.now();
    /** SIGTERM now, SIGKILL after `graceMs` if it is still running. The first reason to end it is the one reported. */
    let lateEnd: ((how: string, ok: boolean) => void) | undefined;
    const end = (reason: "timeout" | "cancel" | "stop", graceMs: number) => {
      if (endedBy || child.exitCode !== null || child.signalCode !== null) return;
      if (step.kind === "must-finish") return answerWithout(reason);
      endedBy = reason;
      child.kill("SIGTERM");
      killTimer = setTimeout(() => {
        child.kill("SIGKILL");
        if (reason === "cancel") giveUpTimer = setTimeout(giveUp, CANCEL_EXIT_WAIT_MS);
      }, graceMs);
    };
    /**
     * A must-finish step at its call's abort or its bound: never signalled; the call is answered now
     * naming it, and it is recorded as outliving the call (its device's lock stays held until it ends).
     */
    const answerWithout = (reason: "timeout" | "cancel" | "stop") => {
      if (reason === "stop" || answered) return; // a graceful stop waits for it (stopHostCommands)
      answered = true;
      const why = reason === "cancel" ? abortError(callSig!) : { code: Code.DeadlineExceeded, message: `ran past its bound of ${timeoutMs} ms` };
      const description = `${command} (pid ${child.pid})`;
      noteOutliving({ description, ended: gone });
      lateEnd = noteLateStep({ device: options.device ?? "", command, pid: child.pid, answeredAt: new Date() });
      reject(
        new HostCommandError(
          `${command}: ${why.message}: a step that must finish (${options.step}, pid ${child.pid}) is still running after ${Date.now() - started} ms; ` +
            `it is not stopped (stopping it would leave the device damaged); the device stays locked until it ends`,
          command,
          { exitCode: null, code: why.code, timedOut: reason === "timeout" },
        ),
      );
    };
    /** A cancelled child that SIGKILL did not end: the call is answered without it, the work recorded as outliving the call. */
    const giveUp = () => {
      const why = abortError(callSig!);
      const description = `${command} (pid ${child.pid})`;
      noteOutliving({ description, ended: gone });
      lateEnd = noteLateStep({ device: options.device ?? "", command, pid: child.pid, answeredAt: new Date() });
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
    if (child.pid !== undefined) options.onSpawn?.(child.pid, gone);
    if (step.kind === "must-finish") mustFinish.set(gone, `${command} (pid ${child.pid})`);
    else {
      running.add(onStop);
      exited.add(gone);
    }
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
      mustFinish.delete(gone);
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
      lateEnd?.(signal ? `killed by ${signal}` : `exit status ${exitCode}`, !signal && exitCode !== null && okExitCodes.includes(exitCode));
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
