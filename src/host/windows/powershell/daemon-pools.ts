/**
 * The PowerShell worker pools the daemon owns (compose/windows.ts registers them), closed by the
 * daemon's graceful stop once its endpoints have answered (compose.ts releaseHostResources): idle
 * workers are ended, and a worker running a Format or Resize is never killed — the stop waits for it
 * to answer and exit, at most {@link HELD_CLOSE_WAIT_MS} (15 min, the op's own timeout), logging what
 * it waits for and how long it took. A worker still running past that bound is left to finish on its
 * own: the workers are spawned outside the daemon's kill-on-close job on Windows
 * (host/exec/spawn-worker.ts), so the daemon's exit does not end it.
 */
import { HELD_CLOSE_WAIT_MS, type PowerShellPool } from "./powershell-pool.ts";

const pools = new Set<PowerShellPool>();

/** Registers a pool to be closed by {@link closeDaemonPools}. Returns it. */
export function stopsWithDaemon(pool: PowerShellPool): PowerShellPool {
  pools.add(pool);
  return pool;
}

/**
 * Closes every registered pool (idempotent: each is forgotten once closed), waiting for the workers
 * running a held Format/Resize to finish and exit, at most {@link HELD_CLOSE_WAIT_MS}. `log` gets a
 * warning per pool that has any (which workers, the bound) and one line when they are done.
 */
export async function closeDaemonPools(log: { warning(msg: string): void; info(msg: string): void }): Promise<void> {
  const closing = [...pools];
  pools.clear();
  await Promise.all(
    closing.map(async (pool) => {
      const holding = pool.holding;
      if (holding.length > 0) log.warning(`Waiting for PowerShell worker ${holding.join(", ")}: a Format or Resize handed to Windows is never cut short (at most ${HELD_CLOSE_WAIT_MS / 60_000} min)`);
      const t0 = Date.now();
      await pool.close();
      const still = pool.holding;
      if (still.length > 0) log.warning(`Exiting while PowerShell worker ${still.join(", ")} still runs: it finishes on its own and keeps nothing of the daemon's`);
      else if (holding.length > 0) log.info(`PowerShell worker ${holding.join(", ")} finished in ${Date.now() - t0} ms`);
    }),
  );
}
