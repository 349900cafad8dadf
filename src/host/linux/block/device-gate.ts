/**
 * Admission of block I/O per whole disk, so that a disk whose reads never return (a dead iSCSI/FC
 * path, a hung virtual disk) cannot take the threads every other call needs. Partition-table reads,
 * libblkid probes and signature listings (block-reads.ts, signature-probe.ts) run through
 * {@link DeviceGate.run}, keyed by the whole disk the device node belongs to: a partition counts
 * against its disk, a loop device whose backing file is another block device against that device's
 * disk ({@link wholeDiskOf}).
 *
 * The keys live in the daemon's one mount gate (mount-gate.ts, {@link DEVICE_KEY_PREFIX}): a disk has
 * the same bounds as a mount (3 operations at once, the rest waiting in a bounded queue at most 5 s),
 * the same watchdog (a disk whose operations have not returned for 5 s is "not responding": its calls
 * fail Unavailable at once, naming it, until one returns or the probe — one 4 KiB read at its start —
 * does), and the same `total` budget below libuv's pool, shared with the path operations. A slot is
 * held until the operation's syscall returns, whatever the call does meanwhile.
 *
 * A call waits at most {@link GIVE_UP_AFTER_MS} for an admitted operation: then it fails Unavailable
 * (the operation goes on holding its slot). A read given up on or refused is an error for the call,
 * never an empty fact: a table read's error becomes the disk's tableError (sysfs-block.ts), a probe's
 * error is the call's answer.
 */
import { readFileSync, realpathSync } from "node:fs";
import * as path from "node:path";
import { Code, CsiProxyError } from "../../../errors.ts";
import { DEVICE_KEY_PREFIX, NOT_RESPONDING_AFTER_MS, type MountGate } from "../../mount-gate.ts";

/** How long a call waits for an admitted block read before giving up on it (ms): the watchdog's threshold. */
export const GIVE_UP_AFTER_MS = NOT_RESPONDING_AFTER_MS;
/** Loop devices followed down to the disk they are stacked on. */
const MAX_STACK = 8;

/** How long a listing across disks waits for a disk whose oldest read has gone unanswered (ms): longer, and the disk is skipped (an error for it), never waited for. */
export const LISTING_PATIENCE_MS = 500;

export interface DeviceGate {
  /**
   * Runs `op` (block I/O on `devPath`) under the gate of its whole disk (see the module comment).
   * `listing`: a read for a listing across disks, refused at once (Unavailable) when the disk has had a
   * read unanswered for {@link LISTING_PATIENCE_MS}, and given up on after that long, so a listing
   * never waits for one stuck disk.
   */
  run<T>(devPath: string, what: string, op: () => Promise<T>, options?: { listing?: boolean }): Promise<T>;
}

const text = (file: string) => {
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    return "";
  }
};

/**
 * The whole disk `devPath` belongs to, as a device node path: a partition's disk, a loop device's
 * backing block device's disk (followed down {@link MAX_STACK} loops), else the device itself. Read
 * from sysfs synchronously (generated in memory, never waits for a device).
 */
export function wholeDiskOf(devPath: string, depth = 0): string {
  let name: string;
  try {
    name = path.basename(realpathSync(devPath));
  } catch {
    return devPath;
  }
  let sys: string;
  try {
    sys = realpathSync(`/sys/class/block/${name}`);
  } catch {
    return devPath;
  }
  const disk = text(path.join(sys, "partition")) ? path.basename(path.dirname(sys)) : name;
  const backing = text(`/sys/block/${disk}/loop/backing_file`);
  if (depth < MAX_STACK && backing.startsWith("/dev/")) return wholeDiskOf(backing, depth + 1);
  return `/dev/${disk}`;
}

/** The device gate over `gate`'s keys; `bounds` replace the defaults (tests). */
export function createDeviceGate(
  gate: Pick<MountGate, "runKey" | "stalledMs">,
  bounds: { giveUpAfterMs?: number; listingPatienceMs?: number; diskOf?: (devPath: string) => string } = {},
): DeviceGate {
  const giveUp = bounds.giveUpAfterMs ?? GIVE_UP_AFTER_MS;
  const listingPatience = bounds.listingPatienceMs ?? LISTING_PATIENCE_MS;
  const diskOf = bounds.diskOf ?? ((p: string) => wholeDiskOf(p));
  return {
    run(devPath, what, op, options = {}) {
      const disk = diskOf(devPath);
      const key = `${DEVICE_KEY_PREFIX}${disk}`;
      const patience = options.listing ? listingPatience : giveUp;
      const stalled = gate.stalledMs(key);
      if (options.listing && stalled >= patience) {
        return Promise.reject(new CsiProxyError(Code.Unavailable, `${what} of ${devPath} skipped: disk ${disk} has not answered a read for ${(stalled / 1000).toFixed(1)} s`));
      }
      const admitted = gate.runKey(key, op);
      // Given up on, its later end is nobody's answer (its slot is released by the gate then).
      admitted.catch(() => {});
      let timer: NodeJS.Timeout | undefined;
      const givenUp = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new CsiProxyError(Code.Unavailable, `${what} of ${devPath} has not returned for ${(patience / 1000).toFixed(1)} s: disk ${disk} is not answering (the read goes on; calls on the disk fail until it answers)`)),
          patience,
        );
        timer.unref();
      });
      return Promise.race([admitted, givenUp]).finally(() => clearTimeout(timer));
    },
  };
}
