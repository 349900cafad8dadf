import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";

/**
 * Starts a long-lived helper process (the PowerShell worker pool's workers) with the same rules as
 * runCommand: `file` + an argv array, `shell: false`, `windowsHide: true`, so nothing is ever
 * parsed by a shell. The caller owns the child: it speaks a line protocol over stdin/stdout and
 * kills it. Besides run-command.ts, this is the only place the daemon spawns processes.
 */
export function spawnWorker(file: string, args: readonly string[], options: { env?: Record<string, string> } = {}): ChildProcessWithoutNullStreams {
  return spawn(file, args, {
    shell: false,
    windowsHide: true,
    env: { ...process.env, ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
}
