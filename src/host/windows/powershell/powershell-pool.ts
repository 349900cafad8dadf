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
 * - Cancellation (the options' signal, by default the call's: util/call-scope.ts): a queued call
 *   leaves the queue (never started); a running one kills its worker — a running cmdlet cannot be
 *   interrupted otherwise — and rejects with the signal's code once the process has exited (bounded:
 *   powershell-worker.ts abortCall); a fresh worker replaces it on demand.
 * - Held calls (`hold`: volume.format / volume.resize, handed to the Windows storage service) are
 *   never cut short: their deadline, cancel, timeout or close() answers the caller "still running"
 *   (WorkerHeldError, the signal's or DeadlineExceeded's code) and leaves the worker to finish; the
 *   work is recorded as outliving the call until the worker answers or exits, so the disk lock is
 *   released only then. Extra workers start for the calls they hold up, at most
 *   {@link MAX_HELD_EXTRA_WORKERS}.
 * - Per-call timeout: the worker is killed (a hung cmdlet cannot be interrupted otherwise), the call
 *   fails DeadlineExceeded, and a fresh worker replaces it on demand. A worker that dies fails its
 *   call with Unavailable and is replaced; start-up failures back off, and while no worker is alive
 *   during the back-off, calls fail at once with the start-up error (Unavailable) instead of
 *   waiting for the next attempt only to get the same error.
 * - A worker script that reports it cannot run here at all (`fatal`: Constrained Language Mode)
 *   makes every call, queued or later, fail FailedPrecondition with its text; no worker is started
 *   again (no restart loop) until the daemon restarts.
 * - Errors reported by the worker (CIM exceptions, cmdlet errors, failed CIM method return values)
 *   become coded CsiProxyErrors (worker-error-codes.ts). One worker process and its line protocol:
 *   powershell-worker.ts.
 */
import * as path from "node:path";
import { CsiProxyError, Code } from "../../../errors.ts";
import { WORKER_OPS } from "./scripts/worker-script.ts";
import { asciiJson, PowerShellWorker, WorkerFatalError, type Json, type WorkerCall, type WorkerCommand, type WorkerOwner } from "./powershell-worker.ts";
import { callSignal, outlivingRecorder } from "../../../util/call-scope.ts";
import { abortError } from "../../../util/stop-if-aborted.ts";
import { CANCEL_EXIT_WAIT_MS, CANCEL_GRACE_MS } from "../../exec/run-command.ts";

/**
 * Windows PowerShell 5.1 by absolute path under %SystemRoot% (never a PATH lookup, which a
 * writable directory on PATH could hijack when csi-proxy runs as LocalSystem).
 */
export function powershellExe(env: NodeJS.ProcessEnv = process.env): string {
  const systemRoot = env.SystemRoot ?? env.SYSTEMROOT ?? "C:\\Windows";
  return path.win32.join(systemRoot, "System32", "WindowsPowerShell", "v1.0", "powershell.exe");
}

/**
 * Workers the pool may start beyond `size` while held calls (a Format or Resize whose caller was
 * already answered, left to finish: powershell-worker.ts WorkerHeldError) occupy workers: one per
 * held call, at most this many.
 */
export const MAX_HELD_EXTRA_WORKERS = 4;

/** How long close() waits for workers finishing held calls to exit: a Format's or Resize's own timeout (15 min). */
export const HELD_CLOSE_WAIT_MS = 15 * 60_000;

export interface PowerShellPoolOptions {
  /** Program and arguments of one worker (powershell.exe + powershellArgs(); a fake worker in tests). */
  command: WorkerCommand;
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

/**
 * The one answer of a call while no worker can start, whether it waited for the failed start or came
 * during the back-off: the same text either way, so an answer does not depend on the pool's history.
 */
function cannotStart(op: string, startError: CsiProxyError, waitMs: number): CsiProxyError {
  return new CsiProxyError(Code.Unavailable, `${op}: ${startError.message} (PowerShell workers cannot start; next attempt in ${Math.max(0, waitMs)} ms)`);
}

export class PowerShellPool implements WorkerOwner {
  readonly #options: PowerShellPoolOptions;
  readonly #size: number;
  readonly #maxQueue: number;
  readonly #ops: Set<string>;
  readonly #workers = new Set<PowerShellWorker>();
  readonly #queue: WorkerCall[] = [];
  #nextId = 1;
  #closed = false;
  #failures = 0;
  #retryAt = 0;
  /** Why the last worker failed to start (cleared once one reports ready). */
  #startError: CsiProxyError | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #started = 0;
  /** The worker script cannot run on this node (WorkerFatalError, e.g. Constrained Language Mode): every call gets it; no worker is started again. */
  #fatal: WorkerFatalError | undefined;

  constructor(options: PowerShellPoolOptions) {
    this.#options = options;
    this.#size = Math.max(1, options.size ?? 2);
    this.#maxQueue = options.maxQueue ?? 64;
    this.#ops = new Set(options.ops ?? WORKER_OPS);
  }

  /** Whether close() was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Workers started so far (restarts included); for tests and metrics. */
  get started(): number {
    return this.#started;
  }

  /** "pid N (op)" of each worker running a held op (Format/Resize), its caller answered or not: what close() waits for. */
  get holding(): string[] {
    return [...this.#workers].filter((w) => w.current?.hold && !w.dead).map((w) => `pid ${w.child.pid} (${w.current!.op})`);
  }

  log(msg: string) {
    this.#options.log?.(msg);
  }

  /** Runs `op` with `args` (JSON data only) on a worker; resolves with the op's JSON result. */
  call<T = Json>(op: string, args: { [key: string]: Json } = {}, options: { timeoutMs?: number; signal?: AbortSignal; hold?: boolean } = {}): Promise<T> {
    if (this.#closed) return Promise.reject(new CsiProxyError(Code.Unavailable, "PowerShell worker pool is closed"));
    if (!this.#ops.has(op)) return Promise.reject(new CsiProxyError(Code.Internal, `unknown PowerShell worker op ${JSON.stringify(op)}`));
    if (this.#fatal) return Promise.reject(new CsiProxyError(this.#fatal.code, `${op}: ${this.#fatal.message}`));
    if (this.#queue.length >= this.#maxQueue) {
      return Promise.reject(new CsiProxyError(Code.ResourceExhausted, `too many host operations waiting (${this.#queue.length}); try again later`));
    }
    const signal = options.signal ?? callSignal();
    const notStarted = (sig: AbortSignal) => {
      const why = abortError(sig);
      return new CsiProxyError(why.code, `${op}: ${why.message}: not started`);
    };
    if (signal?.aborted) return Promise.reject(notStarted(signal));
    const wait = this.#retryAt - Date.now();
    if (this.#startError && this.#workers.size === 0 && wait > 0) return Promise.reject(cannotStart(op, this.#startError, wait));
    return new Promise<T>((resolve, reject) => {
      const id = this.#nextId++;
      const call: WorkerCall = {
        id,
        op,
        line: asciiJson({ id, op, args }),
        timeoutMs: options.timeoutMs ?? this.#options.callTimeoutMs ?? 120_000,
        resolve: resolve as (v: Json) => void,
        reject,
        signal,
        hold: options.hold === true,
        noteOutliving: outlivingRecorder(),
      };
      if (signal) {
        call.onAbort = () => {
          const i = this.#queue.indexOf(call);
          if (i !== -1) {
            this.#queue.splice(i, 1);
            return reject(notStarted(signal));
          }
          for (const worker of this.#workers) if (worker.current === call) worker.abortCall(call, abortError(signal));
        };
        signal.addEventListener("abort", call.onAbort, { once: true });
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
            const why = abortError(call.signal);
            call.reject(new CsiProxyError(why.code, `${call.op}: ${why.message}: not started`));
            return this.dispatch();
          }
          worker.run(call);
        },
        () => {},
      );
    }
    const busy = [...this.#workers].filter((w) => w.current).length;
    const idle = this.#workers.size - busy;
    const held = [...this.#workers].filter((w) => w.held).length;
    if (this.#queue.length > idle && this.#workers.size < this.#size + Math.min(held, MAX_HELD_EXTRA_WORKERS)) this.#startWorker();
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
    const worker = new PowerShellWorker(this, this.#options.command, this.#options.startTimeoutMs ?? 60_000);
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
  removed(worker: PowerShellWorker, err: CsiProxyError) {
    this.#workers.delete(worker);
    this.log(`PowerShell worker ${worker.child.pid} gone: ${err.message}`);
    if (this.#closed) return;
    if (err instanceof WorkerFatalError) {
      this.#fatal = err;
      for (const call of this.#queue.splice(0)) call.reject(new CsiProxyError(err.code, `${call.op}: ${err.message}`));
      return;
    }
    queueMicrotask(() => {
      if (!worker.isReady) {
        this.#failures++;
        this.#startError = err;
        this.#retryAt = Date.now() + Math.min(30_000, 250 * 2 ** Math.min(this.#failures - 1, 7));
        // calls waiting while no worker can start fail rather than hang
        if (this.#workers.size === 0) for (const call of this.#queue.splice(0)) call.reject(cannotStart(call.op, err, this.#retryAt - Date.now()));
      }
      this.dispatch();
    });
  }

  /**
   * Kills every worker and fails queued calls (Unavailable). Idempotent. Resolves once every worker
   * has exited, or {@link CANCEL_GRACE_MS} + {@link CANCEL_EXIT_WAIT_MS} after the kill at most: a
   * worker that does not end when killed (stuck in the kernel) is logged by pid and left, never
   * waited for without bound. Resolves with the pids of the workers still alive then. A worker
   * running a held call (Format/Resize) is not killed: its caller is answered at once, its stdin is
   * closed, and close() waits for it to exit by itself once the op is done, at most
   * {@link HELD_CLOSE_WAIT_MS} (never counted in the result).
   */
  async close(): Promise<number[]> {
    if (this.#closed) return [];
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    const err = new CsiProxyError(Code.Unavailable, "PowerShell worker pool is closed");
    for (const call of this.#queue.splice(0)) call.reject(err);
    // a worker running a held call (Format/Resize) is not killed: it ends by itself after the op
    const held: PowerShellWorker[] = [];
    const workers = [...this.#workers].filter((w) => {
      if (!w.kill(err)) return true;
      this.log(`PowerShell worker ${w.child.pid} is finishing a held call (Format/Resize): not killed; waiting for it to answer and exit`);
      held.push(w);
      return false;
    });
    let heldTimer: NodeJS.Timeout | undefined;
    const heldBound = new Promise<void>((resolve) => (heldTimer = setTimeout(resolve, HELD_CLOSE_WAIT_MS)));
    const heldDone = Promise.race([Promise.all(held.map((w) => w.exited)), heldBound]).then(() => clearTimeout(heldTimer));
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, CANCEL_GRACE_MS + CANCEL_EXIT_WAIT_MS)));
    await Promise.race([Promise.all(workers.map((w) => w.exited)), bound]);
    clearTimeout(timer);
    await heldDone;
    const left = workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null && w.child.pid !== undefined).map((w) => w.child.pid!);
    for (const pid of left) this.log(`PowerShell worker ${pid} was killed but had not exited ${CANCEL_GRACE_MS + CANCEL_EXIT_WAIT_MS} ms later; left running`);
    return left;
  }
}
