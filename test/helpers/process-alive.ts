/** Whether a process exists (signal 0): true for a live or zombie process, false once it is reaped or was never there. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
