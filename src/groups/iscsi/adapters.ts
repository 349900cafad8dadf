import type { CallContext } from "../../api/handlers.ts";
import type { GroupAdapters } from "../../api/adapters.ts";
import { invalidArgument } from "../../errors.ts";
import type { AuthenticationType, IscsiService, TargetPortal } from "./types.ts";

type WirePortal = { targetAddress: string; targetPort: number } | undefined;

const portal = (p: WirePortal): TargetPortal | undefined => (p ? { targetAddress: p.targetAddress, targetPort: p.targetPort } : undefined);

const authTypes: AuthenticationType[] = ["NONE", "ONE_WAY_CHAP", "MUTUAL_CHAP"];

/** Wire enum number → internal name; unknown numbers are InvalidArgument (upstream's text). */
function authType(value: number): AuthenticationType {
  const name = authTypes[value];
  if (!name) throw invalidArgument(`invalid authentication type authType=${value}`);
  return name;
}

const v1alpha1 = (iscsi: IscsiService) => ({
  addTargetPortal: async (req: { targetPortal?: WirePortal }, ctx: CallContext) => (await iscsi.addTargetPortal({ targetPortal: portal(req.targetPortal) }, ctx), {}),
  discoverTargetPortal: (req: { targetPortal?: WirePortal }, ctx: CallContext) => iscsi.discoverTargetPortal({ targetPortal: portal(req.targetPortal) }, ctx),
  removeTargetPortal: async (req: { targetPortal?: WirePortal }, ctx: CallContext) =>
    (await iscsi.removeTargetPortal({ targetPortal: portal(req.targetPortal) }, ctx), {}),
  listTargetPortals: (_req: object, ctx: CallContext) => iscsi.listTargetPortals({}, ctx),
  connectTarget: async (req: { targetPortal?: WirePortal; iqn: string; authType: number; chapUsername: string; chapSecret: string }, ctx: CallContext) => {
    await iscsi.connectTarget({
      targetPortal: portal(req.targetPortal),
      iqn: req.iqn,
      authType: authType(req.authType),
      chapUsername: req.chapUsername,
      chapSecret: req.chapSecret,
    }, ctx);
    return {};
  },
  disconnectTarget: async (req: { targetPortal?: WirePortal; iqn: string }, ctx: CallContext) =>
    (await iscsi.disconnectTarget({ targetPortal: portal(req.targetPortal), iqn: req.iqn }, ctx), {}),
  getTargetDisks: async (req: { targetPortal?: WirePortal; iqn: string }, ctx: CallContext) => {
    const { diskIds } = await iscsi.getTargetDisks({ targetPortal: portal(req.targetPortal), iqn: req.iqn }, ctx);
    return { diskIDs: diskIds };
  },
});

export const iscsiAdapters: GroupAdapters<"iscsi", IscsiService> = {
  v1alpha1,
  v1alpha2: (iscsi) => ({
    ...v1alpha1(iscsi),
    setMutualChapSecret: async (req: { MutualChapSecret: string }, ctx: CallContext) =>
      (await iscsi.setMutualChapSecret({ mutualChapSecret: req.MutualChapSecret }, ctx), {}),
  }),
};
