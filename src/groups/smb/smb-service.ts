/**
 * The SMB group's decisions (docs/upstream-behaviour.md, SMB) with reference counting per share root.
 * What a use is and how the counts are kept: smb-references.ts; the steps on a host mapping:
 * smb-mapping-steps.ts; the sweep apart from calls: smb-reconciler.ts; all built by smb-group.ts.
 *
 * NewSmbGlobalMapping: `remote_path` is normalised (`/` → `\`) and reduced to its share root
 * `\\server\share` (lower-cased); `local_path` (when given) must pass the path policy. The call is
 * recorded as one use of the root (see smb-state.ts for how uses are identified), then a healthy
 * host mapping is reused (the call's credentials are then ignored, as upstream), a mapping that
 * exists but is unhealthy or whose root is unreachable is removed and re-created, a missing one is
 * created; finally the link at `local_path` is created, pointing to the full remote path. A local
 * path that already links to this remote path (a retried call, or the link survived a restart) is
 * accepted without counting twice; anything else there is AlreadyExists. On failure the call's
 * use is withdrawn again and a mapping this call created for it alone is removed.
 *
 * RemoveSmbGlobalMapping: releases one use of the root of `remote_path`; the host mapping is
 * removed only when no use is left. Which use: first, uses whose local link has already been
 * removed are dropped (stale); if one of them asked for this very remote path, that is the
 * released use (the driver removed its link before calling). Otherwise one use with this remote
 * path is released (uses without local path first), else one of the root's. A root without any
 * recorded use but with a host mapping (made before reference counting, or by another tool) has
 * the mapping removed, as upstream does; a root with neither is NotFound.
 *
 * A use is recorded before the host is touched, so a crash leaves either nothing or a recorded use
 * whose link does not exist, which the next sweep drops. Calls for one share root are serialised;
 * different roots proceed in parallel; a call whose deadline passes while it waits for its root
 * never starts (util/keyed-mutex.ts, state/node-locks.ts).
 *
 * Codes: malformed input InvalidArgument; local path outside the allowed dirs PermissionDenied;
 * occupied local path AlreadyExists (carrying `ResourceExists`); unknown root NotFound (carrying
 * `No MSFT_SmbGlobalMapping objects found`; see compat/driver-fragments.ts); unreadable state file
 * FailedPrecondition (every call, until the file is fixed or moved away); host failures keep
 * the host's code. Passwords never appear in a message.
 */
import { nodeCrypto } from "../../util/node-crypto.ts";
import { inCallScope } from "../../util/call-scope.ts";
import type { SmbService } from "./types.ts";
import type { SmbHostApi } from "./host-api.ts";
import type { PathPolicy } from "../../policy/path-policy.ts";
import { CsiProxyError, Code } from "../../errors.ts";
import { parseRemotePath } from "./remote-path.ts";
import { fragmentError } from "../../compat/driver-fragments.ts";
import { describeSchedule, retryUndo } from "../../util/undo-retry.ts";
import type { SmbUser } from "./smb-state.ts";
import type { SmbLog, SmbReferences } from "./smb-references.ts";
import type { SmbMappingSteps } from "./smb-mapping-steps.ts";
import { validateCredentials } from "./credentials.ts";

export interface SmbServiceDeps {
  host: SmbHostApi;
  /** The filesystem group's policy: `local_path` must pass it (docs/upstream-behaviour.md, Path validation). */
  policy: PathPolicy;
  refs: SmbReferences;
  steps: SmbMappingSteps;
  platform: "linux" | "win32";
  log: SmbLog;
}

/** Which use RemoveSmbGlobalMapping releases when no stale use asked for its remote path: the last of the first non-empty group. */
const RELEASE_ORDER = [
  (u: SmbUser, same: boolean) => same && u.localPath === undefined,
  (_: SmbUser, same: boolean) => same,
  (u: SmbUser) => u.localPath === undefined,
  () => true,
];

export function createSmbService(deps: SmbServiceDeps): SmbService {
  const { host, policy, refs, steps, log } = deps;
  const fold = (s: string) => (deps.platform === "win32" ? s.toLowerCase() : s);

  return inCallScope({
    async newSmbGlobalMapping(req) {
      const rp = parseRemotePath(req.remotePath);
      validateCredentials(req.username, req.password);
      const link = req.localPath === "" ? undefined : await policy.check(req.localPath);
      refs.usable();
      return refs.withRoot(rp.root, async () => {
        const stale = await refs.pruneStale(rp.root);
        let existingLink = false;
        if (link !== undefined) {
          const entry = await host.readDirLink(link);
          if (entry !== null) {
            if (entry.target === null || !refs.linksTo(entry.target, rp.remotePath)) {
              if (stale.length) await refs.save(rp.root);
              throw fragmentError("smb-local-path-exists", `local path ${req.localPath} already exists and is not a link to ${rp.remotePath}`);
            }
            existingLink = true; // a retried call, or a link that outlived a restart: same destination
          }
        }
        const rs = refs.ensure(rp.root);
        const wasRemoving = rs.removing === true;
        const id = link !== undefined ? `link:${fold(link)}` : `call:${nodeCrypto().randomUUID()}`;
        let user = rs.users.find((u) => u.id === id);
        const added = user === undefined;
        if (user === undefined) {
          user = { id, remotePath: rp.remotePath, since: new Date().toISOString(), ...(link !== undefined ? { localPath: link } : {}) };
          rs.users.push(user);
        } else {
          user.remotePath = rp.remotePath;
        }
        delete rs.removing;
        await refs.save(rp.root); // recorded before the host is touched: a crash leaves a use the sweep can judge
        let created = false;
        let attempted = false; // a mount that failed or timed out may still have happened: rolled back like a created one
        try {
          created = await steps.ensure(rp.root, req.username, req.password, () => (attempted = true));
          if (link !== undefined && !existingLink) await host.createDirLink(link, rp.remotePath);
        } catch (caught) {
          if (!added) throw caught;
          let err = caught;
          rs.users = rs.users.filter((u) => u !== user);
          if (rs.users.length === 0) {
            const left = created || attempted ? await steps.rollBack(rp.root) : null;
            if (left !== null) {
              // Still mapped: the removal is owed (the sweep and the retry below finish it), and the answer says so.
              rs.removing = true;
              const failure = CsiProxyError.from(err, Code.Internal);
              err = failure;
              failure.message += `; the mapping of ${rp.root} this call made could not be removed (${left}): it is still mapped at ${host.linkTargetFor(rp.root)}; csi-proxy retries removing it (${describeSchedule()})`;
              void retryUndo(`SMB mapping ${rp.root}`, () => refs.withRoot(rp.root, () => steps.retryRollBack(rp.root)), log);
            } else if (wasRemoving && !created) rs.removing = true; // the interrupted removal is still owed
            else refs.forget(rp.root);
          }
          await refs.save(rp.root).catch((e) => log.warning(`SMB state: save failed: ${e instanceof Error ? e.message : String(e)}`));
          throw err;
        }
      });
    },

    async removeSmbGlobalMapping(req) {
      const rp = parseRemotePath(req.remotePath);
      refs.usable();
      return refs.withRoot(rp.root, async () => {
        const rs = refs.record(rp.root);
        const stale = await refs.pruneStale(rp.root);
        if (!rs || (rs.users.length === 0 && stale.length === 0 && !rs.removing)) {
          // No recorded use: a mapping made before counting started or by another tool. Upstream removes it.
          const mapping = await host.getMapping(rp.root).catch(() => null);
          if (mapping) await host.removeMapping(rp.root);
          if (rs) {
            refs.forget(rp.root);
            await refs.save(rp.root);
          }
          if (!mapping) throw fragmentError("smb-no-mapping", `error remove smb mapping '${rp.root}'. err: no SMB global mapping for remote path ${rp.root}`);
          log.info(`SMB ${rp.root}: removed a mapping that had no recorded use`);
          return;
        }
        const same = (u: SmbUser) => u.remotePath.toLowerCase() === rp.remotePath.toLowerCase(); // SMB paths are case-insensitive
        if (!stale.some(same) && rs.users.length > 0) {
          for (const pick of RELEASE_ORDER) {
            const candidates = rs.users.filter((u) => pick(u, same(u)));
            if (candidates.length) {
              const released = candidates[candidates.length - 1];
              rs.users = rs.users.filter((u) => u !== released);
              break;
            }
          }
        }
        if (rs.users.length > 0) {
          await refs.save(rp.root);
          log.info(`SMB ${rp.root}: use released, ${rs.users.length} left; mapping kept`);
          return;
        }
        await steps.tearDown(rp.root);
      });
    },
  });
}
