import * as path from "node:path";
import { inCallScope } from "../../util/call-scope.ts";
import type { FilesystemService } from "./types.ts";
import type { EntryKind, FilesystemHostApi } from "./host-api.ts";
import type { PathPolicy } from "../../policy/path-policy.ts";
import { alreadyExists, failedPrecondition, invalidArgument, notFound, permissionDenied } from "../../errors.ts";
import { FragmentError, fragmentError } from "../../compat/driver-fragments.ts";

/**
 * The filesystem group: every path goes through the path policy first (InvalidArgument for
 * malformed paths, PermissionDenied outside the allowed directories), then to the host.
 * Decisions beyond upstream: IsSymlink is validated too (upstream lets it probe any path), and the
 * allowed directories themselves cannot be removed or emptied.
 * Texts drivers match (compat/driver-fragments.ts): a non-absolute path carries
 * `not an absolute Windows path` everywhere except IsSymlink (upstream never validates there, and
 * democratic-csi would read the text as "no link"); Rmdir (force=false) of a missing path carries
 * `The system cannot find the file specified`, or `…the path specified` when the parent is missing
 * too (both NotFound).
 */
export function createFilesystemService(deps: { host: FilesystemHostApi; policy: PathPolicy; platform: "linux" | "win32" }): FilesystemService {
  const { host, policy } = deps;
  const pathApi = deps.platform === "win32" ? path.win32 : path.posix;
  const dirname = (p: string): string => pathApi.dirname(p);

  const win32 = deps.platform === "win32";

  /**
   * Go's os text for a missing `p` on Windows: `<op> <p>: ` + Windows' message for
   * ERROR_FILE_NOT_FOUND, or ERROR_PATH_NOT_FOUND when the parent is missing too or not a directory.
   */
  async function goMissing(op: string, p: string, checked: string): Promise<string> {
    const parentPresent = (await host.lstat(dirname(checked))) === "directory";
    return `${op} ${p}: ${parentPresent ? "The system cannot find the file specified." : "The system cannot find the path specified."}`;
  }

  /** Destructive operations never act on an allowed directory itself. */
  async function refuseRoot(resolved: string, what: string) {
    if (await policy.isAllowedRoot(resolved)) throw permissionDenied(`refusing to ${what} ${resolved}: it is an allowed directory itself`);
  }

  return inCallScope({
    async pathExists({ path: p }) {
      // No host round trip in the common case: the kernel's caches answer synchronously (bounded, see
      // host-api.ts lookupCached) whether the lexical path exists with no link before its final
      // component, which also makes it its own canonical form, so the policy needs no resolution.
      // Otherwise one host call when possible: a realpath of the lexical path that returns it unchanged
      // proves the same. Else the lstat of the lexical path runs concurrently with the policy's
      // resolution and answers when the policy confirms that path (the same entry); else the checked
      // path is lstat'ed.
      let early: { path: string; kind: Promise<EntryKind | "canonical" | null> } | undefined;
      const checked = await policy.check(p, {
        alongside: (lexical) => {
          const cached = host.lookupCached?.(lexical);
          if (cached !== undefined) {
            early = { path: lexical, kind: Promise.resolve(cached === "present" ? "canonical" : null) };
            return Promise.resolve(true);
          }
          const canonical = host.realpath(lexical).then((r) => r === lexical, () => false);
          const kind = canonical.then((known) => (known ? ("canonical" as const) : host.lstat(lexical)));
          kind.catch(() => {}); // its failure matters only when it is used below
          early = { path: lexical, kind };
          return canonical;
        },
      });
      const kind = early !== undefined && early.path === checked ? await early.kind : await host.lstat(checked);
      return { exists: kind !== null };
    },

    async mkdir({ path: p }) {
      const checked = await policy.check(p, { followFinal: true });
      const kind = await host.lstat(checked);
      if (kind !== null && kind !== "directory") {
        // Windows: Go's MkdirAll answers ENOTDIR, which is ERROR_PATH_NOT_FOUND there
        throw alreadyExists(win32 ? `mkdir ${p}: The system cannot find the path specified.` : `mkdir ${p}: exists and is not a directory`);
      }
      if (kind === null) await host.mkdirAll(checked);
    },

    async rmdir({ path: p, force }, options) {
      const checked = await policy.check(p);
      await refuseRoot(checked, "remove");
      if (force) {
        if ((await host.lstat(checked)) === null) return; // nothing there (also under a file): success, as Go's RemoveAll
        // Linux (beyond upstream, where RemoveDirectory drops a volume mount point's reparse point without
        // entering it): a recursive delete never enters a mounted filesystem; unmount it first.
        if (deps.platform === "linux" && (await host.lstat(checked)) === "directory" && (await host.isMountPoint(checked))) {
          throw failedPrecondition(`refusing to remove ${p}: it is a mount point; unmount it first (UnmountVolume)`);
        }
        return host.removeAll(checked, options);
      }
      const kind = await host.lstat(checked);
      if (kind === null) {
        // under a file, Windows answers ERROR_PATH_NOT_FOUND as for a missing parent
        const parentPresent = (await host.lstat(dirname(checked))) === "directory";
        throw parentPresent
          ? fragmentError("rmdir-missing", `remove ${p}: The system cannot find the file specified.`)
          : fragmentError("rmdir-parent-missing", `remove ${p}: The system cannot find the path specified.`);
      }
      // a file (not a link): removed, as upstream's os.Remove does; the entry itself, never followed
      if (kind === "file") return host.removeAll(checked, options);
      await host.removeDir(checked);
    },

    async rmdirContents({ path: p }, options) {
      const checked = await policy.check(p, { followFinal: true });
      await refuseRoot(checked, "empty");
      const kind = await host.lstat(checked);
      if (kind === null) throw notFound(win32 ? await goMissing("open", p, checked) : `rmdir contents ${p}: no such directory`);
      if (win32 && kind === "file") throw failedPrecondition(`readdir ${p}: The system cannot find the path specified.`);
      await host.removeContents(checked, options);
    },

    async createSymlink({ sourcePath, targetPath }) {
      const link = await policy.check(targetPath);
      // The source's own final component is not followed (upstream links to source_path as given): a
      // publish link to an SMB staging link, whose target is the share (outside the allowed dirs), is
      // how csi-driver-smb, AzureFile and Trident publish. It grants nothing the source link does not.
      const target = await policy.check(sourcePath);
      if ((await host.lstat(link)) !== null) {
        throw alreadyExists(win32 ? `symlink ${sourcePath} ${targetPath}: Cannot create a file when that file already exists.` : `create symlink ${targetPath}: path already exists`);
      }
      await host.symlink(target, link);
    },

    async isSymlink({ path: p }) {
      const checked = await policy.check(p).catch((e: unknown) => {
        if (e instanceof FragmentError && e.situation === "path-not-absolute") throw invalidArgument(`is symlink ${p}: the path must be absolute`);
        throw e;
      });
      const kind = await host.lstat(checked);
      if (kind === null) throw notFound(win32 ? await goMissing("CreateFile", p, checked) : `is symlink ${p}: no such file or directory`);
      if (kind === "symlink") return { isSymlink: await host.linkTargetExists(checked) };
      return { isSymlink: kind === "directory" && (await host.isMountPoint(checked)) };
    },
  });
}
