import type { GroupAdapters } from "../../api/adapters.ts";
import type { SystemService } from "./types.ts";

export const systemAdapters: GroupAdapters<"system", SystemService> = {
  v1alpha1: (system) => ({
    getBIOSSerialNumber: () => system.getBIOSSerialNumber(),
    startService: async (req: { name: string }) => (await system.startService({ name: req.name }), {}),
    stopService: async (req: { name: string; force: boolean }) => (await system.stopService({ name: req.name, force: req.force }), {}),
    getService: (req: { name: string }) => system.getService({ name: req.name }),
  }),
};
