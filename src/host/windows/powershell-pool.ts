/**
 * A pool of long-lived PowerShell workers (never a powershell.exe per call: upstream issue #193 had
 * that costing 45–68% of node CPU).
 *
 * - N workers, started on demand (the first calls start them) and then reused; each runs the ONE
 *   constant script of scripts/worker-script.ts, passed once as -EncodedCommand.
 * - A call is `{id, op, args}` as one JSON line on the worker's stdin; `op` must be one of the
 *   script's constant ops, `args` a JSON object. Request data is only ever JSON data: it is never
 *   part of any script or command line (CVE-2023-3893 cannot happen by construction). Non-ASCII is
 *   escaped (\uXXXX) so console code pages never matter.
 * - One call at a time per worker; at most `size` calls run, up to `maxQueue` wait (beyond that:
 *   ResourceExhausted).
 * - Per-call timeout: the worker is killed (a hung cmdlet cannot be interrupted otherwise), the call
 *   fails DeadlineExceeded, and a fresh worker replaces it on demand. A worker that dies fails its
 *   call with Unavailable and is replaced; start-up failures back off, and while no worker is alive
 *   during the back-off, calls fail at once with the start-up error (Unavailable) instead of
 *   waiting for the next attempt only to get the same error.
 * - Errors reported by the worker (CIM exceptions, cmdlet errors, failed CIM method return values)
 *   become coded CsiProxyErrors (see {@link mapWorkerError}).
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { CsiProxyError, Code } from "../../errors.ts";
import { spawnWorker } from "../exec/spawn-worker.ts";
import { WORKER_OPS, type WorkerOp } from "./scripts/worker-script.ts";
import { STORAGE_STATUS } from "./storage-status.ts";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface PowerShellPoolOptions {
  /** Program and arguments of one worker (powershell.exe + powershellArgs(); a fake worker in tests). */
  command: { file: string; args: string[]; env?: Record<string, string> };
  /** Number of workers (= concurrent calls). Default 2. */
  size?: number;
  /** Calls allowed to wait for a worker. Default 64. */
  maxQueue?: number;
  /** Default per-call timeout. Default 120 s (Format / Resize can be slow). */
  callTimeoutMs?: number;
  /** Time a worker may take to report ready. Default 60 s. */
  startTimeoutMs?: number;
  /** Diagnostics (worker starts/exits, stray output); must not block. */
  log?: (msg: string) => void;
  /** The ops the pool accepts: those of the script it runs (default: the storage worker script's WORKER_OPS). */
  ops?: readonly string[];
}

/** What a worker reports for a failed op (scripts/worker-script.ts, ErrorInfo). */
export interface WorkerErrorInfo {
  message?: string;
  type?: string;
  category?: string;
  fqid?: string;
  kind?: string;
  returnValue?: number;
  native?: string;
  statusCode?: number;
  hresult?: number;
  /** From a CimException's ErrorData (MSFT_StorageExtendedStatus / MSFT_WmiError), e.g. "StorageWMI 42002". */
  MessageId?: string;
  error_Code?: string;
}

/** A Storage Management API status carried by a thrown error instead of a ReturnValue ("StorageWMI 42002,New-Partition"). */
function storageStatus(info: WorkerErrorInfo): number | undefined {
  for (const text of [info.MessageId, info.fqid]) {
    const m = /StorageWMI (\d+)/.exec(text ?? "");
    if (m) return Number(m[1]);
  }
  return undefined;
}

/** A failed op: the worker's error details plus the gRPC code chosen from them. */
export class WorkerError extends CsiProxyError {
  override name = "WorkerError";
  readonly op: string;
  readonly info: WorkerErrorInfo;
  constructor(op: string, info: WorkerErrorInfo) {
    const [code, text] = mapWorkerError(info);
    super(code, `${op}: ${text}`);
    this.op = op;
    this.info = info;
  }
}

/**
 * gRPC code for a CIM method's non-zero ReturnValue or StorageWMI status: the Storage Management
 * API's documented codes (storage-status.ts); any other code the provider reports is FailedPrecondition with the number in
 * the message (like upstream's `code=<n>`): the host refused, not csi-proxy erred; 0 (success taken
 * for a failure) is Internal, csi-proxy's own bug.
 */
export function codeForReturnValue(rv: number): Code {
  if (rv === 0) return Code.Internal;
  return STORAGE_STATUS[rv]?.code ?? Code.FailedPrecondition;
}

/** The message with the documented meaning of a Storage Management API code appended. */
function withStatusText(message: string, rv: number): string {
  const text = STORAGE_STATUS[rv]?.text;
  return text && !message.includes(text) ? `${message} (${text})` : message;
}

const nativeCodes: Record<string, Code> = {
  NotFound: Code.NotFound,
  AccessDenied: Code.PermissionDenied,
  InvalidParameter: Code.InvalidArgument,
  InvalidQuery: Code.InvalidArgument,
  NotSupported: Code.Unimplemented,
  AlreadyExists: Code.AlreadyExists,
  ServerIsShuttingDown: Code.Unavailable,
  ServerLimitsExceeded: Code.ResourceExhausted,
};

const categoryCodes: Record<string, Code> = {
  ObjectNotFound: Code.NotFound,
  PermissionDenied: Code.PermissionDenied,
  InvalidArgument: Code.InvalidArgument,
  InvalidData: Code.InvalidArgument,
  ResourceExists: Code.AlreadyExists,
  ResourceBusy: Code.FailedPrecondition,
  ResourceUnavailable: Code.FailedPrecondition, // a final failure of the call, not "still in progress" (compat/driver-fragments.ts)
  OperationTimeout: Code.DeadlineExceeded,
  NotImplemented: Code.Unimplemented,
  NotEnabled: Code.FailedPrecondition,
  LimitsExceeded: Code.ResourceExhausted,
};

/** Chooses the gRPC code and message of a worker error: script kind, method return value (or StorageWMI status), CIM native code, then the PowerShell category; Internal only for what points at csi-proxy's own script (docs/reliability.md "Internal policy"). */
export function mapWorkerError(info: WorkerErrorInfo): [Code, string] {
  const message = (info.message ?? "PowerShell error").trim();
  if (info.kind === "NotFound") return [Code.NotFound, message];
  if (info.kind === "UnknownOp") return [Code.Internal, message];
  if (info.kind === "FailedPrecondition") return [Code.FailedPrecondition, message]; // the script's own refusal at the moment of acting
  if (typeof info.returnValue === "number" && info.returnValue !== 0) return [codeForReturnValue(info.returnValue), withStatusText(message, info.returnValue)];
  const status = storageStatus(info);
  if (status !== undefined) return [codeForReturnValue(status), withStatusText(message, status)];
  if (info.native && nativeCodes[info.native] !== undefined) return [nativeCodes[info.native], message];
  if (info.category && categoryCodes[info.category] !== undefined) return [categoryCodes[info.category], message];
  // A CIM error the provider raised (a native code, e.g. "Failed"): the host's failure. Anything else
  // (a PowerShell runtime error in the worker script, no information at all) is csi-proxy's bug.
  if (info.native) return [Code.FailedPrecondition, message];
  return [Code.Internal, message];
}

const MARKER = "@@CSIPROXY@@ ";

/** JSON with every non-ASCII UTF-16 unit escaped (\uXXXX): pure ASCII on the wire. */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

interface Call {
  id: number;
  op: string;
  line: string;
  timeoutMs: number;
  resolve(value: Json): void;
  reject(err: Error): void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

class Worker {
  readonly child: ChildProcessWithoutNullStreams;
  ready: Promise<void>;
  current: Call | undefined;
  timer: NodeJS.Timeout | undefined;
  dead = false;
  /** Reported ready at least once. */
  isReady = false;
  #buffer = "";
  #onReady!: () => void;
  #onFail!: (err: Error) => void;
  readonly #pool: PowerShellPool;

  constructor(pool: PowerShellPool, options: PowerShellPoolOptions, startTimeoutMs: number) {
    this.#pool = pool;
    this.child = spawnWorker(options.command.file, options.command.args, { env: options.command.env });
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
    this.child.once("error", (err) => this.#die(new CsiProxyError(Code.Unavailable, `cannot start PowerShell worker (${options.command.file}): ${err.message}`, { cause: err })));
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

  run(call: Call) {
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

export class PowerShellPool {
  readonly #options: PowerShellPoolOptions;
  readonly #size: number;
  readonly #maxQueue: number;
  readonly #ops: Set<string>;
  readonly #workers = new Set<Worker>();
  readonly #queue: Call[] = [];
  #nextId = 1;
  #closed = false;
  #failures = 0;
  #retryAt = 0;
  /** Why the last worker failed to start (cleared once one reports ready). */
  #startError: CsiProxyError | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #started = 0;

  constructor(options: PowerShellPoolOptions) {
    this.#options = options;
    this.#size = Math.max(1, options.size ?? 2);
    this.#maxQueue = options.maxQueue ?? 64;
    this.#ops = new Set(options.ops ?? WORKER_OPS);
  }

  /** Workers started so far (restarts included); for tests and metrics. */
  get started(): number {
    return this.#started;
  }

  log(msg: string) {
    this.#options.log?.(msg);
  }

  /** Runs `op` with `args` (JSON data only) on a worker; resolves with the op's JSON result. */
  call<T = Json>(op: WorkerOp | string, args: { [key: string]: Json } = {}, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<T> {
    if (this.#closed) return Promise.reject(new CsiProxyError(Code.Unavailable, "PowerShell worker pool is closed"));
    if (!this.#ops.has(op)) return Promise.reject(new CsiProxyError(Code.Internal, `unknown PowerShell worker op ${JSON.stringify(op)}`));
    if (this.#queue.length >= this.#maxQueue) {
      return Promise.reject(new CsiProxyError(Code.ResourceExhausted, `too many host operations waiting (${this.#queue.length}); try again later`));
    }
    if (options.signal?.aborted) return Promise.reject(new CsiProxyError(Code.Canceled, `${op}: cancelled`));
    const wait = this.#retryAt - Date.now();
    if (this.#startError && this.#workers.size === 0 && wait > 0) {
      return Promise.reject(new CsiProxyError(Code.Unavailable, `${op}: ${this.#startError.message} (PowerShell workers cannot start; next attempt in ${wait} ms)`));
    }
    return new Promise<T>((resolve, reject) => {
      const id = this.#nextId++;
      const call: Call = {
        id,
        op,
        line: asciiJson({ id, op, args }),
        timeoutMs: options.timeoutMs ?? this.#options.callTimeoutMs ?? 120_000,
        resolve: resolve as (v: Json) => void,
        reject,
        signal: options.signal,
      };
      if (options.signal) {
        call.onAbort = () => {
          const i = this.#queue.indexOf(call);
          if (i !== -1) {
            this.#queue.splice(i, 1);
            reject(new CsiProxyError(Code.Canceled, `${op}: cancelled`));
          }
          // a running call is not interrupted: the worker finishes it and its answer is dropped
        };
        options.signal.addEventListener("abort", call.onAbort, { once: true });
      }
      this.#queue.push(call);
      this.dispatch();
    });
  }

  /** Hands queued calls to idle ready workers, starting workers up to `size`. */
  dispatch(): void {
    if (this.#closed) return;
    for (const worker of this.#workers) {
      if (this.#queue.length === 0) return;
      if (worker.current || worker.dead) continue;
      void worker.ready.then(
        () => {
          if (worker.current || worker.dead || this.#queue.length === 0) return;
          const call = this.#queue.shift()!;
          if (call.signal?.aborted) {
            call.reject(new CsiProxyError(Code.Canceled, `${call.op}: cancelled`));
            return this.dispatch();
          }
          worker.run(call);
        },
        () => {},
      );
    }
    const busy = [...this.#workers].filter((w) => w.current).length;
    const idle = this.#workers.size - busy;
    if (this.#queue.length > idle && this.#workers.size < this.#size) this.#startWorker();
  }

  #startWorker() {
    const now = Date.now();
    if (now < this.#retryAt) {
      this.#retryTimer ??= setTimeout(() => {
        this.#retryTimer = undefined;
        this.dispatch();
      }, this.#retryAt - now);
      return;
    }
    this.#started++;
    const worker = new Worker(this, this.#options, this.#options.startTimeoutMs ?? 60_000);
    this.#workers.add(worker);
    this.log(`PowerShell worker ${worker.child.pid} starting`);
    worker.ready.then(
      () => {
        this.#failures = 0;
        this.#startError = undefined;
        this.dispatch();
      },
      () => {},
    );
    this.dispatch();
  }

  /** Called by a worker that died: forget it, back off when it never became ready, serve the queue. */
  removed(worker: Worker, err: CsiProxyError) {
    this.#workers.delete(worker);
    this.log(`PowerShell worker ${worker.child.pid} gone: ${err.message}`);
    if (this.#closed) return;
    queueMicrotask(() => {
      if (!worker.isReady) {
        this.#failures++;
        this.#startError = err;
        this.#retryAt = Date.now() + Math.min(30_000, 250 * 2 ** Math.min(this.#failures - 1, 7));
        // calls waiting while no worker can start fail rather than hang
        if (this.#workers.size === 0) for (const call of this.#queue.splice(0)) call.reject(err);
      }
      this.dispatch();
    });
  }

  /** Kills every worker and fails queued calls (Unavailable). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    const err = new CsiProxyError(Code.Unavailable, "PowerShell worker pool is closed");
    for (const call of this.#queue.splice(0)) call.reject(err);
    const exits = [...this.#workers].map((w) => new Promise<void>((resolve) => (w.child.exitCode !== null || w.child.signalCode !== null ? resolve() : w.child.once("exit", () => resolve()))));
    for (const w of [...this.#workers]) w.kill(err);
    await Promise.all(exits);
  }
}
