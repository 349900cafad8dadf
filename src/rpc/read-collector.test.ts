// read-collector.ts: socket reads are garbage once handled, and V8 collects them late (only when its
// external memory passes 64 MB) unless the young generation is collected every READ_COLLECT_BYTES.
// Reads stand in here as fresh 64 KiB ArrayBuffers dropped at once, as a socket's are.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { noteSocketRead } from "./read-collector.ts";

const MiB = 1024 * 1024;

/** Drops `total` bytes of 64 KiB reads, telling `note` about each; the peak of process.memoryUsage().arrayBuffers above the start, bytes. */
function deadReads(total: number, note: (bytes: number) => void): number {
  const start = process.memoryUsage().arrayBuffers;
  let peak = 0;
  let sink = 0;
  for (let read = 0; read < total; read += 64 * 1024) {
    const chunk = Buffer.allocUnsafeSlow(64 * 1024);
    chunk[0] = read & 0xff;
    sink += chunk[0];
    note(chunk.length);
    peak = Math.max(peak, process.memoryUsage().arrayBuffers - start);
  }
  assert.ok(sink >= 0);
  return peak;
}

describe("dead socket reads", () => {
  it("stay within 8 MiB (collected every 2 MiB) when every read is noted; pile up without it", () => {
    const uncollected = deadReads(40 * MiB, () => {});
    const collected = deadReads(40 * MiB, noteSocketRead);
    console.log(`# dead reads' peak: ${(uncollected / MiB).toFixed(1)} MiB without the collection, ${(collected / MiB).toFixed(1)} MiB with it`);
    assert.ok(uncollected > 16 * MiB, `the baseline did not pile up (${uncollected} bytes): the test shows nothing here`);
    assert.ok(collected <= 8 * MiB, `${collected} bytes of dead reads held`);
  });
});
