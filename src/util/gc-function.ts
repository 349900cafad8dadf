/**
 * V8's `gc()` for the process, without --expose-gc on the command line: used by the start-up settling
 * (boot/start-up-footprint.ts), the quiet-time settling (boot/quiet-footprint.ts) and the transport's
 * read collector (rpc/read-collector.ts). One function per process: each new context costs a native
 * context's memory for as long as its `gc` is held.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** V8's gc function: `gc()` a full collection, `gc({ type: "minor" })` a young-generation one. */
export type GcFunction = (options?: object) => unknown;

/** The process's one `gc` (null: V8 refused it); its context lives as long as the function does. */
let processGc: GcFunction | null | undefined;

/**
 * V8's `gc()`, reached without --expose-gc on the command line: the flag set, `gc` read from a new
 * context, the flag cleared. Made once per process and shared: each new context costs a native
 * context's memory for as long as its `gc` is held, and its creation milliseconds.
 */
export function gcFunction(): GcFunction | undefined {
  if (processGc === undefined) {
    try {
      setFlagsFromString("--expose-gc");
      const gc = runInNewContext("gc");
      processGc = typeof gc === "function" ? (gc as GcFunction) : null;
    } catch {
      processGc = null;
    } finally {
      setFlagsFromString("--no-expose-gc");
    }
  }
  return processGc ?? undefined;
}
