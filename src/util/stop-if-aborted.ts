import { Code, CsiProxyError } from "../errors.ts";

/**
 * The coded error an aborted signal stands for: its reason when that is a CsiProxyError (the RPC
 * layer aborts with DeadlineExceeded or Cancelled), DeadlineExceeded for a timeout
 * (`AbortSignal.timeout`), Cancelled otherwise.
 */
export function abortError(signal: AbortSignal): CsiProxyError {
  const r: unknown = signal.reason;
  if (r instanceof CsiProxyError) return r;
  if ((r as Error | undefined)?.name === "TimeoutError") return new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded");
  return new CsiProxyError(Code.Canceled, "cancelled");
}

/**
 * Where a multi-step host operation stands when its call is aborted between two steps: the step
 * not started, and what the steps before it changed ({@link NOTHING_CHANGED} when none did).
 */
export interface StepProgress {
  /** The step that is not started: "creating the ext4 filesystem on /dev/loop3p1". */
  before: string;
  /** What was and was not changed, true at this point: "the partition table was written; no partition was created". */
  done: string;
}

/** What an abort before a write's first change says was done. */
export const NOTHING_CHANGED = "nothing was changed";

/** An abort between two steps: the signal's code, where the work stopped and what it had changed. */
export class StoppedBetweenSteps extends CsiProxyError {
  readonly progress: StepProgress;
  constructor(why: CsiProxyError, progress: StepProgress) {
    super(why.code, `${why.message}: stopped before ${progress.before}; ${progress.done}`, { cause: why });
    this.progress = progress;
  }
}

/**
 * Throws {@link abortError} when `signal` is aborted; nothing otherwise (also without a signal).
 * With `progress`, a {@link StoppedBetweenSteps} (same code) saying where the work stopped and
 * what it had changed: `deadline exceeded: stopped before <before>; <done>`.
 */
export function stopIfAborted(signal: AbortSignal | undefined, progress?: StepProgress): void {
  if (!signal?.aborted) return;
  const why = abortError(signal);
  throw progress ? new StoppedBetweenSteps(why, progress) : why;
}

const isAbortCode = (code: Code) => code === Code.DeadlineExceeded || code === Code.Canceled;

/**
 * The failure of a later step of an operation whose earlier steps changed `earlier` (a sentence:
 * "/dev/loop3 was given an empty GPT partition table"): an abort of it says so too — a stop between
 * steps that changed nothing itself becomes "<earlier>; nothing more was changed", a tool stopped
 * by the abort gets "; before that, <earlier>". Any other failure is returned as it is (its text
 * is the tool's or upstream's).
 */
export function withEarlierSteps(err: unknown, earlier: string): unknown {
  if (err instanceof StoppedBetweenSteps) {
    const done = err.progress.done === NOTHING_CHANGED ? `${earlier}; nothing more was changed` : `${earlier}; then ${err.progress.done}`;
    return new StoppedBetweenSteps(err.cause as CsiProxyError, { before: err.progress.before, done });
  }
  if (err instanceof CsiProxyError && isAbortCode(err.code)) return new CsiProxyError(err.code, `${err.message}; before that, ${earlier}`, { cause: err });
  return err;
}
