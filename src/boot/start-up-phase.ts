/**
 * The daemon's start-up phase: from startDaemon's first step until every endpoint listens (or the
 * start failed). Work that only makes later calls cheaper — loading native code (koffi and libc) for
 * a cache's change probe — is not done inside it: the start-up path reads what it needs directly
 * instead, and the probe is set up by the first use after it (docs/performance.md "Memory and start").
 *
 * Contract: outside a daemon's start (library callers, tests, after the endpoints listen)
 * {@link inStartUp} is false, so nothing changes for them. Phases nest (a count); each begin is
 * paired with one end, also on failure. Platform-neutral.
 */
let open = 0;

/** Marks the start of a start-up; pair with {@link endStartUp}. */
export function beginStartUp(): void {
  open++;
}

/** Ends the phase begun by {@link beginStartUp}. Extra calls are ignored. */
export function endStartUp(): void {
  if (open > 0) open--;
}

/** True while a daemon is starting (its endpoints do not listen yet). */
export function inStartUp(): boolean {
  return open > 0;
}
