import type { CallContext } from "../../api/handlers.ts";
import type { GroupAdapters } from "../../api/adapters.ts";
import type { FilesystemService } from "./types.ts";

/**
 * v1alpha1/v1beta1: LinkPath and IsMountPoint are CreateSymlink and IsSymlink under old names;
 * the PathContext field is ignored and the legacy `error` response fields stay empty (errors are
 * gRPC statuses), exactly as upstream.
 */
const legacy = (fs: FilesystemService) => ({
  pathExists: (req: { path: string }, ctx: CallContext) => fs.pathExists({ path: req.path }, ctx),
  mkdir: async (req: { path: string }, ctx: CallContext) => (await fs.mkdir({ path: req.path }, ctx), {}),
  rmdir: async (req: { path: string; force: boolean }, ctx: CallContext) => (await fs.rmdir({ path: req.path, force: req.force }, ctx), {}),
  linkPath: async (req: { sourcePath: string; targetPath: string }, ctx: CallContext) => (await fs.createSymlink({ sourcePath: req.sourcePath, targetPath: req.targetPath }, ctx), {}),
  isMountPoint: async (req: { path: string }, ctx: CallContext) => ({ isMountPoint: (await fs.isSymlink({ path: req.path }, ctx)).isSymlink }),
});

/** v1beta2 and v1: the current names; v2alpha1 adds RmdirContents. */
const current = (fs: FilesystemService) => ({
  pathExists: (req: { path: string }, ctx: CallContext) => fs.pathExists({ path: req.path }, ctx),
  mkdir: async (req: { path: string }, ctx: CallContext) => (await fs.mkdir({ path: req.path }, ctx), {}),
  rmdir: async (req: { path: string; force: boolean }, ctx: CallContext) => (await fs.rmdir({ path: req.path, force: req.force }, ctx), {}),
  createSymlink: async (req: { sourcePath: string; targetPath: string }, ctx: CallContext) => (await fs.createSymlink({ sourcePath: req.sourcePath, targetPath: req.targetPath }, ctx), {}),
  isSymlink: (req: { path: string }, ctx: CallContext) => fs.isSymlink({ path: req.path }, ctx),
});

export const filesystemAdapters: GroupAdapters<"filesystem", FilesystemService> = {
  v1alpha1: legacy,
  v1beta1: legacy,
  v1beta2: current,
  v1: current,
  v2alpha1: (fs) => ({
    ...current(fs),
    rmdirContents: async (req: { path: string }, ctx: CallContext) => (await fs.rmdirContents({ path: req.path }, ctx), {}),
  }),
};
