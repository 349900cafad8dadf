/**
 * Who else wrote a device while one of our writing tools (mkfs, resize2fs, sfdisk) ran on it. The
 * checks before the tool see who holds the device then; a process that opens it afterwards, while
 * the tool runs, races it. Two ways to see one:
 *
 * - fanotify (kernel/fanotify.ts) on the device node and on the nodes of loop devices stacked on it
 *   (the loop driver's own writes to the device below raise no event: measured, docs/reliability.md
 *   "What no watch sees"): every write (FAN_MODIFY) and every last close of a descriptor opened for
 *   writing (FAN_CLOSE_WRITE), with the writer's pid. Events of the tool itself and of its children
 *   are not counted (the tool's pid comes from runCommand's onSpawn). The group is polled every
 *   {@link POLL_MS} while the tool runs (a non-blocking read: the event loop never waits on it) and
 *   drained once more after the tool ended, so a writer that exits meanwhile is still named by the
 *   command read then.
 * - the openers verdict again after the tool (device-openers.ts): a process holding the node open for
 *   writing then, or a loop device stacked on it that was not there before.
 *
 * Where fanotify cannot be had (no CAP_SYS_ADMIN, a kernel without it), only the second, and a warning
 * line says so. A tool that failed is answered as its failure (the watch adds nothing); a tool that
 * succeeded while another process wrote is answered Aborted naming the processes: the result may be
 * damaged and the writer's data lost.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { CsiProxyError, Code } from "../../../errors.ts";
import { FAN_MODIFY, openFanotify, type FanotifyWatch } from "../kernel/fanotify.ts";
import { decodeDev } from "./block-parsers.ts";
import { scanDeviceOpeners } from "./device-openers.ts";
import type { DevNumber } from "./block-types.ts";
import { runInCall } from "../../../util/call-scope.ts";

/** Milliseconds between two reads of the fanotify queue while the tool runs (each read copies what is queued, never waits). */
export const POLL_MS = 20;

/** What the watch is about, for its answer. */
export interface WatchedStep {
  /** The device the tool writes (e.g. /dev/sdb1). */
  devPath: string;
  /** What the tool does, e.g. "creating the ext4 filesystem". */
  operation: string;
  /** What a racing write may have damaged, e.g. "the new filesystem may be damaged". */
  damage: string;
}

export interface WatchLog {
  warning(msg: string): void;
}

const stderrLog: WatchLog = { warning: (msg) => process.stderr.write(`${msg}\n`) };

/** A process that wrote (or opened for writing) while the tool ran. */
interface Writer {
  pid: number;
  command: string;
  how: string;
}

const devOf = (p: string): DevNumber | null => {
  try {
    const st = statSync(p, { bigint: true });
    return st.isBlockDevice() ? decodeDev(st.rdev) : null;
  } catch {
    return null;
  }
};

const same = (a: DevNumber | null, b: DevNumber | null) => !!a && !!b && a.major === b.major && a.minor === b.minor;

const commOf = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "";
  }
};

const parentOf = (pid: number): number | null => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return null;
  }
};

/** `pid` is the tool or a descendant of it (while it can still be read in /proc). */
function ofTool(pid: number, tool: number | undefined): boolean {
  if (tool === undefined) return false;
  for (let p: number | null = pid, hops = 0; p && p > 1 && hops < 64; p = parentOf(p), hops++) if (p === tool) return true;
  return false;
}

/** Loop devices whose backing object is the block device `dev` (sysfs; a loop on a file is not one). */
export function loopsStackedOn(dev: DevNumber): string[] {
  const found: string[] = [];
  let names: string[];
  try {
    names = readdirSync("/sys/block").filter((n) => n.startsWith("loop"));
  } catch {
    return found;
  }
  for (const name of names) {
    let backing: string;
    try {
      backing = readFileSync(`/sys/block/${name}/loop/backing_file`, "utf8").trim();
    } catch {
      continue;
    }
    if (backing.startsWith("/dev/") && same(devOf(backing), dev)) found.push(`/dev/${name}`);
  }
  return found;
}

/**
 * Runs `run` (the tool; it passes `onSpawn` to runCommand) with the device watched for other writers.
 * Resolves with its result when nobody else wrote; Aborted naming the writers when someone did.
 */
export async function withWriterWatch<T>(step: WatchedStep, run: (onSpawn: (pid: number) => void) => Promise<T>, log: WatchLog = stderrLog): Promise<T> {
  const dev = devOf(step.devPath);
  const stackedBefore = dev ? loopsStackedOn(dev) : [];
  let watch: FanotifyWatch | null = null;
  let unwatched = "";
  try {
    watch = await openFanotify([step.devPath, ...stackedBefore]);
  } catch (err) {
    unwatched = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    log.warning(`${step.operation} on ${step.devPath}: fanotify cannot be had here (${unwatched}); writers during the step are looked for only among the device's openers after it`);
  }
  let toolPid: number | undefined;
  const seen = new Map<number, Writer>();
  const note = (pid: number, how: string) => {
    if (pid === process.pid || seen.has(pid) || ofTool(pid, toolPid)) return;
    seen.set(pid, { pid, command: commOf(pid), how });
  };
  /** Set when reading the group failed: from then on the watch says nothing (the openers verdict still runs). */
  let lost = "";
  const poll = () => {
    if (lost || !watch) return;
    try {
      for (const e of watch.drain()) note(e.pid, e.mask & FAN_MODIFY ? "wrote to it" : "opened it for writing");
    } catch (err) {
      lost = `; reading fanotify's events failed (${(err as Error).message}), so other writers may be unnamed`;
    }
  };
  const timer = watch ? setInterval(poll, POLL_MS) : undefined;
  let result: T;
  try {
    result = await run((pid) => (toolPid = pid));
    poll();
  } finally {
    clearInterval(timer);
    watch?.close();
  }
  // Events of the tool's own pid are left out even once it has exited (its children only while /proc still shows them).
  if (toolPid !== undefined) seen.delete(toolPid);
  const nodes = [step.devPath, ...stackedBefore].map(devOf).filter((d): d is DevNumber => d !== null);
  // Outside the call's cancellation: the tool has changed the device, so a cancel must not be answered
  // as "nothing was changed" by the scan; the scan is bounded by its own deadline (SCAN_DEADLINE_MS).
  const openers = await runInCall(undefined, () => scanDeviceOpeners(nodes)).catch((err: Error) => {
    throw new CsiProxyError(Code.Unavailable, `${step.operation} on ${step.devPath} finished, but who else holds the device could not be told afterwards: ${err.message}`, { cause: err });
  });
  for (const o of openers) {
    if (o.access === "read-write" && o.pid !== toolPid && !seen.has(o.pid)) seen.set(o.pid, { pid: o.pid, command: o.command, how: "holds it open for writing" });
  }
  const stackedNow = dev ? loopsStackedOn(dev).filter((l) => !stackedBefore.includes(l)) : [];
  const overflow = (watch?.overflowed ? "; fanotify dropped events (its queue overflowed), so other writers may be unnamed" : "") + lost;
  if (seen.size === 0 && stackedNow.length === 0) {
    if (overflow) log.warning(`${step.operation} on ${step.devPath}${overflow}`);
    return result;
  }
  const who = [
    ...[...seen.values()].map((w) => `pid ${w.pid} (${w.command || "command unknown"}) ${w.how}`),
    ...stackedNow.map((l) => `loop device ${l} was set up on it`),
  ].join(", ");
  throw new CsiProxyError(
    Code.Aborted,
    `${step.operation} on ${step.devPath} finished while another process wrote to the device: ${who}; ${step.damage}, and what the writer wrote may be lost${overflow}`,
  );
}
