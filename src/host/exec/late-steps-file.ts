/**
 * The status file of host steps that outlived their call (late-steps.ts), for `csi-proxyctl status`:
 * `<socket-dir>/csi-proxy-late-steps.json`, rewritten (temporary file + rename, 0600) at each change
 * by the daemon, read by the command line. Bounded as the record is (running steps plus the last
 * KEPT_ENDED ended ones, late-steps.ts). Linux only (the socket dir); a failed write is logged, never an error
 * of a call.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import * as path from "node:path";
import { lateSteps, onLateStepsChange } from "./late-steps.ts";

export const LATE_STEPS_FILE = "csi-proxy-late-steps.json";

/** One step as written to the file (dates as ISO strings). */
export interface LateStepLine {
  device: string;
  command: string;
  pid: number | null;
  answeredAt: string;
  end: { at: string; how: string; ok: boolean } | null;
}

/** Keeps `<dir>/csi-proxy-late-steps.json` up to date from now on; returns the stop (resolves once the last write is done). Writes never overlap. */
export function keepLateStepsFile(dir: string, onError: (message: string) => void): () => Promise<void> {
  const file = path.join(dir, LATE_STEPS_FILE);
  let writing: Promise<void> = Promise.resolve();
  const unsubscribe = onLateStepsChange(() => {
    const lines: LateStepLine[] = lateSteps().map((s) => ({
      device: s.device,
      command: s.command,
      pid: s.pid ?? null,
      answeredAt: s.answeredAt.toISOString(),
      end: s.end ? { at: s.end.at.toISOString(), how: s.end.how, ok: s.end.ok } : null,
    }));
    const write = async () => {
      await writeFile(`${file}.tmp`, JSON.stringify(lines), { mode: 0o600 });
      await rename(`${file}.tmp`, file);
    };
    writing = writing.then(() =>
      write().catch((e: unknown) => {
        try {
          onError(`cannot write ${file}: ${e instanceof Error ? e.message : String(e)}`);
        } catch {
          // a failing logger must not stop later writes
        }
      }),
    );
  });
  return async () => {
    unsubscribe();
    await writing;
  };
}

/** The lines `csi-proxyctl status` prints for the file in `dir` (none when there is none). */
export async function describeLateSteps(dir: string): Promise<string[]> {
  const text = await readFile(path.join(dir, LATE_STEPS_FILE), "utf8").catch(() => "[]");
  let lines: LateStepLine[];
  try {
    lines = JSON.parse(text) as LateStepLine[];
  } catch {
    return [`late-step status file ${path.join(dir, LATE_STEPS_FILE)} is unreadable`];
  }
  return lines.map((s) =>
    s.end
      ? `ended    ${s.device || "-"} ${s.command} (pid ${s.pid}): outlived its call (answered ${s.answeredAt}), ended ${s.end.at} with ${s.end.how}`
      : `running  ${s.device || "-"} ${s.command} (pid ${s.pid}): outlived its call (answered ${s.answeredAt}); the device stays locked until it ends`,
  );
}
