import type { CallContext } from "../../api/handlers.ts";
import type { GroupAdapters } from "../../api/adapters.ts";
import type { SmbService } from "./types.ts";

type NewRequest = { remotePath: string; localPath: string; username: string; password: string };

/** All versions share one shape (v1alpha1/v1beta1 have never-filled `error` response fields). */
const all = (smb: SmbService) => ({
  newSmbGlobalMapping: async (req: NewRequest, ctx: CallContext) => {
    await smb.newSmbGlobalMapping({ remotePath: req.remotePath, localPath: req.localPath, username: req.username, password: req.password }, ctx);
    return {};
  },
  removeSmbGlobalMapping: async (req: { remotePath: string }, ctx: CallContext) => (await smb.removeSmbGlobalMapping({ remotePath: req.remotePath }, ctx), {}),
});

export const smbAdapters: GroupAdapters<"smb", SmbService> = { v1alpha1: all, v1beta1: all, v1beta2: all, v1: all };
