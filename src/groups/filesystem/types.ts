import type { CallOptions } from "../../util/call-scope.ts";
import type { RemoveOptions } from "./host-api.ts";

/**
 * Version-agnostic filesystem API (newest shapes, v2alpha1). Every path must lie inside the
 * kubelet path or a working directory (see policy/path-policy.ts); violations are PermissionDenied,
 * malformed paths InvalidArgument.
 */
export interface FilesystemService {
  /** True when something exists at `path` (a dangling symlink counts). Not idempotency-relevant. */
  pathExists(req: { path: string }, options?: CallOptions): Promise<{ exists: boolean }>;
  /** Creates `path` and its parents (mode 0755). Idempotent for an existing directory; an existing file is AlreadyExists. */
  mkdir(req: { path: string }, options?: CallOptions): Promise<void>;
  /**
   * Removes the directory at `path`. `force`: recursive and idempotent (missing path succeeds), never
   * follows symlinks. Without `force`: the directory must exist (NotFound) and be empty (FailedPrecondition).
   */
  rmdir(req: { path: string; force: boolean }, options?: RemoveOptions): Promise<void>;
  /** Removes everything inside the directory `path`, keeping it; never follows symlinks. Missing dir: NotFound. */
  rmdirContents(req: { path: string }, options?: RemoveOptions): Promise<void>;
  /** Creates a symlink at `targetPath` pointing to `sourcePath`. Existing `targetPath`: AlreadyExists. */
  createSymlink(req: { sourcePath: string; targetPath: string }, options?: CallOptions): Promise<void>;
  /** True when `path` is a symlink or mount point whose target exists. Missing path: NotFound. */
  isSymlink(req: { path: string }, options?: CallOptions): Promise<{ isSymlink: boolean }>;
}
