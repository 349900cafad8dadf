/**
 * The SMB group's reconciliation of its reference counts (smb-references.ts) with the host, apart
 * from any call: started by compose (src/compose/linux.ts, src/compose/windows.ts) once the
 * group is built, before serving, and then on a timer.
 *
 * Sweep ({@link SmbReconciler.sweep}): uses whose local link has disappeared are dropped; a root
 * whose uses all went stale, or whose removal was interrupted (`removing`), loses its mapping; a
 * record without uses for any other reason is only forgotten (nothing says the mapping is ours to
 * remove). Cost, for S recorded uses over R roots: one read of the state file and S link reads
 * (lstat/readlink, no tool) without a lock; then, only when some root needs a change, its roots'
 * locks at once, one more read, one listing of the host's mappings (SmbHostApi.getMappings) and one
 * write of the state file for all of them; a host removal (a tool run) only for a root whose mapping
 * the host still lists — the work the sweep is for. A root the host does not list is dropped
 * without asking the host again.
 *
 * Start-up ({@link SmbReconciler.reconcile}): the sweep, then one listing to report each recovered
 * root (uses, and whether its mapping is present: after a reboot it is absent until the next
 * NewSmbGlobalMapping for it re-creates it with that call's credentials), then the host removes the
 * mapping directories no recorded root uses (SmbHostApi.removeUnusedMappingDirs). Never throws:
 * failures are logged as warnings. Nothing runs while the state file is refused.
 */
import type { SmbHostApi } from "./host-api.ts";
import type { SmbLog, SmbReferences } from "./smb-references.ts";
import type { SmbMappingSteps } from "./smb-mapping-steps.ts";

/** Default period of the stale-use sweep, in milliseconds. */
export const DEFAULT_SMB_SWEEP_INTERVAL_MS = 5 * 60_000;

export interface SmbReconciler {
  /** The start-up reconciliation (see module doc); once, before serving. */
  reconcile(): Promise<void>;
  /** One sweep over every recorded root now (what the timer runs). */
  sweep(): Promise<void>;
  /** Runs {@link sweep} every `intervalMs` (default {@link DEFAULT_SMB_SWEEP_INTERVAL_MS}; 0: never) on an unref'd timer. Idempotent. */
  start(intervalMs?: number): void;
  /** Stops the timer. */
  stop(): void;
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export function createSmbReconciler(deps: { host: SmbHostApi; refs: SmbReferences; steps: SmbMappingSteps; log: SmbLog }): SmbReconciler {
  const { host, refs, steps, log } = deps;
  let timer: ReturnType<typeof setInterval> | undefined;

  /** Roots that may need a change: removing, without uses, or with a stale use (judged without a lock). */
  async function suspects(): Promise<string[]> {
    const found: string[] = [];
    for (const [root, rs] of await refs.snapshot()) {
      if (rs.removing || rs.users.length === 0) found.push(root);
      else for (const user of rs.users) if (await refs.isStale(user)) { found.push(root); break; }
    }
    return found;
  }

  /** Under the suspects' locks: prune, decide, one write. Returns the roots whose host mapping must be removed. */
  async function settle(roots: string[]): Promise<string[]> {
    return refs.withRoots(roots, async () => {
      const mapped = await host.getMappings(roots).catch((err: unknown) => {
        log.warning(`SMB: listing the host's mappings failed (${message(err)}); each root's mapping is looked up on its own`);
        return null;
      });
      const owed: string[] = [];
      const changed: string[] = [];
      for (const root of roots) {
        const rs = refs.record(root);
        if (!rs) continue;
        const stale = await refs.pruneStale(root);
        if (rs.users.length > 0) {
          if (stale.length) changed.push(root);
        } else if (rs.removing || stale.length) {
          changed.push(root);
          if (mapped && !mapped.has(root)) {
            refs.forget(root);
            log.info(`SMB ${root}: last use released, mapping was already gone`);
          } else {
            rs.removing = true;
            owed.push(root);
          }
        } else {
          changed.push(root);
          refs.forget(root);
        }
      }
      if (changed.length) await refs.saveRoots(changed);
      return owed;
    });
  }

  async function sweep(): Promise<void> {
    if (refs.refused) return;
    try {
      const roots = await suspects();
      if (roots.length === 0) return;
      for (const root of await settle(roots)) {
        await refs
          .withRoot(root, async () => {
            const rs = refs.record(root);
            if (rs && rs.users.length === 0 && rs.removing) await steps.tearDown(root);
          })
          .catch((err: unknown) => log.warning(`SMB ${root}: sweep failed: ${message(err)}`));
      }
    } catch (err) {
      log.warning(`SMB: sweep failed: ${message(err)}`);
    }
  }

  return {
    sweep,
    async reconcile() {
      await sweep();
      if (refs.refused) return;
      const records = await refs.snapshot();
      const roots = [...records.keys()];
      if (roots.length) {
        const mapped = await host.getMappings(roots).catch((err: unknown) => {
          log.warning(`SMB: listing the host's mappings at start-up failed: ${message(err)}`);
          return null;
        });
        for (const [root, rs] of records) {
          const m = mapped?.get(root);
          const where = mapped === null ? "not checked" : m ? `present (${m.status})` : "absent until the next NewSmbGlobalMapping for it";
          log.info(`SMB ${root}: ${rs.users.length} use(s) recovered, mapping ${where}`);
        }
      }
      // Directories of mappings no recorded root uses (a daemon killed around a mount or an unmount).
      if (host.removeUnusedMappingDirs) {
        const removed = await host.removeUnusedMappingDirs(roots).catch((err: unknown) => {
          log.warning(`SMB: the start-up sweep of mapping directories failed: ${message(err)}`);
          return [];
        });
        if (removed.length) log.info(`SMB: removed ${removed.length} mapping director${removed.length === 1 ? "y" : "ies"} no share root uses: ${removed.join(", ")}`);
      }
    },
    start(intervalMs = DEFAULT_SMB_SWEEP_INTERVAL_MS) {
      if (timer || intervalMs <= 0) return;
      timer = setInterval(() => void sweep(), intervalMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
