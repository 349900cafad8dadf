/**
 * One block snapshot shared by the reads of one operation, never by a write's verification.
 *
 * A service runs each operation on a disk (under that disk's lock) in a session
 * ({@link SnapshotSessions.run}); inside it the host's reads ({@link SnapshotSessions.read}) share the
 * snapshot taken at the first read — per kind: every disk, or one disk by number — so one call reads
 * the host once instead of once per question. Writes never use it: each verifies on a snapshot of its
 * own ({@link SnapshotSessions.fresh}), taken right before it acts, and every write (and every other
 * change a host makes) ends the sharing ({@link SnapshotSessions.changed}), so reads after it see the
 * change. Outside a session every read takes a new snapshot. A failed snapshot is not reused.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { DevNumber } from "./block-types.ts";
import type { BlockSnapshot, SnapshotOptions } from "./block-snapshot.ts";

type Store = Map<string, Promise<BlockSnapshot>>;

export class SnapshotSessions {
  readonly #als = new AsyncLocalStorage<Store>();
  readonly #take: (dev?: DevNumber, options?: SnapshotOptions) => Promise<BlockSnapshot>;

  /** `take` reads the host: every disk, or (with `dev`) only that disk; `options` say what more a write's reading needs. */
  constructor(take: (dev?: DevNumber, options?: SnapshotOptions) => Promise<BlockSnapshot>) {
    this.#take = take;
  }

  /** Runs `fn` as one session (a nested call starts a session of its own). */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.#als.run(new Map(), fn);
  }

  /**
   * For answers and decisions that a write re-verifies: the session's snapshot of this kind, else a new
   * one. `focus`: a snapshot taken with `pickDisk` (block-snapshot.ts), shared only by the reads
   * that give the same `key`.
   */
  read(dev?: DevNumber, focus?: { key: string; pickDisk: NonNullable<SnapshotOptions["pickDisk"]> }): Promise<BlockSnapshot> {
    const options = focus ? { pickDisk: focus.pickDisk } : undefined;
    const store = this.#als.getStore();
    if (!store) return this.#take(dev, options);
    const key = focus ? `focus ${focus.key}` : dev ? `${dev.major}:${dev.minor}` : "all";
    let snap = store.get(key);
    if (!snap) {
      const taken = this.#take(dev, options);
      snap = taken;
      store.set(key, taken);
      taken.catch(() => {
        if (store.get(key) === taken) store.delete(key);
      });
    }
    return snap;
  }

  /** For a write's verification: always a new snapshot, never shared, every fact read again (`fresh`); the session's reads after it are new too. */
  fresh(dev?: DevNumber, options?: SnapshotOptions): Promise<BlockSnapshot> {
    this.changed();
    return this.#take(dev, { ...options, fresh: true });
  }

  /** Runs a write: the sharing ends before it starts and again after it ends (whether it succeeded or not). */
  async write<T>(fn: () => Promise<T>): Promise<T> {
    this.changed();
    try {
      return await fn();
    } finally {
      this.changed();
    }
  }

  /** The host changed (or is about to): the session's next read takes a new snapshot. */
  changed(): void {
    this.#als.getStore()?.clear();
  }
}
