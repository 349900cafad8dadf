/**
 * Builds the SMB group from its parts: the reference counts loaded from the state file
 * (smb-references.ts), the mapping steps (smb-mapping-steps.ts), the service of decisions
 * (smb-service.ts) and the reconciler (smb-reconciler.ts), whose start-up reconciliation has run
 * when this resolves. The reconciler's timer is the caller's to start (compose does:
 * src/compose/linux.ts, src/compose/windows.ts) and stop.
 */
import { createKeyedMutex, type KeyedMutex } from "../../util/keyed-mutex.ts";
import type { PathPolicy } from "../../policy/path-policy.ts";
import type { JsonStateFile } from "../../state/atomic-file.ts";
import type { SmbService } from "./types.ts";
import type { SmbHostApi } from "./host-api.ts";
import type { SmbState } from "./smb-state.ts";
import { openSmbReferences, type SmbLog, type SmbReferences } from "./smb-references.ts";
import { createSmbMappingSteps } from "./smb-mapping-steps.ts";
import { createSmbService } from "./smb-service.ts";
import { createSmbReconciler, type SmbReconciler } from "./smb-reconciler.ts";

export interface SmbGroupDeps {
  host: SmbHostApi;
  /** The filesystem group's policy: `local_path` must pass it. */
  policy: PathPolicy;
  /** The reference counts' file (smb-state.ts `smbStateFile`). */
  state: JsonStateFile<SmbState>;
  /** `-require-privacy`: new mappings demand encryption. */
  requirePrivacy: boolean;
  platform: "linux" | "win32";
  log?: SmbLog;
  /** Locks per share root and for the state file; node-wide ones (src/state/node-locks.ts) when other processes share the state dir. Default: in-process. */
  locks?: KeyedMutex;
}

export interface SmbGroup {
  service: SmbService;
  /** The counts, for operators and tests (`counts()`: uses per share root). */
  references: SmbReferences;
  /** Reconciled once already; `start()` runs its sweep on a timer. */
  reconciler: SmbReconciler;
}

export async function createSmbGroup(deps: SmbGroupDeps): Promise<SmbGroup> {
  const log: SmbLog = deps.log ?? { info() {}, warning() {} };
  const refs = await openSmbReferences({ state: deps.state, locks: deps.locks ?? createKeyedMutex(), host: deps.host, platform: deps.platform, log });
  const steps = createSmbMappingSteps({ host: deps.host, refs, requirePrivacy: deps.requirePrivacy, log });
  const reconciler = createSmbReconciler({ host: deps.host, refs, steps, log });
  await reconciler.reconcile();
  return {
    service: createSmbService({ host: deps.host, policy: deps.policy, refs, steps, platform: deps.platform, log }),
    references: refs,
    reconciler,
  };
}
