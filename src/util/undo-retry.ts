/**
 * Retrying a cleanup that failed inside a call (a mount that could not be undone), after the call
 * has answered with an error naming what is left where.
 *
 * Contract: `attempt` runs at most `delaysMs.length` times, each after the next delay of the
 * schedule (measured from the previous attempt's end), never two at once; it resolves "done" when
 * nothing is left (or what is there is to be kept, `kept` saying why), "left" with a description of what is still there, or rejects (counted as
 * "left", its message logged). Every attempt is logged (a warning while something is left, info when
 * done); the last failing one logs that the daemon gives up. Timers are unref'd: a pending retry
 * never keeps the process alive.
 */

/** Delays before each retry, in ms: 7 attempts over about 2 minutes. */
export const UNDO_RETRY_DELAYS_MS: readonly number[] = [250, 1_000, 3_000, 8_000, 15_000, 30_000, 60_000];

export interface UndoLog {
  info(msg: string): void;
  warning(msg: string): void;
}

/** One attempt: done (nothing left, or `kept` saying why what is there stays), or what is still left. */
export type UndoAttempt = () => Promise<{ done: true; kept?: string } | { done: false; left: string }>;

/** Where retries log when no logger was given (stderr, one line per attempt). */
const stderrLog: UndoLog = {
  info: (msg) => process.stderr.write(`${msg}\n`),
  warning: (msg) => process.stderr.write(`${msg}\n`),
};

/** Describes the schedule for an answer: "7 attempts within 117 s". */
export function describeSchedule(delaysMs: readonly number[] = UNDO_RETRY_DELAYS_MS): string {
  const total = delaysMs.reduce((a, b) => a + b, 0);
  return `${delaysMs.length} attempts within ${Math.ceil(total / 1000)} s`;
}

/** Starts retrying `attempt` for `what` in the background (see module doc); resolves when it stops. */
export function retryUndo(what: string, attempt: UndoAttempt, log: UndoLog = stderrLog, delaysMs: readonly number[] = UNDO_RETRY_DELAYS_MS): Promise<boolean> {
  return (async () => {
    for (let i = 0; i < delaysMs.length; i++) {
      await new Promise<void>((resolve) => setTimeout(resolve, delaysMs[i]).unref());
      const n = `${i + 1}/${delaysMs.length}`;
      try {
        const r = await attempt();
        if (r.done) {
          log.info(`cleanup retry ${n} of ${what}: ${r.kept !== undefined ? `stopped: ${r.kept}` : "done, nothing left"}`);
          return true;
        }
        log.warning(`cleanup retry ${n} of ${what}: still left: ${r.left}${i + 1 === delaysMs.length ? "; giving up, remove it by hand" : ""}`);
      } catch (err) {
        log.warning(`cleanup retry ${n} of ${what}: failed: ${err instanceof Error ? err.message : String(err)}${i + 1 === delaysMs.length ? "; giving up, remove it by hand" : ""}`);
      }
    }
    return false;
  })();
}
