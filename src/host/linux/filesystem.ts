import * as fs from "node:fs/promises";
import type { EntryKind, FilesystemHostApi } from "../../groups/filesystem/host-api.ts";
import { fsError } from "../fs-error.ts";
import { readMountTable } from "./mountinfo.ts";

/** Filesystem host operations on Linux: direct fs calls, no processes. */
export class LinuxFilesystemHost implements FilesystemHostApi {
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

  async mkdirAll(path: string): Promise<void> {
    try {
      await fs.mkdir(path, { recursive: true, mode: 0o755 });
    } catch (err) {
      // Node's recursive mkdir reports ENOENT for other failures of a missing component (EROFS,
      // ENOSPC…): redone one level at a time, the real errno surfaces (and a race that made the
      // directory meanwhile succeeds).
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw fsError(err, "mkdir", path);
      await mkdirLevels(path).catch((real) => {
        throw fsError(real, "mkdir", path);
      });
    }
  }

  async removeDir(path: string): Promise<void> {
    const st = await fs.lstat(path).catch((err) => {
      throw fsError(err, "rmdir", path);
    });
    const remove = st.isSymbolicLink() ? fs.unlink(path) : fs.rmdir(path);
    await remove.catch((err) => {
      throw fsError(err, "rmdir", path);
    });
  }

  async removeAll(path: string): Promise<void> {
    await fs.rm(path, { recursive: true, force: true }).catch((err) => {
      throw fsError(err, "remove", path);
    });
  }

  async readDir(path: string): Promise<string[]> {
    return fs.readdir(path).catch((err) => {
      throw fsError(err, "read directory", path);
    });
  }

  async symlink(target: string, linkPath: string): Promise<void> {
    await fs.symlink(target, linkPath).catch((err) => {
      throw fsError(err, "symlink", linkPath);
    });
  }

  async linkTargetExists(path: string): Promise<boolean> {
    try {
      await fs.stat(path);
      return true;
    } catch {
      return false;
    }
  }

  async isMountPoint(path: string): Promise<boolean> {
    const real = await this.realpath(path);
    if (real === null) return false;
    return (await readMountTable()).some((m) => m.mountPoint === real);
  }
}

/** Creates the missing directories of `path` from the top, one mkdir(2) each (mode 0755); existing ones are fine. */
async function mkdirLevels(path: string): Promise<void> {
  const missing: string[] = [];
  for (let p = path; ; ) {
    if (await fs.lstat(p).then(() => true, () => false)) break;
    missing.unshift(p);
    const parent = p.slice(0, p.lastIndexOf("/")) || "/";
    if (parent === p) break;
    p = parent;
  }
  for (const dir of missing) {
    await fs.mkdir(dir, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "EEXIST") throw err;
    });
  }
}
