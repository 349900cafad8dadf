import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { EntryKind, FilesystemHostApi, RemoveOptions } from "../../groups/filesystem/host-api.ts";
import { stopIfAborted } from "../../util/stop-if-aborted.ts";
import { CsiProxyError, Code } from "../../errors.ts";
import { windowsFsError } from "./windows-fs-error.ts";
import { FILE_ATTRIBUTE_REPARSE_POINT, IO_REPARSE_TAG_MOUNT_POINT } from "../../win32/win32-constants.ts";
import type { Awaitable, Handle, Win32 } from "../../win32/win32.ts";
import { removeTreeWindows } from "./windows-remove-tree.ts";
import { win32Message, WinError } from "../../win32/win32-errors.ts";

/** The deepest ancestor of `p` that exists (followed through symlinks, as Go's os.Stat), or null. */
async function firstExistingAncestor(p: string): Promise<{ path: string; isDirectory: boolean } | null> {
  for (let cur = path.dirname(p); ; cur = path.dirname(cur)) {
    const st = await fs.stat(cur).catch(() => null);
    if (st !== null) return { path: cur, isDirectory: st.isDirectory() };
    if (path.dirname(cur) === cur) return null;
  }
}

/** The Win32 calls the filesystem host needs (a {@link Win32}, or a fake in tests). */
export type ReparseProbe = Awaitable<Pick<Win32, "getFileAttributes" | "reparseTag" | "openEntryNoFollow" | "fileInfo" | "openListing" | "readDirectoryBatch" | "deleteByHandle" | "closeHandle">>;

/** How the recursive deletes make their calls: the Win32 calls, and a wrapper for each Node fs step on a path. */
export interface WalkSteps {
  win32: ReparseProbe;
  step<T>(path: string, op: () => Promise<T>): Promise<T>;
}

/**
 * Filesystem host operations on Windows: Node's fs (libuv over Win32) plus two Win32 calls through
 * koffi. No processes. Failures read as Go's os prints them (`remove <p>: The directory is not
 * empty.`, windows-fs-error.ts), never with a Node errno name.
 *
 * - Node's lstat reports symlinks and drive-letter junctions as symbolic links, and a volume
 *   mount point (a junction to `\??\Volume{GUID}\`) as a plain directory; isMountPoint recognises
 *   those with GetFileAttributesW (FILE_ATTRIBUTE_REPARSE_POINT) + FindFirstFileW's reparse tag
 *   (IO_REPARSE_TAG_MOUNT_POINT), as upstream does since 3c06f01.
 * - removeAll/removeContents act through handles: every ancestor of the path is held open without
 *   FILE_SHARE_DELETE (nobody can rename it or swap it for a junction meanwhile), and the tree is
 *   walked by windows-remove-tree.ts: each entry opened with FILE_FLAG_OPEN_REPARSE_POINT, inspected
 *   and emptied while held, deleted through that handle (FileDispositionInfo), in a bounded number
 *   of handles and names whatever the depth. They never descend into a reparse point: links and
 *   junctions are removed as entries, and a volume mount point is refused (FailedPrecondition)
 *   instead of deleting the mounted volume's data (Node's fs.rm would recurse into it, since lstat
 *   shows it as a directory).
 */
export class WindowsFilesystemHost implements FilesystemHostApi {
  readonly #win32: ReparseProbe;
  /** The recursive deletes' calls (pins and walk): `win32`, each step gated, when composed with a gate. */
  readonly #walk: WalkSteps;
  /** Present when constructed with a local lookup (host/windows/local-lookup.ts). */
  readonly lookupCached?: (path: string) => "present" | "absent" | undefined;

  /**
   * `walk`: the Win32 calls and Node fs steps of removeAll/removeContents, which are not gated as one
   * operation (gated-win32.ts); `win32` and direct steps by default.
   */
  constructor(win32: ReparseProbe, options: { localLookup?: (path: string) => "present" | "absent" | undefined; walk?: WalkSteps } = {}) {
    this.#win32 = win32;
    this.#walk = options.walk ?? { win32, step: (_p, op) => op() };
    if (options.localLookup) this.lookupCached = options.localLookup;
  }

  async lstat(p: string): Promise<EntryKind | null> {
    try {
      const st = await fs.lstat(p);
      return st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "directory" : st.isFile() ? "file" : "other";
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw windowsFsError(err, "CreateFile", p);
    }
  }

  async realpath(p: string): Promise<string | null> {
    try {
      return await fs.realpath(p);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw windowsFsError(err, "resolve", p);
    }
  }

  /**
   * Creates `p` and its missing ancestors. When the deepest existing ancestor is not a directory
   * (symlinks followed), the failure names that ancestor as Go's os.MkdirAll does: `mkdir
   * <ancestor>: The system cannot find the path specified.` (ENOTDIR is ERROR_PATH_NOT_FOUND on
   * Windows), FailedPrecondition. Any other failure names `p` (windows-fs-error.ts).
   */
  async mkdirAll(p: string): Promise<void> {
    await fs.mkdir(p, { recursive: true }).catch(async (err) => {
      const blocker = await firstExistingAncestor(p);
      if (blocker !== null && !blocker.isDirectory) {
        throw new CsiProxyError(Code.FailedPrecondition, `mkdir ${blocker.path}: ${win32Message(WinError.PATH_NOT_FOUND)}`, { cause: err });
      }
      throw windowsFsError(err, "mkdir", p);
    });
  }

  async removeDir(p: string): Promise<void> {
    // RemoveDirectoryW removes an empty directory, or a directory symlink/junction itself.
    const st = await fs.lstat(p).catch((err) => {
      throw windowsFsError(err, "remove", p);
    });
    const remove = st.isSymbolicLink() ? fs.unlink(p).catch(() => fs.rmdir(p)) : fs.rmdir(p);
    await remove.catch((err) => {
      throw windowsFsError(err, "remove", p);
    });
  }

  /**
   * Every ancestor of `p` (drive root first) opened by {@link ReparseProbe.openEntryNoFollow} and
   * held, so none can be renamed or swapped for a link while the caller acts below them. A link
   * or junction among them (the path changed since the policy resolved it): FailedPrecondition,
   * nothing held. A missing ancestor: null, nothing held.
   */
  async #pinAncestors(p: string, walk: WalkSteps = { win32: this.#win32, step: (_p, op) => op() }): Promise<Handle[] | null> {
    const win32 = walk.win32;
    const chain: string[] = [];
    for (let cur = path.dirname(p); ; cur = path.dirname(cur)) {
      chain.unshift(cur);
      if (path.dirname(cur) === cur) break;
    }
    const pins: Handle[] = [];
    try {
      for (const dir of chain) {
        const h = await win32.openEntryNoFollow(dir, false);
        if (h === null) {
          await this.#release(pins);
          return null;
        }
        pins.push(h);
        if (dir !== chain[0] && (await walk.step(dir, () => fs.lstat(dir))).isSymbolicLink()) {
          throw new CsiProxyError(Code.FailedPrecondition, `${dir} is a link or junction now (the path changed since it was checked); refusing to follow it`);
        }
      }
      return pins;
    } catch (err) {
      await this.#release(pins);
      throw err;
    }
  }

  async #release(handles: Handle[]): Promise<void> {
    for (const h of handles.splice(0).reverse()) await this.#walk.win32.closeHandle(h); // closes any handle, gated or not
  }

  /** Never follows a link or junction, never enters a volume mount point (FailedPrecondition); missing is fine. Bounds: src/host/tree-walker.ts. */
  async removeAll(p: string, options?: RemoveOptions): Promise<void> {
    stopIfAborted(options?.signal);
    const pins = await this.#pinAncestors(p, this.#walk);
    if (pins === null) return;
    try {
      await removeTreeWindows(this.#walk.win32, p, false, options?.signal);
    } finally {
      await this.#release(pins);
    }
  }

  /** removeAll of every entry of the directory `p`, which is held meanwhile; `p` itself a link, junction or volume mount point: FailedPrecondition. */
  async removeContents(p: string, options?: RemoveOptions): Promise<void> {
    stopIfAborted(options?.signal);
    const pins = await this.#pinAncestors(p, this.#walk);
    if (pins === null) throw new CsiProxyError(Code.NotFound, `read directory ${p}: no such directory`);
    try {
      await removeTreeWindows(this.#walk.win32, p, true, options?.signal);
    } finally {
      await this.#release(pins);
    }
  }

  async readDir(p: string): Promise<string[]> {
    return fs.readdir(p).catch((err) => {
      throw windowsFsError(err, "open", p);
    });
  }

  /** Created while every ancestor of the link is held (none can be swapped for a junction meanwhile). */
  async symlink(target: string, linkPath: string): Promise<void> {
    const pins = await this.#pinAncestors(linkPath);
    if (pins === null) throw new CsiProxyError(Code.NotFound, `symlink ${linkPath}: the parent directory does not exist`);
    try {
      // Node picks a directory link when the target is a directory (like Go's os.Symlink) and uses
      // SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE.
      await fs.symlink(target, linkPath).catch((err) => {
        throw windowsFsError(err, "symlink", linkPath);
      });
    } finally {
      await this.#release(pins);
    }
  }

  async linkTargetExists(p: string): Promise<boolean> {
    try {
      await fs.stat(p);
      return true;
    } catch {
      return false;
    }
  }

  async isMountPoint(p: string): Promise<boolean> {
    const attrs = await this.#win32.getFileAttributes(p);
    if (attrs === null || (attrs & FILE_ATTRIBUTE_REPARSE_POINT) === 0) return false;
    if ((await this.#win32.reparseTag(p)) !== IO_REPARSE_TAG_MOUNT_POINT) return false;
    // the mounted volume is reachable (upstream: Readlink, then Lstat of the target)
    return this.linkTargetExists(p);
  }
}
