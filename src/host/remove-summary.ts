import * as fs from "node:fs/promises";
import { Code, CsiProxyError } from "../errors.ts";

/** Names of what is left quoted in a failed recursive delete's message. */
export const NAMES_SHOWN = 3;
/** Entries of the named directory counted for a failed recursive delete's message (more: "at least"). */
export const COUNT_LIMIT = 100_000;

/**
 * "N entries left in it (a, b, c, …)" for the directory at `dirPath` (a path the caller may use now:
 * `/proc/self/fd/N` inside its owner's use, or a Windows path): counted up to {@link COUNT_LIMIT},
 * first {@link NAMES_SHOWN} names. Never throws: an unreadable directory is said so.
 */
export async function leftInDir(dirPath: string): Promise<string> {
  try {
    const d = await fs.opendir(dirPath);
    let n = 0;
    const names: string[] = [];
    try {
      for (let e = await d.read(); e !== null && n < COUNT_LIMIT; e = await d.read()) {
        if (names.length < NAMES_SHOWN) names.push(e.name);
        n++;
      }
    } finally {
      await d.close().catch(() => {});
    }
    const count = n >= COUNT_LIMIT ? `at least ${n}` : `${n}`;
    return n === 0 ? "it is empty" : `${count} ${n === 1 ? "entry" : "entries"} left in it (${names.join(", ")}${n > names.length ? ", …" : ""})`;
  } catch {
    return "what is left in it could not be listed";
  }
}

/** "removed N entries below P; P is still there, <left>" — what a stopped recursive delete did and did not remove. */
export function removeSummary(removed: number, p: string, selfLeft: boolean, left: string): string {
  return `removed ${removed} ${removed === 1 ? "entry" : "entries"} below ${p}; ${selfLeft ? `${p} is still there, ` : ""}${left}`;
}

/** The failure `err` of `what p` as the call's answer: its code (Internal when it has none) and the summary. */
export function removeFailure(err: unknown, what: string, p: string, summary: string): CsiProxyError {
  const code = err instanceof CsiProxyError ? err.code : Code.Internal;
  return new CsiProxyError(code, `${what} ${p}: ${(err as Error)?.message ?? String(err)}; ${summary}`, { cause: err });
}
