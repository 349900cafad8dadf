import { createKeyedMutex, type KeyedMutex } from "../../util/keyed-mutex.ts";
import type { IscsiService, TargetPortal } from "./types.ts";
import { inCallScope } from "../../util/call-scope.ts";
import type { IscsiHostApi } from "./host-api.ts";
import { invalidArgument } from "../../errors.ts";
import { fragmentError } from "../../compat/driver-fragments.ts";
import { checkChapName, checkChapSecret, checkIqn, checkPortal, samePortal } from "./validate.ts";

const portalText = (p: TargetPortal) => `${p.targetAddress}:${p.targetPort}`;

/**
 * The iSCSI group (docs/upstream-behaviour.md, iSCSI, master's WMI-era semantics):
 * - every request's portal is checked first (missing → InvalidArgument instead of upstream's
 *   crash; port 0 → 3260), then the IQN and CHAP fields (validate.ts);
 * - AddTargetPortal is a no-op for a registered portal; Discover and Remove need a registered
 *   portal (NotFound);
 * - Connect/Disconnect/GetTargetDisks need a target the initiator knows behind that portal
 *   (NotFound otherwise, as upstream's "not found", carrying `ObjectNotFound`: compat/driver-fragments.ts); Connect succeeds without change when already
 *   connected (even with other credentials), Disconnect when not connected, GetTargetDisks is
 *   empty when not connected;
 * - ONE_WAY_CHAP and MUTUAL_CHAP need a non-empty chap_secret (the initiator would fail anyway);
 *   NONE ignores the CHAP fields. SetMutualChapSecret accepts "" (clears the secret).
 * Calls for one portal are serialised (the initiator's database is shared state), node-wide with
 * node locks; other portals proceed in parallel. SetMutualChapSecret and MUTUAL_CHAP logins take
 * turns on the secret.
 */
export function createIscsiService(deps: { host: IscsiHostApi; locks?: KeyedMutex }): IscsiService {
  const { host } = deps;
  const locks = deps.locks ?? createKeyedMutex();
  /** The mutual CHAP secret is initiator-wide: SetMutualChapSecret and MUTUAL_CHAP logins take turns on it. */
  const MUTUAL = "iscsi-mutual-chap";
  const portalKey = (portal: TargetPortal) => `iscsi-portal:${portalText(portal).toLowerCase()}`;
  /** Per-portal serialisation (node-wide when `deps.locks` is: src/state/node-locks.ts); `extra` keys are held too. */
  const withLock = <T>(portal: TargetPortal, fn: () => Promise<T>, extra: string[] = []): Promise<T> => locks.runAll([portalKey(portal), ...extra], fn);

  async function registered(portal: TargetPortal): Promise<boolean> {
    return (await host.listTargetPortals()).some((p) => samePortal(p, portal));
  }

  async function knownTarget(portal: TargetPortal, iqn: string) {
    const target = await host.getTarget(portal, iqn);
    if (!target) throw fragmentError("iscsi-target-unknown", `target ${iqn} behind portal ${portalText(portal)} not found (discover the portal first)`);
    return target;
  }

  return inCallScope({
    async addTargetPortal(req) {
      const portal = checkPortal(req.targetPortal);
      await withLock(portal, async () => {
        if (!(await registered(portal))) await host.addTargetPortal(portal);
      });
    },

    async discoverTargetPortal(req) {
      const portal = checkPortal(req.targetPortal);
      return withLock(portal, async () => {
        if (!(await registered(portal))) throw fragmentError("iscsi-portal-unknown", `target portal ${portalText(portal)} not found`);
        return { iqns: await host.discoverTargets(portal) };
      });
    },

    async removeTargetPortal(req) {
      const portal = checkPortal(req.targetPortal);
      await withLock(portal, async () => {
        if (!(await registered(portal))) throw fragmentError("iscsi-portal-unknown", `target portal ${portalText(portal)} not found`);
        await host.removeTargetPortal(portal);
      });
    },

    async listTargetPortals() {
      return { targetPortals: await host.listTargetPortals() };
    },

    async connectTarget(req) {
      const portal = checkPortal(req.targetPortal);
      const iqn = checkIqn(req.iqn);
      if (!["NONE", "ONE_WAY_CHAP", "MUTUAL_CHAP"].includes(req.authType)) throw invalidArgument(`invalid authentication type authType=${String(req.authType)}`);
      let chapUsername = "";
      let chapSecret = "";
      if (req.authType !== "NONE") {
        chapUsername = checkChapName(req.chapUsername, "chap_username");
        chapSecret = checkChapSecret(req.chapSecret, "chap_secret");
        if (chapSecret === "") throw invalidArgument(`chap_secret is required for authentication type ${req.authType}`);
      }
      await withLock(portal, async () => {
        const target = await knownTarget(portal, iqn);
        if (target.connected) return;
        await host.connectTarget(portal, iqn, { type: req.authType, chapUsername, chapSecret });
      }, req.authType === "MUTUAL_CHAP" ? [MUTUAL] : []);
    },

    async disconnectTarget(req) {
      const portal = checkPortal(req.targetPortal);
      const iqn = checkIqn(req.iqn);
      await withLock(portal, async () => {
        const target = await knownTarget(portal, iqn);
        if (target.connected) await host.disconnectTarget(portal, iqn);
      });
    },

    async getTargetDisks(req) {
      const portal = checkPortal(req.targetPortal);
      const iqn = checkIqn(req.iqn);
      return withLock(portal, async () => {
        const target = await knownTarget(portal, iqn);
        return { diskIds: target.connected ? await host.getTargetDisks(portal, iqn) : [] };
      });
    },

    async setMutualChapSecret(req) {
      const secret = checkChapSecret(req.mutualChapSecret, "mutual_chap_secret");
      await locks.run(MUTUAL, () => host.setMutualChapSecret(secret));
    },
  });
}
