/**
 * The SMB group's steps on a share root's host mapping, each recorded in the reference counts
 * (smb-references.ts) so that a daemon killed in the middle finishes the step when it starts again.
 * Every step runs under the root's lock (the caller holds it). Query errors of the host mean "not
 * mapped", as upstream; a FailedPrecondition refusal (e.g. a link planted in the state directory)
 * is an answer, never "not mapped".
 */
import { CsiProxyError, Code } from "../../errors.ts";
import type { SmbHostApi } from "./host-api.ts";
import type { SmbLog, SmbReferences } from "./smb-references.ts";

export interface SmbMappingSteps {
  /**
   * Reuses a healthy mapping (status OK and reachable), re-creates an unhealthy or unreachable one,
   * creates a missing one. `creating` is called just before the host is asked to create (a mount
   * that failed or timed out may still have happened). Returns whether it created.
   */
  ensure(root: string, username: string, password: string, creating?: () => void): Promise<boolean>;
  /**
   * Removes the host mapping of a root that has no use left, and the root's record: marked
   * `removing` and saved first, then the host, then the record dropped and saved.
   */
  tearDown(root: string): Promise<void>;
  /**
   * Removes the mapping a failed call made, then asks the host: null when it no longer lists it,
   * else why it is still there (the removal's error, or that the host still lists it).
   */
  rollBack(root: string): Promise<string | null>;
  /** One retry of an owed rollback: done when a new use took the mapping over or it is gone. */
  retryRollBack(root: string): Promise<{ done: true } | { done: false; left: string }>;
}

export function createSmbMappingSteps(deps: { host: SmbHostApi; refs: SmbReferences; requirePrivacy: boolean; log: SmbLog }): SmbMappingSteps {
  const { host, refs, requirePrivacy, log } = deps;

  async function rollBack(root: string): Promise<string | null> {
    const failed = await host.removeMapping(root).then(
      () => null,
      (e: unknown) => (e instanceof Error ? e.message : String(e)),
    );
    const still = await host.getMapping(root).catch(() => null);
    if (still === null) return null;
    return failed ?? `removed, but the host still lists it (status ${still.status})`;
  }

  return {
    async ensure(root, username, password, creating = () => {}) {
      const mapping = await host.getMapping(root).catch(() => null);
      if (mapping) {
        if (mapping.status === "OK") {
          let valid = false;
          try {
            valid = await host.isPathValid(root);
          } catch (err) {
            log.warning(`SMB ${root}: reachability check failed: ${err instanceof Error ? err.message : String(err)}`);
          }
          if (valid) return false;
          log.info(`SMB ${root}: mapping is not reachable, re-creating it`);
        } else {
          log.info(`SMB ${root}: mapping status is ${JSON.stringify(mapping.status)}, re-creating it`);
        }
        await host.removeMapping(root);
      }
      creating();
      await host.createMapping(root, username, password, requirePrivacy);
      return true;
    },

    async tearDown(root) {
      refs.ensure(root).removing = true;
      await refs.save(root);
      const mapping = await host.getMapping(root).catch((err: unknown) => {
        if (err instanceof CsiProxyError && err.code === Code.FailedPrecondition) throw err;
        return null;
      });
      if (mapping) await host.removeMapping(root);
      refs.forget(root);
      await refs.save(root);
      log.info(`SMB ${root}: last use released, mapping ${mapping ? "removed" : "was already gone"}`);
    },

    rollBack,

    async retryRollBack(root) {
      const rs = refs.record(root);
      if (!rs || rs.users.length > 0 || !rs.removing) return { done: true };
      const left = await rollBack(root);
      if (left !== null) return { done: false, left: `${root} still mapped at ${host.linkTargetFor(root)}: ${left}` };
      refs.forget(root);
      await refs.save(root);
      return { done: true };
    },
  };
}
