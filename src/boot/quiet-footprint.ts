/**
 * The server's memory after a burst of calls: what the burst alone needed is given back once no
 * call runs (the counterpart, for load, of start-up-footprint.ts).
 *
 * Under load, V8 promotes the objects of the calls in flight at each young-generation collection
 * and lets the old generation grow well past its live size before collecting it; the ArrayBuffers
 * promoted with them (socket reads, answers) keep their malloc'd backing stores until then, and
 * glibc keeps freed blocks in its arenas. So the resident set after a burst is mostly garbage and
 * freed memory not yet returned (docs/performance.md "Memory and start": after 100 000 PathExists
 * calls, 84–112 MB resident where one full collection and malloc_trim leave ~67 MB).
 *
 * {@link watchQuietFootprint}: once no call has run for `quietMs` and the resident set is at least
 * `growthBytes` above what the last settling left, one full garbage collection, then (glibc)
 * `malloc_trim(0)` on a koffi worker thread, which returns the free pages of every malloc arena to
 * the kernel (koffi is loaded for it at the first settling, so an idle server never maps it). Never while a call runs; at most once per quiet period. The collection is V8's
 * memory-reducing one (as at start-up): it holds the event loop for tens of milliseconds (more on
 * a loaded machine), so a call arriving meanwhile waits once per burst, not per call.
 *
 * Contract: never throws; nothing observable changes but memory. Platform-neutral (the trim is
 * glibc's; elsewhere only the collection runs).
 */
import { callsStarted, onCallsQuiet, runningCalls } from "../rpc/call-activity.ts";
import { gcFunction } from "../util/gc-function.ts";

export interface QuietFootprintOptions {
  /** No call for this long (ms) makes the server quiet. */
  quietMs: number;
  /** Resident growth over the last settled size (bytes) worth a settling. */
  growthBytes: number;
  /** Told after each settling (for the log). */
  settled?: (report: { rssBefore: number; rssAfter: number; ms: number }) => void;
}

export const DEFAULT_QUIET_FOOTPRINT: QuietFootprintOptions = { quietMs: 200, growthBytes: 8 * 1024 * 1024 };

/** Starts a trim; `done` runs on the event loop once it finished. */
type Trim = (done: () => void) => void;

/** glibc's malloc_trim(0) through koffi, or undefined where there is none (not Linux, musl, no koffi). */
async function loadTrim(): Promise<Trim | undefined> {
  if (process.platform !== "linux") return undefined;
  try {
    const { loadKoffi } = await import("../util/koffi-loader.ts");
    const koffi = await loadKoffi();
    const trim = koffi.load("libc.so.6").func("int malloc_trim(size_t pad)") as unknown as { async: (pad: number, done: () => void) => void };
    // On a koffi worker thread: the event loop is not held while the arenas are walked.
    return (done) => trim.async(0, () => done());
  } catch {
    return undefined;
  }
}

/**
 * Starts watching (idempotent); returns a function that stops it. The baseline is the resident
 * set when watching starts (call it after start-up settled).
 */
export function watchQuietFootprint(options: QuietFootprintOptions = DEFAULT_QUIET_FOOTPRINT): () => void {
  const gc = gcFunction();
  // koffi and libc are loaded at the first settling, not at start: an idle server never needs them.
  let trim: Promise<Trim | undefined> | undefined;
  let settledRss = process.memoryUsage.rss();
  let timer: NodeJS.Timeout | undefined;
  let generation = 0;

  const check = () => {
    timer = undefined;
    if (runningCalls() > 0) return; // the next time the count falls to zero re-arms
    if (callsStarted() !== generation) return arm();
    const rssBefore = process.memoryUsage.rss();
    if (rssBefore - settledRss < options.growthBytes) return;
    const t0 = performance.now();
    try {
      gc?.({ type: "major", execution: "sync", flavor: "last-resort" });
    } catch {
      // memory is only given back later; nothing observable
    }
    const ms = performance.now() - t0;
    const report = () => {
      settledRss = process.memoryUsage.rss();
      options.settled?.({ rssBefore, rssAfter: settledRss, ms });
    };
    void (trim ??= loadTrim()).then((t) => (t ? t(report) : report()));
  };
  const arm = () => {
    generation = callsStarted();
    timer = setTimeout(check, options.quietMs);
    timer.unref();
  };
  onCallsQuiet(() => {
    if (!timer) arm();
  });
  return () => {
    onCallsQuiet(undefined);
    if (timer) clearTimeout(timer);
    timer = undefined;
  };
}
