/**
 * Host steps that outlived their call: a must-finish step still running when its call was answered
 * (deadline, cancel, step bound), or a stoppable one SIGKILL did not end. Kept in memory for the
 * life of the process, per device: while running, and once ended its end (exit status or signal,
 * time) — the last {@link KEPT_ENDED} ended ones, so the set is bounded. Read by the metric
 * `csi_proxy_late_host_steps` (metrics/late-host-steps.ts) and written as JSON to a status file
 * beside the sockets that `csi-proxyctl status` prints (late-steps-file.ts).
 */

export interface LateStep {
  /** The device the step writes (`/dev/loop3`), or "" when the step names none. */
  device: string;
  /** The command as shown in answers (argv, secrets masked). */
  command: string;
  pid: number | undefined;
  /** When its call was answered without it. */
  answeredAt: Date;
  /** Set once it ended: how (`exit status 0`, `killed by SIGKILL`) and when. */
  end?: { at: Date; how: string; ok: boolean };
}

/** Ended steps kept for status (the oldest dropped first). */
export const KEPT_ENDED = 32;

const steps: LateStep[] = [];
const listeners = new Set<() => void>();

/** Records `step` as outliving its call; returns the function that records its end. */
export function noteLateStep(step: Omit<LateStep, "end">): (how: string, ok: boolean) => void {
  const entry: LateStep = { ...step };
  steps.push(entry);
  changed();
  return (how, ok) => {
    entry.end = { at: new Date(), how, ok };
    const ended = steps.filter((s) => s.end);
    for (const old of ended.slice(0, Math.max(0, ended.length - KEPT_ENDED))) steps.splice(steps.indexOf(old), 1);
    changed();
  };
}

/** Every step kept: running ones and the last ended ones, oldest first. */
export function lateSteps(): readonly LateStep[] {
  return steps;
}

/** Running late steps per device (the metric's series). */
export function runningLateStepsByDevice(): Map<string, number> {
  const m = new Map<string, number>();
  for (const s of steps) if (!s.end) m.set(s.device, (m.get(s.device) ?? 0) + 1);
  return m;
}

/** Calls `fn` after every change (the status file's writer); returns the unsubscribe. */
export function onLateStepsChange(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function changed(): void {
  for (const fn of listeners) fn();
}
