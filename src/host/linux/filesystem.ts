import * as fs from "node:fs/promises";
import type { EntryKind, FilesystemHostApi, RemoveOptions } from "../../groups/filesystem/host-api.ts";
import { fsError } from "../fs-error.ts";
import { processMountIndex, type MountIndex } from "./mounts/mount-index.ts";
import { mkdirAllNoFollow, withParent } from "./paths/dir-handle.ts";
import { removeContents, removeTree } from "./paths/remove-tree.ts";
import { symlinkAt } from "./paths/symlink-at.ts";
import { openCachedLookup, type CachedLookup } from "./paths/cached-lookup.ts";

/** Filesystem host operations on Linux: direct fs calls, no processes. */
export class LinuxFilesystemHost implements FilesystemHostApi {
  #cached: CachedLookup | null | undefined;
  readonly #openCachedLookup: () => Promise<CachedLookup | null>;
  readonly #mountIndex: () => Promise<MountIndex>;

  /**
   * The cached lookup is loaded on the first lookupCached call (koffi stays out of an idle daemon).
   * `mountIndex`: this process's mount table, indexed and as fresh as reading it now (mount-index.ts).
   */
  constructor(deps: { openCachedLookup?: () => Promise<CachedLookup | null>; mountIndex?: () => Promise<MountIndex> } = {}) {
    this.#openCachedLookup = deps.openCachedLookup ?? openCachedLookup;
    this.#mountIndex = deps.mountIndex ?? (() => processMountIndex());
  }

  /** Undefined until the lookup is loaded (the first call starts loading it) and where it cannot work. */
  lookupCached(path: string): "present" | "absent" | undefined {
    if (this.#cached) return this.#cached(path);
    if (this.#cached === undefined) {
      this.#cached = null; // loading: answer undefined meanwhile
      void this.#openCachedLookup().then(
        (l) => void (this.#cached = l),
        () => {},
      );
    }
    return undefined;
  }

  async lstat(path: string): Promise<EntryKind | null> {
    try {
      const st = await fs.lstat(path);
      return st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "directory" : st.isFile() ? "file" : "other";
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT" || (err as NodeJS.ErrnoException).code === "ENOTDIR") return null;
      throw fsError(err, "stat", path);
    }
  }

  async realpath(path: string): Promise<string | null> {
    try {
      return await fs.realpath(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw fsError(err, "resolve", path);
    }
  }

  /** Each missing component created inside its held parent, never through a link (dir-handle.ts). */
  mkdirAll(path: string): Promise<void> {
    return mkdirAllNoFollow(path, 0o755);
  }

  /** rmdir/unlink of the final name inside its parent, opened without following links. */
  async removeDir(path: string): Promise<void> {
    await withParent(path, async (parent, name) => {
      const st = await fs.lstat(parent.at(name)).catch((err) => {
        throw fsError(err, "rmdir", path);
      });
      const remove = st.isSymbolicLink() ? fs.unlink(parent.at(name)) : fs.rmdir(parent.at(name));
      await remove.catch((err) => {
        throw fsError(err, "rmdir", path);
      });
    });
  }

  /** Through directory handles, never following a link or entering a mount point (remove-tree.ts). */
  removeAll(path: string, options?: RemoveOptions): Promise<void> {
    return removeTree(path, options);
  }

  removeContents(path: string, options?: RemoveOptions): Promise<void> {
    return removeContents(path, options);
  }

  async readDir(path: string): Promise<string[]> {
    return fs.readdir(path).catch((err) => {
      throw fsError(err, "read directory", path);
    });
  }

  /** Created by name inside the link's parent, opened without following links. */
  symlink(target: string, linkPath: string): Promise<void> {
    return symlinkAt(target, linkPath);
  }

  async linkTargetExists(path: string): Promise<boolean> {
    try {
      await fs.stat(path);
      return true;
    } catch {
      return false;
    }
  }

  /** One realpath, then one lookup in the indexed mount table (re-read only after the kernel reported a mount change). */
  async isMountPoint(path: string): Promise<boolean> {
    const real = await this.realpath(path);
    if (real === null) return false;
    return (await this.#mountIndex()).at(real).length > 0;
  }
}
