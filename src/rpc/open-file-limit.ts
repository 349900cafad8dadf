import { readFileSync } from "node:fs";

/** RLIMIT_NOFILE's soft value of this process (Linux: /proc/self/limits), or undefined where it cannot be read (Windows). */
export function openFileLimit(): number | undefined {
  try {
    const line = readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith("Max open files"));
    const soft = line?.split(/\s{2,}/)[1];
    const n = Number(soft);
    return Number.isFinite(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}
