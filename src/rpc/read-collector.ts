/**
 * Socket reads are garbage once handled: every read of a connection is a new Buffer of up to
 * 64 KiB (Node allocates one per read for the sockets a `net.Server` accepts; the `onread` option
 * that reuses one buffer exists only for client sockets), and what the server keeps of it is
 * copied out (request-body.ts). V8 frees a read's memory only at its next young-generation
 * collection, which bulk request data — tens of KiB per read and almost no heap allocation — makes
 * late: it comes when the external memory passes V8's 64 MB soft limit, so a client streaming DATA
 * at wire speed made the process hold ~55 MB of dead reads (docs/reliability.md, "Transport limits").
 *
 * {@link noteSocketRead}: after every READ_COLLECT_BYTES read by the process (all connections of
 * all endpoints), one young-generation collection runs, synchronously (≈ 0.2 ms per MiB read,
 * measured; a small call costs nothing: 2 MiB of 100-byte calls is ~20 000 calls). Dead reads then stay
 * bounded by that many bytes plus what the collection leaves to its concurrent sweeper.
 *
 * Contract: never throws; nothing observable changes but memory. Without a gc function (V8 refused
 * --expose-gc) it does nothing.
 */
import { gcFunction } from "../util/gc-function.ts";
import { READ_COLLECT_BYTES } from "./transport-limits.ts";

let readSinceCollection = 0;

/** Counts `bytes` just read from a client socket; collects the young generation once READ_COLLECT_BYTES were read since the last time. */
export function noteSocketRead(bytes: number): void {
  readSinceCollection += bytes;
  if (readSinceCollection < READ_COLLECT_BYTES) return;
  readSinceCollection = 0;
  // Reached at the first collection, not when the module loads: its context is not made on the start path.
  const gc = gcFunction();
  if (!gc) return;
  try {
    gc({ type: "minor", execution: "sync" });
  } catch {
    // memory is only freed later; nothing observable
  }
}
