/**
 * The server's memory after start-up: what start-up alone needed is not kept.
 *
 * 1. {@link holdOptimizingCompilers} (called by src/boot/v8-flags.ts, which src/main.ts imports before
 *    the program is loaded): V8's baseline and optimizing compilers (Sparkplug, Maglev, Turbofan) are
 *    held while the program loads and the endpoints start. Start-up code runs once; compiling it
 *    only maps compiler code and fills code space and compiler zones (~8 MB resident idle, measured
 *    with bench/path-exists.ts; docs/performance.md "Memory and start"). Not held when the command line or NODE_OPTIONS chose a compiler setting
 *    (--jitless, --no-turbofan, --max-opt, …): that choice stands and is never overridden.
 * 2. {@link settleAfterStart}, once every endpoint listens: the compilers are released (serving code
 *    is compiled as before, from its first calls: a function's feedback, not its age, decides), then
 *    one full garbage collection of the kind V8 runs on a low-memory notification ("last resort":
 *    repeated until nothing more is freed, the young generation shrunk, free pages unmapped).
 *
 * Contract: settleAfterStart is idempotent, never throws and never rejects; a step that cannot run
 * here is reported as not done. Nothing observable changes but memory and when code gets compiled.
 * Platform-neutral (Linux, Windows, the exe).
 */
import { setFlagsFromString } from "node:v8";
import { gcFunction } from "../util/gc-function.ts";

/** Node/V8 options that decide about the compilers: when any is given, nothing is held. */
const COMPILER_CHOICE = /(^|\s)--(no-)?(jitless|turbofan|opt|maglev|sparkplug|max-opt|always-turbofan|always-sparkplug|lite-mode)(?=[\s=]|$)/;

/** The flags held, in the order they are set; released in reverse. */
const HELD_FLAGS = ["sparkplug", "maglev", "turbofan"] as const;

/** True when the process was started with a compiler choice of its own. */
export function compilerChosenByUser(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ""): boolean {
  return execArgv.some((a) => COMPILER_CHOICE.test(a)) || COMPILER_CHOICE.test(nodeOptions);
}

let held = false;
let settled: Promise<SettleReport> | undefined;

/** Compilers the release leaves off (the process's own choice of top tier, see v8-flags.ts). */
let leftOff: readonly string[] = [];

/**
 * Holds Sparkplug, Maglev and Turbofan until {@link settleAfterStart}, which releases them, except
 * those in `leaveOff` (they stay off for the process's life). Returns whether it did.
 */
export function holdOptimizingCompilers(options: { leaveOff?: readonly (typeof HELD_FLAGS)[number][] } = {}): boolean {
  if (held || settled || compilerChosenByUser()) return false;
  for (const flag of HELD_FLAGS) setFlagsFromString(`--no-${flag}`);
  leftOff = options.leaveOff ?? [];
  held = true;
  return true;
}

export interface SettleReport {
  /** The compilers had been held and run again. */
  compilersResumed: boolean;
  /** The full, memory-reducing garbage collection ran. */
  collected: boolean;
  /** Resident set size before and after, in bytes. */
  rssBefore: number;
  rssAfter: number;
  /** Time the settling took, in milliseconds. */
  ms: number;
  /** One line for the log. */
  summary: string;
}

function releaseCompilers(): boolean {
  if (!held) return false;
  for (const flag of [...HELD_FLAGS].reverse()) if (!leftOff.includes(flag)) setFlagsFromString(`--${flag}`);
  held = false;
  return true;
}

function settle(): SettleReport {
  const t0 = process.hrtime.bigint();
  const rssBefore = process.memoryUsage.rss();
  const compilersResumed = releaseCompilers();
  const gc = gcFunction();
  // "last-resort": Heap::CollectAllAvailableGarbage, what Isolate::LowMemoryNotification runs.
  if (gc) gc({ type: "major", execution: "sync", flavor: "last-resort" });
  const rssAfter = process.memoryUsage.rss();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const mb = (n: number) => (n / 1048576).toFixed(1);
  const summary =
    `RSS ${mb(rssBefore)} → ${mb(rssAfter)} MB in ${ms.toFixed(1)} ms ` +
    `(compilers ${compilersResumed ? "resumed" : "were not held"}, full GC ${gc ? "done" : "not available"})`;
  return { compilersResumed, collected: gc !== undefined, rssBefore, rssAfter, ms, summary };
}

/** Gives back what start-up alone needed; call once every endpoint listens. Idempotent, never rejects. */
export function settleAfterStart(): Promise<SettleReport> {
  settled ??= Promise.resolve()
    .then(settle)
    .catch((err: unknown) => {
      const compilersResumed = releaseCompilers(); // whatever failed, the compilers must not stay held
      return { compilersResumed, collected: false, rssBefore: 0, rssAfter: 0, ms: 0, summary: `not settled: ${String(err)}` };
    });
  return settled;
}
