/**
 * Process-wide count of calls whose handler (or the decompression before it) runs, over every
 * connection of every endpoint, and one listener told each time the count falls to zero. The
 * serving layer (unary-call.ts) reports; src/boot/quiet-footprint.ts listens, to give back memory
 * once the server is quiet. O(1) per call; the listener must be cheap and must not throw.
 */
let running = 0;
let started = 0;
let quietListener: (() => void) | undefined;

/** A call's handler (or decompression) started. */
export function callStarted(): void {
  running++;
  started++;
}

/** A call's handler (or decompression) ended; at zero the quiet listener runs. */
export function callEnded(): void {
  if (--running === 0) quietListener?.();
}

/** Calls running now. */
export const runningCalls = (): number => running;

/** Calls started since the process began (a generation counter: unchanged means no call started). */
export const callsStarted = (): number => started;

/** Sets (or clears, with undefined) the listener told when no call runs any more. */
export function onCallsQuiet(listener: (() => void) | undefined): void {
  quietListener = listener;
}
