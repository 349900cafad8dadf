/**
 * No way into the daemon but its API: SIGUSR1 (and `process._debugProcess`, which sends it) must never
 * open Node's inspector — in a root daemon that is code execution for anyone who reaches 127.0.0.1.
 * Imported first by src/main.ts, so it runs before any other module of the program.
 *
 *   - Linux: a JavaScript SIGUSR1 listener takes the signal from the inspector (measured on Node 20.20
 *     and 24.21: no port opens, the listener runs). The listener reopens the log file, like SIGHUP.
 *     The window left is the process's first milliseconds, before this module is evaluated.
 *   - Windows: nothing here; the exe is built with `--disable-sigusr1` in its embedded options
 *     (scripts/build-exe.ts, `seaConfig`), which also shuts `process._debugProcess`.
 *
 * test/integration/no-inspector.test.ts signals the daemon and checks that no port listens.
 */

/** What the next SIGUSR1 does; set by the server once its log exists. */
let onSigusr1: () => void = () => {};

/** Sets what SIGUSR1 does (the inspector never starts on it either way). */
export function setSigusr1Action(action: () => void): void {
  onSigusr1 = action;
}

if (process.platform !== "win32") process.on("SIGUSR1", () => onSigusr1());
