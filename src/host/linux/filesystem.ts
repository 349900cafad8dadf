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
    await fs.mkdir(path, { recursive: true, mode: 0o755 }).catch((err) => {
      throw fsError(err, "mkdir", path);
    });
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
