/**
 * The SMB group as one object for tests: the service's methods plus the counts (`references()`), a
 * sweep now (`sweep()`) and the timer's stop (`close()`), built as compose builds it
 * (src/groups/smb/smb-group.ts: loaded and reconciled). `sweepIntervalMs` > 0 starts the timer, as
 * compose does; default: no timer.
 */
import { createSmbGroup, type SmbGroupDeps } from "../../src/groups/smb/smb-group.ts";
import type { SmbService } from "../../src/groups/smb/types.ts";

export type RefCountedSmbService = SmbService & {
  references(): Record<string, number>;
  sweep(): Promise<void>;
  close(): void;
};

export async function createRefCountedSmb(deps: SmbGroupDeps & { sweepIntervalMs?: number }): Promise<RefCountedSmbService> {
  const group = await createSmbGroup(deps);
  if (deps.sweepIntervalMs) group.reconciler.start(deps.sweepIntervalMs);
  return {
    newSmbGlobalMapping: (req, options) => group.service.newSmbGlobalMapping(req, options),
    removeSmbGlobalMapping: (req, options) => group.service.removeSmbGlobalMapping(req, options),
    references: () => group.references.counts(),
    sweep: () => group.reconciler.sweep(),
    close: () => group.reconciler.stop(),
  };
}
