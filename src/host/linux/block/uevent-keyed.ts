/**
 * A value read from the kernel's block device state, kept while the kernel has sent no uevent since
 * it was read. The key is `/sys/kernel/uevent_seqnum`: the kernel counts every uevent it sends, and
 * sends one after it applied each of these changes (checked on this kernel with `udevadm monitor -k`
 * and by `uevent-keyed.test.ts` on real loop devices): a block device or partition added or removed
 * (BLKPG add/delete, a partition re-read), a loop device attached or detached, its capacity changed
 * (`losetup -c`, to and from 0), its offset or size limit changed (LOOP_SET_STATUS). Changes that
 * send none, and so must never be answered from a value kept here: a partition resized in place
 * (BLKPG_RESIZE_PARTITION, `resizepart`), anything written to a device (partition tables, PARTUUIDs,
 * filesystems), a loop device's backing file renamed or deleted.
 *
 * Every uevent on the node (network devices too) makes the next use read again: a kept value is
 * never older than the last uevent. The seqnum is read before the value is built, so a change during
 * the build makes the next use's seqnum differ. One value per instance; for answers only — a write's
 * verification asks with `fresh` (then the value is read again, and kept for the answers after it).
 * Without a readable seqnum (no sysfs) every use reads again.
 */
import { readFileSync } from "node:fs";

/** The kernel's count of uevents sent. */
export const UEVENT_SEQNUM = "/sys/kernel/uevent_seqnum";

/** The current uevent count as text, or null when it cannot be read (one small sysfs read, in memory). */
export function ueventSeqnum(): string | null {
  try {
    return readFileSync(UEVENT_SEQNUM, "utf8").trim() || null;
  } catch {
    return null;
  }
}

export class UeventKeyed<T> {
  #kept: { seqnum: string; value: T } | undefined;
  readonly #seqnum: () => string | null;

  /** `seqnum` reads the key (injected for tests; default {@link ueventSeqnum}). */
  constructor(seqnum: () => string | null = ueventSeqnum) {
    this.#seqnum = seqnum;
  }

  /**
   * The kept value when no uevent was sent since it was built and `fresh` is not set; otherwise
   * `build()`'s, kept. A promise that rejects is dropped (the next use builds again).
   */
  get(build: () => T, fresh = false): T {
    const seqnum = this.#seqnum();
    if (!fresh && seqnum !== null && this.#kept?.seqnum === seqnum) return this.#kept.value;
    const value = build();
    if (seqnum === null) return value;
    const kept = { seqnum, value };
    this.#kept = kept;
    if (value instanceof Promise) {
      value.catch(() => {
        if (this.#kept === kept) this.#kept = undefined;
      });
    }
    return value;
  }
}
