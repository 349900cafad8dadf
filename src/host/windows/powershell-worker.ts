/**
 * One long-lived PowerShell worker process and its line protocol: a call is one ASCII JSON line
 * `{id, op, args}` on stdin; the worker answers lines starting with a marker (`ready`, or the call's
 * `{id, ok, result|error}`); any other output is logged and ignored. One call at a time; the call's
 * timeout kills the worker (DeadlineExceeded), a worker that exits or sends malformed JSON fails
 * its call (Unavailable / Internal). The pool (powershell-pool.ts) owns the workers.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { CsiProxyError, Code } from "../../errors.ts";
import { spawnWorker } from "../exec/spawn-worker.ts";
import { WorkerError, type WorkerErrorInfo } from "./worker-error-codes.ts";

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
}

export class PowerShellWorker {
  readonly child: ChildProcessWithoutNullStreams;
  ready: Promise<void>;
  current: WorkerCall | undefined;
  timer: NodeJS.Timeout | undefined;
  dead = false;
  /** Reported ready at least once. */
  isReady = false;
  #buffer = "";
  #onReady!: () => void;
  #onFail!: (err: Error) => void;
  readonly #pool: WorkerOwner;

  constructor(pool: WorkerOwner, command: WorkerCommand, startTimeoutMs: number) {
    this.#pool = pool;
    this.child = spawnWorker(command.file, command.args, { env: command.env });
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
      let msg: { ready?: boolean; id?: number; ok?: boolean; result?: Json; error?: WorkerErrorInfo };
      try {
        msg = JSON.parse(line.slice(MARKER.length));
      } catch {
        this.#die(new CsiProxyError(Code.Internal, `PowerShell worker sent malformed JSON: ${line.slice(0, 200)}`));
        return;
      }
      if (msg.ready) {
        this.isReady = true;
        this.#onReady();
        continue;
      }
      const call = this.current;
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
      this.#die(new CsiProxyError(Code.DeadlineExceeded, `${call.op}: PowerShell worker did not answer within ${call.timeoutMs} ms; worker restarted`));
    }, call.timeoutMs);
    this.child.stdin.write(call.line + "\n");
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
    this.#onFail(err);
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill();
    this.#pool.removed(this, err);
    call?.reject(err.message.startsWith(`${call.op}:`) ? err : new CsiProxyError(err.code, `${call.op}: ${err.message}`, { cause: err.cause }));
  }

  kill(err: CsiProxyError) {
    this.#die(err);
  }
}
