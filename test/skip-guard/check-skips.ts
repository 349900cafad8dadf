/**
 * Reads the skips `skip-reporter.ts` recorded and, when the run is CI's (CI=true, as root), fails
 * (exit 1) on any skip not on `allowed-skips.ts`, listing each with its reason. Elsewhere it only
 * reports the count: a developer without root or Wine skips suites legitimately.
 */
import { readFileSync } from "node:fs";
import { allowedSkips, type AllowedSkip } from "./allowed-skips.ts";

export interface Skip {
  file: string;
  name: string;
  reason: string;
}

export function parseSkips(text: string): Skip[] {
  return text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as Skip);
}

/** The skips not on the list. */
export function unexpectedSkips(skips: Skip[], allowed: AllowedSkip[]): Skip[] {
  return skips.filter((s) => !allowed.some((a) => a.file === s.file && a.name === s.name && (a.reason === undefined || a.reason.test(s.reason))));
}

/** True when the rule applies: CI's run as root (where the pretest installed every tool). */
export function enforced(env: NodeJS.ProcessEnv, uid: number | undefined): boolean {
  return env.CI === "true" && uid === 0;
}

if (import.meta.main) {
  const file = process.argv[2] ?? ".test-skips.jsonl";
  const skips = parseSkips(readFileSync(file, "utf8"));
  const bad = unexpectedSkips(skips, allowedSkips);
  if (enforced(process.env, process.getuid?.()) && bad.length > 0) {
    console.error(`skip guard: ${bad.length} test(s) skipped in CI that are not on test/skip-guard/allowed-skips.ts:`);
    for (const s of bad) console.error(`  ${s.file}: ${JSON.stringify(s.name)} — ${s.reason || "(no reason given)"}`);
    process.exit(1);
  }
  console.log(`skip guard: ${skips.length} skipped (${skips.length - bad.length} on the allowed list)${enforced(process.env, process.getuid?.()) ? "" : "; not enforced outside CI as root"}`);
}
