/**
 * Serialises async work per key: calls with the same key run one after another in call order;
 * calls with different keys run concurrently. A failing call does not block the ones queued after it.
 * Keys with nothing queued are forgotten, so the map never grows with idle keys.
 */
export interface KeyedMutex {
  /** Runs `fn` once every earlier call with the same key has settled; resolves or rejects as `fn` does. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /** Runs `fn` holding every key in `keys` (acquired in sorted order, so two multi-key calls cannot deadlock). */
  runAll<T>(keys: readonly string[], fn: () => Promise<T>): Promise<T>;
  /** Keys currently held or waited for (for tests and diagnostics). */
  readonly size: number;
}

export function createKeyedMutex(): KeyedMutex {
  /** The tail of each key's queue: settles when the last queued call has finished. */
  const tails = new Map<string, Promise<void>>();

  function acquire(key: string): Promise<() => void> {
    const previous = tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    tails.set(key, tail);
    return previous.then(() => () => {
      release();
      if (tails.get(key) === tail) tails.delete(key);
    });
  }

  async function runAll<T>(keys: readonly string[], fn: () => Promise<T>): Promise<T> {
    const sorted = [...new Set(keys)].sort();
    const releases: (() => void)[] = [];
    try {
      for (const key of sorted) releases.push(await acquire(key));
      return await fn();
    } finally {
      for (const release of releases.reverse()) release();
    }
  }

  return {
    run: (key, fn) => runAll([key], fn),
    runAll,
    get size() {
      return tails.size;
    },
  };
}
