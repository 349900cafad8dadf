/**
 * V8 settings for a per-node agent, made before the program is loaded (src/main.ts imports this
 * first and loads the program afterwards):
 * - the young generation keeps its initial size instead of doubling up to 2 × 16 MiB semi-spaces
 *   under load. Measured with bench/path-exists.ts: RSS after 100 000 calls stays within ~15 MB of
 *   idle instead of ~+60 MB, at no measurable throughput cost. (V8 reads this flag at every growth
 *   decision; `--max-semi-space-size` would have to be given on the node command line, which the
 *   bins and the exe do not control.)
 * - the old generation's next collection is set at 1.2 × its live size after each full collection
 *   (V8 otherwise lets it grow to up to 4 × under load: the objects of calls in flight promoted at
 *   each young collection pile up as garbage, ~200 bytes per PathExists call). Measured with
 *   bench/path-exists.ts: RSS at the end of 100 000 calls 84–88 MB instead of 97–112 MB, CPU per call
 *   unchanged within the run-to-run spread (docs/performance.md "Memory and start"). Read by V8 at
 *   each full collection, so setting it here, after the isolate exists, takes effect.
 * - the compilers are held during start-up, and Turbofan stays off after it (the top tier is Maglev;
 *   not when the command line or NODE_OPTIONS chose a compiler setting): Turbofan's code in the node
 *   binary is never paged in and its compile zones never fill the worker threads' malloc arenas.
 *   Measured with bench/path-exists.ts: file-backed RSS after 100 000 calls 43.4 instead of 48.7 MB,
 *   server CPU per call equal within the run-to-run spread (docs/performance.md "RSS after 100 000
 *   calls"). Compilers held until the endpoints listen: start-up-footprint.ts.
 */
import { setFlagsFromString } from "node:v8";
import { holdOptimizingCompilers } from "./start-up-footprint.ts";

setFlagsFromString("--semi-space-growth-factor=1");
setFlagsFromString("--heap-growing-percent=20");
holdOptimizingCompilers({ leaveOff: ["turbofan"] });
