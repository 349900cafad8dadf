import type { CallContext } from "../../api/handlers.ts";
import type { GroupAdapters } from "../../api/adapters.ts";
import type { SystemService } from "./types.ts";

export const systemAdapters: GroupAdapters<"system", SystemService> = {
  v1alpha1: (system) => ({
    getBIOSSerialNumber: (_req: object, ctx: CallContext) => system.getBIOSSerialNumber({}, ctx),
    startService: async (req: { name: string }, ctx: CallContext) => (await system.startService({ name: req.name }, ctx), {}),
    stopService: async (req: { name: string; force: boolean }, ctx: CallContext) => (await system.stopService({ name: req.name, force: req.force }, ctx), {}),
    getService: (req: { name: string }, ctx: CallContext) => system.getService({ name: req.name }, ctx),
  }),
};
