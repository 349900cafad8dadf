import type { CallOptions, NoRequest } from "../../util/call-scope.ts";
export interface TargetPortal {
  targetAddress: string;
  /** TCP port; 0 on input means the iSCSI default 3260. */
  targetPort: number;
}

export type AuthenticationType = "NONE" | "ONE_WAY_CHAP" | "MUTUAL_CHAP";

/**
 * Version-agnostic iSCSI API (v1alpha2). A missing target portal or address is InvalidArgument.
 * CHAP secrets are never logged, never on a command line.
 */
export interface IscsiService {
  /** Registers the portal with the initiator; idempotent. */
  addTargetPortal(req: { targetPortal?: TargetPortal }, options?: CallOptions): Promise<void>;
  /** IQNs of the targets the (registered) portal offers. Unregistered portal: NotFound. */
  discoverTargetPortal(req: { targetPortal?: TargetPortal }, options?: CallOptions): Promise<{ iqns: string[] }>;
  /** Unregisters the portal. Unknown portal: NotFound. */
  removeTargetPortal(req: { targetPortal?: TargetPortal }, options?: CallOptions): Promise<void>;
  listTargetPortals(req?: NoRequest, options?: CallOptions): Promise<{ targetPortals: TargetPortal[] }>;
  /** Logs in to the target; succeeds without change when already connected. */
  connectTarget(req: {
    targetPortal?: TargetPortal;
    iqn: string;
    authType: AuthenticationType;
    chapUsername: string;
    chapSecret: string;
  }, options?: CallOptions): Promise<void>;
  /** Logs out of the target; succeeds when not connected. */
  disconnectTarget(req: { targetPortal?: TargetPortal; iqn: string }, options?: CallOptions): Promise<void>;
  /** Disk numbers (decimal strings) of the target's LUNs; empty when not connected. */
  getTargetDisks(req: { targetPortal?: TargetPortal; iqn: string }, options?: CallOptions): Promise<{ diskIds: string[] }>;
  /** Sets the initiator's mutual CHAP secret (node-global). */
  setMutualChapSecret(req: { mutualChapSecret: string }, options?: CallOptions): Promise<void>;
}
