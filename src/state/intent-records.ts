/**
 * Intent records: before a destructive step starts, a record of it is written in a fixed, persistent,
 * node-wide directory (default {@link DEFAULT_INTENT_DIR}; flag -intent-dir), and removed once the
 * step's end is seen. A record left behind names a step whose end nobody saw — the daemon died, the
 * node lost power — which counts as not ended: a later call on that device finds it, and either
 * redoes the step (when the device shows only what that step could have written, saying so) or is
 * refused naming it. Never under /run (tmpfs, emptied by systemd at each restart).
 *
 * The directory must be a real directory owned by this process's user (root) that neither group nor
 * others may write (checked at each use, failing closed: a step whose record cannot be written is not
 * started). One JSON file per device (`<sha-256 of the device key>.json`, 0600), written to a
 * temporary file, fsynced and renamed; a device has at most one running destructive step (its lock).
 * Records name the device by what survives a reboot (device-identity.ts), the operation, what the
 * device held before, the tool's pid and start time (clock ticks since boot, /proc/<pid>/stat) and
 * the boot id, so that a reader can tell whether the tool may still run.
 */
import { constants as fsc, promises as fsp, readFileSync } from "node:fs";
import * as path from "node:path";
import { nodeCrypto } from "../util/node-crypto.ts";
import { Code, CsiProxyError } from "../errors.ts";

/** Default directory of the records: persistent and node-wide. */
export const DEFAULT_INTENT_DIR = "/var/lib/csi-proxy/intents";

export interface IntentRecord {
  /** The device by what survives a reboot: `wwid:…`, `serial:…`, `loop:<backing file>@<offset>`, or `dev:<maj:min>` (does not survive). */
  deviceKey: string;
  /** The device node when the step started. */
  devPath: string;
  /** What the step does: `write an empty GPT partition table`. */
  operation: string;
  /** The signature types the step can leave on the device (`gpt`, `PMBR`): what a redo may overwrite. */
  writes: string[];
  /** What the device held before the step. */
  before: string;
  command: string;
  pid: number | null;
  /** The tool's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), with {@link bootId}: tells a live tool from a reused pid. */
  pidStart: string | null;
  bootId: string;
  startedAt: string;
}

const bootIdNow = () => readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();

/** Field 22 of /proc/<pid>/stat (start time), or null when there is no such process. */
function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * Whether the record's tool may still run: same boot, and a process of its pid started at its start
 * time. A record without a pid (its writer died between writing it and spawning, or before the pid
 * was added) counts as not running: the reader holds the device's lock, which a running tool would
 * hold (it is handed the lock, node-locks.ts), so none of that step runs.
 */
export function toolMayRun(r: IntentRecord): boolean {
  if (r.bootId !== bootIdNow() || r.pid === null) return false;
  return startTimeOf(r.pid) === r.pidStart;
}

/** For messages: `intent record <file> (write … to /dev/loop3, pid 4242, started …, boot …)`. */
export function describeIntent(file: string, r: IntentRecord): string {
  return `intent record ${file} (${r.operation} on ${r.devPath} [${r.deviceKey}], ${r.command}, pid ${r.pid ?? "-"}, started ${r.startedAt}, its end never seen)`;
}

const refuse = (dir: string, why: string) =>
  new CsiProxyError(Code.FailedPrecondition, `cannot use the intent-record directory ${dir}: ${why}; no destructive step is started without its record`);

/** Creates `dir` (0700) when missing and checks it: a directory, no link, owned by this user, writable by nobody else. */
export async function checkIntentDir(dir: string): Promise<void> {
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 }).catch((e: unknown) => {
    throw refuse(dir, e instanceof Error ? e.message : String(e));
  });
  const st = await fsp.lstat(dir);
  if (!st.isDirectory()) throw refuse(dir, "it is not a directory");
  const uid = process.geteuid?.() ?? 0;
  if (st.uid !== uid) throw refuse(dir, `it is owned by uid ${st.uid}, not ${uid}`);
  if ((st.mode & 0o022) !== 0) throw refuse(dir, `group or others may write it (mode ${(st.mode & 0o777).toString(8)})`);
}

/** The records in one directory. */
export class IntentRecords {
  readonly dir: string;
  constructor(dir: string) {
    this.dir = dir;
  }

  fileOf(deviceKey: string): string {
    return path.join(this.dir, `${nodeCrypto().createHash("sha256").update(deviceKey).digest("hex").slice(0, 32)}.json`);
  }

  /** The record of `deviceKey`, or null. An unreadable record is an error (never taken for none). */
  async find(deviceKey: string): Promise<{ file: string; record: IntentRecord } | null> {
    const file = this.fileOf(deviceKey);
    const text = await fsp.readFile(file, "utf8").catch((e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") return null;
      throw new CsiProxyError(Code.FailedPrecondition, `cannot read the intent record ${file}: ${e.message}`);
    });
    if (text === null) return null;
    try {
      return { file, record: JSON.parse(text) as IntentRecord };
    } catch {
      throw new CsiProxyError(Code.FailedPrecondition, `the intent record ${file} is not valid JSON; look at it and remove it by hand once the device is known to be as it should`);
    }
  }

  /**
   * Runs `step` with its record written before it starts (a record that cannot be written: the step
   * is not started, FailedPrecondition) and removed once its end is seen, failed or not (the answer
   * says how it ended) — when the tool outlives the answer (a must-finish step past its call's
   * deadline), once the tool has exited. `step` gets the function to call with the tool's pid and
   * its exit once it was spawned (run-command.ts `onSpawn`).
   */
  async during<T>(intent: Omit<IntentRecord, "pid" | "pidStart" | "bootId" | "startedAt">, step: (spawned: (pid: number, exited: Promise<void>) => void) => Promise<T>): Promise<T> {
    await checkIntentDir(this.dir);
    const file = this.fileOf(intent.deviceKey);
    const record: IntentRecord = { ...intent, pid: null, pidStart: null, bootId: bootIdNow(), startedAt: new Date().toISOString() };
    try {
      await writeDurably(file, record);
    } catch (e) {
      throw refuse(this.dir, `writing ${file} failed: ${e instanceof Error ? e.message : String(e)}`);
    }
    let pidWritten: Promise<void> = Promise.resolve();
    let exited: Promise<void> | undefined;
    let ended = false;
    const spawned = (pid: number, exit: Promise<void>) => {
      exited = exit;
      void exit.then(() => (ended = true));
      // The record without the pid already says a step may run; with it, a reader can tell when it ended.
      pidWritten = writeDurably(file, { ...record, pid, pidStart: startTimeOf(pid) }).catch(() => {});
    };
    const clear = async () => {
      await pidWritten;
      await this.clear(file);
    };
    try {
      return await step(spawned);
    } finally {
      // The tool's end seen: now, or — when the call was answered while it runs — once it exits.
      if (exited && !ended) void exited.then(clear);
      else await clear();
    }
  }

  /** Removes a record whose step's end was seen (or that a redo replaced). */
  async clear(file: string): Promise<void> {
    await fsp.rm(file, { force: true });
  }
}

async function writeDurably(file: string, record: IntentRecord): Promise<void> {
  const tmp = `${file}.tmp`;
  const h = await fsp.open(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | fsc.O_NOFOLLOW, 0o600);
  try {
    await h.writeFile(JSON.stringify(record));
    await h.sync();
  } finally {
    await h.close();
  }
  await fsp.rename(tmp, file);
  const d = await fsp.open(path.dirname(file), fsc.O_RDONLY);
  await d.sync().finally(() => d.close());
}
