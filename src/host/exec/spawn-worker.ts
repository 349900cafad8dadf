import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";

/**
 * Starts a long-lived helper process (the PowerShell worker pool's workers) with the same rules as
 * runCommand: `file` + an argv array, `shell: false`, `windowsHide: true`, so nothing is ever
 * parsed by a shell. The caller owns the child: it speaks a line protocol over stdin/stdout and
 * kills it. Besides run-command.ts, this is the only place the daemon spawns processes.
 *
 * On Windows the worker is spawned `detached`: libuv puts every other child in its process-wide job
 * object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, so Windows kills it when the daemon exits or
 * crashes — a worker in the middle of a Format or Resize included. Detached (DETACHED_PROCESS |
 * CREATE_NEW_PROCESS_GROUP, not assigned to that job), it outlives the daemon only as long as its
 * current op: its stdin closes with the daemon, and the worker script ends at end of input. It also
 * gets no console Ctrl+C/Ctrl+Break meant for the daemon. A daemon that itself runs in a job that
 * forbids breakaway still takes its children with it (Windows rule, not ours). On Linux (tests) the
 * child stays in the daemon's session and process group.
 */
export function spawnWorker(file: string, args: readonly string[], options: { env?: Record<string, string> } = {}): ChildProcessWithoutNullStreams {
  return spawn(file, args, {
    shell: false,
    windowsHide: true,
    detached: process.platform === "win32",
    env: { ...process.env, ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
}
