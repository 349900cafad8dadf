import type { AuthenticationType, TargetPortal } from "./types.ts";

/**
 * Host operations of the iSCSI group. Implementations are pass-through: no validation, no
 * decisions (port defaulting, existence and connection checks, idempotency live in
 * iscsi-service.ts). Inputs are already validated: `portal.targetPort` is 1..65535, the address
 * a host name or IP literal, `iqn` an iSCSI name without separators or control characters, CHAP
 * values without control characters. Secrets (`chapSecret`, the mutual secret) never go on a
 * command line, into a child's environment, a log line or an error message.
 *
 * Windows maps this onto MSFT_iSCSITargetPortal / MSFT_iSCSITarget / MSFT_iSCSISession (or the
 * iSCSI cmdlets); Linux onto open-iscsi's iscsiadm (discovery records, node records, sessions).
 */
export interface IscsiHostApi {
  /** Portals registered with the initiator. */
  listTargetPortals(): Promise<TargetPortal[]>;
  /** Registers a portal (Windows: New-IscsiTargetPortal; Linux: a sendtargets discovery record). */
  addTargetPortal(portal: TargetPortal): Promise<void>;
  /** Unregisters a registered portal. */
  removeTargetPortal(portal: TargetPortal): Promise<void>;
  /** IQNs a registered portal offers (runs discovery). */
  discoverTargets(portal: TargetPortal): Promise<string[]>;
  /** The initiator's knowledge of a target behind a portal: null when unknown, else whether a session is logged in. */
  getTarget(portal: TargetPortal, iqn: string): Promise<{ connected: boolean } | null>;
  /** Logs in to a known, not connected target with the given authentication (session not persistent). */
  connectTarget(portal: TargetPortal, iqn: string, auth: { type: AuthenticationType; chapUsername: string; chapSecret: string }): Promise<void>;
  /** Logs out of a connected target. */
  disconnectTarget(portal: TargetPortal, iqn: string): Promise<void>;
  /** Disk numbers (decimal strings) of a connected target's LUNs, in the disk group's numbering. */
  getTargetDisks(portal: TargetPortal, iqn: string): Promise<string[]>;
  /** Sets the initiator's node-global mutual CHAP secret; "" clears it. */
  setMutualChapSecret(secret: string): Promise<void>;
}
