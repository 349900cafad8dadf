/**
 * Watches for descriptors that Node closes on garbage collection ("Warning: Closing file descriptor N
 * on garbage collection"): a FileHandle its owner dropped without closing. `check()` forces full
 * collections (exposing `gc` through V8 flags when the process was not started with --expose-gc),
 * lets the finalizers' warnings through, stops watching and answers the warnings seen since `watch`.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { setTimeout as sleep } from "node:timers/promises";

const GC_CLOSE = /Closing file descriptor \d+ on garbage collection/;

function fullGc(): void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed();
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

export function watchGcClosedFds(): { check(): Promise<string[]> } {
  const seen: string[] = [];
  const onWarning = (w: Error) => {
    if (GC_CLOSE.test(w.message)) seen.push(w.message);
  };
  process.on("warning", onWarning);
  return {
    async check() {
      for (let i = 0; i < 3; i++) {
        fullGc();
        await sleep(20);
      }
      process.off("warning", onWarning);
      return seen;
    },
  };
}
