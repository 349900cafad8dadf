/**
 * iSCSI on Windows: the Microsoft iSCSI initiator's CIM classes (namespace
 * root/Microsoft/Windows/Storage) through the SMB/iSCSI/System PowerShell worker pool
 * (powershell/scripts/worker-ops-smb-iscsi-system.ts), as upstream master uses them
 * (docs/upstream-behaviour.md, iSCSI):
 *
 * - listTargetPortals: MSFT_iSCSITargetPortal instances (TargetPortalAddress, TargetPortalPortNumber);
 * - addTargetPortal: static MSFT_iSCSITargetPortal.New(TargetPortalAddress, TargetPortalPortNumber);
 * - removeTargetPortal: the portal instance's Remove(TargetPortalPortNumber, TargetPortalAddress);
 * - discoverTargets: MSFT_iSCSITargetToiSCSITargetPortal → MSFT_iSCSITarget.NodeAddress;
 * - getTarget: that association, NodeAddress compared case-insensitively (iSCSI names are) →
 *   IsConnected; null when the portal or the target is unknown;
 * - connectTarget: static MSFT_iSCSITarget.Connect(NodeAddress, TargetPortalAddress,
 *   TargetPortalPortNumber, AuthenticationType NONE|ONEWAYCHAP|MUTUALCHAP[, ChapUsername]
 *   [, ChapSecret]) — no IsPersistent: the session does not survive a reboot, as upstream;
 * - disconnectTarget: every session (MSFT_iSCSITargetToiSCSISession): Unregister() when
 *   persistent, then MSFT_iSCSITarget.Disconnect(SessionIdentifier);
 * - getTargetDisks: MSFT_iSCSITargetToiSCSIConnection → MSFT_iSCSIConnectionToDisk → MSFT_Disk.Number;
 * - setMutualChapSecret: static MSFT_iSCSISession.SetCHAPSecret(ChapSecret).
 *
 * CHAP secrets travel only inside the JSON request on the worker's stdin, into the CIM method's
 * argument table; they are removed from any error text. Pass-through per
 * src/groups/iscsi/host-api.ts.
 */
import type { IscsiHostApi } from "../../groups/iscsi/host-api.ts";
import type { AuthenticationType, TargetPortal } from "../../groups/iscsi/types.ts";
import { Code, internal } from "../../errors.ts";
import type { PowerShellPool } from "./powershell/powershell-pool.ts";
import type { Json } from "./powershell/powershell-worker.ts";
import { list } from "./powershell/cim-output.ts";
import { recode } from "./powershell/worker-errors.ts";

/** The initiator's AuthenticationType strings (upstream: the enum name upper-cased without `_`). */
export const AUTH_TYPE: Record<AuthenticationType, string> = { NONE: "NONE", ONE_WAY_CHAP: "ONEWAYCHAP", MUTUAL_CHAP: "MUTUALCHAP" };

/**
 * gRPC code for an iSCSI initiator error (iscsierr.h ISDSC_* HRESULTs, 0xEFFFxxxx) or a Win32
 * error; undefined keeps the pool's mapping.
 */
export function iscsiCodeFor(n: number): Code | undefined {
  switch (n) {
    case 0xefff0003: // ISDSC_CONNECTION_FAILED: the portal could not be reached
    case 1722: // RPC_S_SERVER_UNAVAILABLE
    case 1231: // ERROR_NETWORK_UNREACHABLE
    case 1232: // ERROR_HOST_UNREACHABLE
      return Code.FailedPrecondition; // final for this call, not "still in progress" (compat/driver-fragments.ts)
    case 0xefff0009: // ISDSC_AUTHENTICATION_FAILURE: CHAP rejected
    case 0xefff000a: // ISDSC_AUTHORIZATION_FAILURE
    case 5: // ERROR_ACCESS_DENIED
      return Code.PermissionDenied;
    case 0xefff0002: // ISDSC_LOGIN_FAILED
      return Code.FailedPrecondition;
    case 1060: // ERROR_SERVICE_DOES_NOT_EXIST: no MSiSCSI
    case 1062: // ERROR_SERVICE_NOT_ACTIVE: MSiSCSI stopped
      return Code.FailedPrecondition;
    default:
      return undefined;
  }
}

function bad(op: string, v: unknown): never {
  throw internal(`${op}: unexpected PowerShell output: ${JSON.stringify(v)?.slice(0, 100)}`);
}

const portalArgs = (p: TargetPortal): { [key: string]: Json } => ({ address: p.targetAddress, port: p.targetPort });

export class WindowsIscsiHost implements IscsiHostApi {
  readonly #pool: PowerShellPool;

  constructor(pool: PowerShellPool) {
    this.#pool = pool;
  }

  #call(op: string, args: { [key: string]: Json }, secrets: string[] = []): Promise<Json> {
    return this.#pool.call(op, args).catch((err) => {
      throw recode(err, iscsiCodeFor, secrets);
    });
  }

  async listTargetPortals(): Promise<TargetPortal[]> {
    return list("iscsi.listPortals", await this.#call("iscsi.listPortals", {})).map((v) => {
      const o = v as { address?: unknown; port?: unknown } | null;
      if (o === null || typeof o !== "object" || typeof o.address !== "string" || typeof o.port !== "number" || !Number.isInteger(o.port)) bad("iscsi.listPortals", v);
      return { targetAddress: o.address, targetPort: o.port };
    });
  }

  async addTargetPortal(portal: TargetPortal): Promise<void> {
    await this.#call("iscsi.addPortal", portalArgs(portal));
  }

  async removeTargetPortal(portal: TargetPortal): Promise<void> {
    await this.#call("iscsi.removePortal", portalArgs(portal));
  }

  async discoverTargets(portal: TargetPortal): Promise<string[]> {
    return list("iscsi.discover", await this.#call("iscsi.discover", portalArgs(portal))).map((v) => (typeof v === "string" ? v : bad("iscsi.discover", v)));
  }

  async getTarget(portal: TargetPortal, iqn: string): Promise<{ connected: boolean } | null> {
    const v = await this.#call("iscsi.getTarget", { ...portalArgs(portal), iqn });
    if (v === null) return null;
    const o = v as { connected?: unknown };
    if (typeof o !== "object" || Array.isArray(o) || typeof o.connected !== "boolean") bad("iscsi.getTarget", v);
    return { connected: o.connected };
  }

  async connectTarget(portal: TargetPortal, iqn: string, auth: { type: AuthenticationType; chapUsername: string; chapSecret: string }): Promise<void> {
    const authType = AUTH_TYPE[auth.type];
    if (authType === undefined) throw internal(`unknown authentication type ${String(auth.type)}`);
    await this.#call("iscsi.connect", { ...portalArgs(portal), iqn, authType, chapUsername: auth.chapUsername, chapSecret: auth.chapSecret }, [auth.chapSecret]);
  }

  async disconnectTarget(portal: TargetPortal, iqn: string): Promise<void> {
    await this.#call("iscsi.disconnect", { ...portalArgs(portal), iqn });
  }

  async getTargetDisks(portal: TargetPortal, iqn: string): Promise<string[]> {
    return list("iscsi.disks", await this.#call("iscsi.disks", { ...portalArgs(portal), iqn })).map((v) =>
      typeof v === "number" && Number.isInteger(v) && v >= 0 ? String(v) : bad("iscsi.disks", v),
    );
  }

  async setMutualChapSecret(secret: string): Promise<void> {
    await this.#call("iscsi.setMutualChapSecret", { secret }, [secret]);
  }
}
