/**
 * One long-lived PowerShell worker process and its line protocol: a call is one ASCII JSON line
 * `{id, op, args}` on stdin; the worker answers lines starting with a marker (`ready`, or the call's
 * `{id, ok, result|error}`); any other output is logged and ignored. One call at a time; the call's
 * timeout kills the worker (DeadlineExceeded), a worker that exits or sends malformed JSON fails
 * its call (Unavailable / Internal). The pool (powershell-pool.ts) owns the workers.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { CsiProxyError, Code } from "../../../errors.ts";
import { spawnWorker } from "../../exec/spawn-worker.ts";
import { WorkerError, type WorkerErrorInfo } from "./worker-error-codes.ts";
import { CANCEL_EXIT_WAIT_MS, CANCEL_GRACE_MS } from "../../exec/run-command.ts";
import type { Outliving } from "../../../util/call-scope.ts";
import { POWERSHELL_QUIET_ENV } from "./powershell-env.ts";

/**
 * A call whose worker was killed while the call was running in it (its timeout, or its caller went
 * away): whatever the op had handed to Windows (a CIM Format or Resize, run by the storage service)
 * may still be running.
 */
export class WorkerKilledError extends CsiProxyError {
  override name = "WorkerKilledError";
}

/**
 * A held call (a Format or Resize handed to Windows) whose caller stopped waiting — its deadline,
 * its cancel, its timeout, or the pool closing: the worker is NOT killed (on Windows the disk lock
 * and the storage service's work are tied to it); the caller is told it is still running, and the
 * work is recorded as outliving the call until the worker answers or exits.
 */
export class WorkerHeldError extends CsiProxyError {
  override name = "WorkerHeldError";
}

/**
 * The worker script refused to run here, for good (Constrained Language Mode): every call answers
 * with this error (FailedPrecondition, the script's text) and the pool starts no further worker.
 */
export class WorkerFatalError extends CsiProxyError {
  override name = "WorkerFatalError";
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const MARKER = "@@CSIPROXY@@ ";

/** JSON with every non-ASCII UTF-16 unit escaped (\uXXXX): pure ASCII on the wire. */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

/** How a worker is started: program and arguments (powershell.exe + powershellArgs(); a fake worker in tests). */
export interface WorkerCommand {
  file: string;
  args: string[];
  env?: Record<string, string>;
}

/** What a worker tells its owner (the pool). */
export interface WorkerOwner {
  /** Diagnostics; must not block. */
  log(msg: string): void;
  /** The worker died (killed, exited, timed out, failed to start); its call has been failed with `err`. */
  removed(worker: PowerShellWorker, err: CsiProxyError): void;
  /** The worker finished a call and is idle. */
  dispatch(): void;
}

export interface WorkerCall {
  id: number;
  op: string;
  line: string;
  timeoutMs: number;
  resolve(value: Json): void;
  reject(err: Error): void;
  signal?: AbortSignal;
  onAbort?: () => void;
  /** Never cut short: on timeout, cancel or close the caller is answered and the worker finishes the op (WorkerHeldError). */
  hold?: boolean;
  /** Records work left running after the call's answer (call-scope.ts), in the call's own scope. */
  noteOutliving?: (work: Outliving) => void;
}

export class PowerShellWorker {
  readonly child: ChildProcessWithoutNullStreams;
  ready: Promise<void>;
  current: WorkerCall | undefined;
  timer: NodeJS.Timeout | undefined;
  dead = false;
  /** Reported ready at least once. */
  isReady = false;
  /** Running a held call whose caller was already answered (WorkerHeldError); busy until it answers or exits. */
  held = false;
  #heldDone: (() => void) | undefined;
  #buffer = "";
  #onReady!: () => void;
  #onFail!: (err: Error) => void;
  readonly #pool: WorkerOwner;
  /** Settles once the process has exited (or never started). */
  readonly exited: Promise<void>;

  constructor(pool: WorkerOwner, command: WorkerCommand, startTimeoutMs: number) {
    this.#pool = pool;
    this.child = spawnWorker(command.file, command.args, { env: { ...POWERSHELL_QUIET_ENV, ...command.env } });
    this.exited = new Promise<void>((resolve) => {
      this.child.once("exit", () => resolve());
      this.child.once("error", () => {
        if (this.child.pid === undefined) resolve();
      });
    });
    this.ready = new Promise<void>((resolve, reject) => {
      this.#onReady = resolve;
      this.#onFail = reject;
    });
    this.ready.catch(() => {});
    const startTimer = setTimeout(() => this.#die(new CsiProxyError(Code.Unavailable, `PowerShell worker did not start within ${startTimeoutMs} ms`)), startTimeoutMs);
    void this.ready.then(() => clearTimeout(startTimer), () => clearTimeout(startTimer));
    this.child.stdout.setEncoding("utf8");
    this.child.stdout.on("data", (chunk: string) => this.#onData(chunk));
    let stderr = "";
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    this.child.stdin.on("error", () => {});
    this.child.once("error", (err) => this.#die(new CsiProxyError(Code.Unavailable, `cannot start PowerShell worker (${command.file}): ${err.message}`, { cause: err })));
    this.child.once("exit", (code, signal) =>
      this.#die(new CsiProxyError(Code.Unavailable, `PowerShell worker exited (${signal ?? `code ${code}`})${stderr.trim() ? `: ${stderr.trim().slice(-1000)}` : ""}`)),
    );
  }

  #onData(chunk: string) {
    this.#buffer += chunk;
    let nl: number;
    while ((nl = this.#buffer.indexOf("\n")) !== -1) {
      const line = this.#buffer.slice(0, nl).replace(/\r$/, "");
      this.#buffer = this.#buffer.slice(nl + 1);
      if (!line.startsWith(MARKER)) {
        if (line.trim()) this.#pool.log(`PowerShell worker ${this.child.pid}: ignored output: ${line.slice(0, 200)}`);
        continue;
      }
      let msg: { ready?: boolean; id?: number | null; ok?: boolean; result?: Json; error?: WorkerErrorInfo; fatal?: { kind?: string; message?: string } };
      try {
        msg = JSON.parse(line.slice(MARKER.length));
      } catch {
        this.#die(new CsiProxyError(Code.Internal, `PowerShell worker sent malformed JSON: ${line.slice(0, 200)}`));
        return;
      }
      if (msg.fatal) {
        this.#die(new WorkerFatalError(Code.FailedPrecondition, String(msg.fatal.message ?? msg.fatal.kind ?? "PowerShell worker script cannot run")));
        return;
      }
      if (msg.ready) {
        this.isReady = true;
        this.#onReady();
        continue;
      }
      const call = this.current;
      // An answer without an id (the worker could not read the request line, so it never learnt its
      // id) is for the one call this worker is running: fail it now rather than at its timeout.
      if (call && (msg.id === null || msg.id === undefined) && msg.ok === false) {
        this.#finish();
        call.reject(new WorkerError(call.op, msg.error ?? {}));
        this.#pool.dispatch();
        continue;
      }
      if (call && this.held && msg.id === call.id) {
        this.#finish();
        this.#endHold();
        this.#pool.log(`PowerShell worker ${this.child.pid}: held ${call.op} finished (${msg.ok ? "ok" : "failed"}) after its caller was answered`);
        this.#pool.dispatch();
        continue;
      }
      if (!call || msg.id !== call.id) {
        this.#pool.log(`PowerShell worker ${this.child.pid}: response for unknown call ${msg.id}`);
        continue;
      }
      this.#finish();
      if (msg.ok) call.resolve(msg.result === undefined ? null : msg.result);
      else call.reject(new WorkerError(call.op, msg.error ?? {}));
      this.#pool.dispatch();
    }
  }

  run(call: WorkerCall) {
    this.current = call;
    this.timer = setTimeout(() => {
      if (call.hold) return this.release(call, Code.DeadlineExceeded, `no answer within ${call.timeoutMs} ms`);
      this.#die(new WorkerKilledError(Code.DeadlineExceeded, `${call.op}: PowerShell worker did not answer within ${call.timeoutMs} ms; worker restarted`));
    }, call.timeoutMs);
    this.child.stdin.write(call.line + "\n");
  }

  /**
   * Answers a held call's caller now (`code`, saying it is still running) and leaves the worker to
   * finish the op: it stays busy ({@link held}) until it answers or exits, and that is recorded as
   * work outliving the call, so the disk's lock is released only then. Idempotent.
   */
  release(call: WorkerCall, code: Code, why: string) {
    if (this.current !== call || this.held || this.dead) return;
    clearTimeout(this.timer);
    if (call.signal && call.onAbort) call.signal.removeEventListener("abort", call.onAbort);
    this.held = true;
    const pid = this.child.pid;
    const done = new Promise<void>((resolve) => (this.#heldDone = resolve));
    call.noteOutliving?.({ description: `${call.op} in PowerShell worker (pid ${pid}), left to finish`, ended: done });
    call.reject(new WorkerHeldError(code, `${call.op}: ${why}: still running in its PowerShell worker (pid ${pid}), which is left to finish it (never killed mid-operation); the disk stays locked until it answers or exits`));
  }

  #endHold() {
    this.held = false;
    this.#heldDone?.();
    this.#heldDone = undefined;
  }

  #finish() {
    clearTimeout(this.timer);
    const call = this.current;
    this.current = undefined;
    if (call?.signal && call.onAbort) call.signal.removeEventListener("abort", call.onAbort);
  }

  /** Kills the worker (if alive) and fails its call with `err`. Idempotent. */
  #die(err: CsiProxyError) {
    if (this.dead) return;
    this.dead = true;
    const call = this.current;
    this.#finish();
    this.#endHold();
    this.#onFail(err);
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill();
    this.#pool.removed(this, err);
    call?.reject(err.message.startsWith(`${call.op}:`) ? err : new CsiProxyError(err.code, `${call.op}: ${err.message}`, { cause: err.cause }));
  }

  /**
   * Kills the worker and fails its call with `err` — except a worker running a held call: its caller
   * is answered (WorkerHeldError) and its stdin is closed, so it ends by itself after the op.
   * Returns whether the worker was left running.
   */
  kill(err: CsiProxyError): boolean {
    const call = this.current;
    if (call?.hold && !this.dead) {
      this.release(call, err.code, err.message);
      this.child.stdin.end();
      return true;
    }
    this.#die(err);
    return false;
  }

  /**
   * The running call's caller went away (`err`: the signal's DeadlineExceeded/Canceled): the worker
   * process is killed — a running cmdlet cannot be interrupted otherwise — and the pool replaces it;
   * the call rejects ({@link WorkerKilledError}) once the process has exited, or, when it has not
   * exited {@link CANCEL_GRACE_MS} + {@link CANCEL_EXIT_WAIT_MS} later, saying so (pid) and recording
   * it as outliving the call.
   */
  abortCall(call: WorkerCall, err: CsiProxyError) {
    if (this.current !== call || this.dead) return;
    if (call.hold) return this.release(call, err.code, err.message);
    this.#finish();
    const pid = this.child.pid;
    this.#die(err);
    const boundMs = CANCEL_GRACE_MS + CANCEL_EXIT_WAIT_MS;
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      call.noteOutliving?.({ description: `powershell.exe (pid ${pid}) running ${call.op}`, ended: this.exited });
      call.reject(new WorkerKilledError(err.code, `${call.op}: ${err.message}: its PowerShell worker (pid ${pid}) was killed but had not exited ${boundMs} ms later; the operation is still running`));
    }, boundMs);
    void this.exited.then(() => {
      if (settled) return;
      clearTimeout(timer);
      call.reject(new WorkerKilledError(err.code, `${call.op}: ${err.message}: stopped; its PowerShell worker (pid ${pid}) was ended and is replaced`));
    });
  }
}
