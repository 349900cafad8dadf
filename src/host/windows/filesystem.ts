import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { EntryKind, FilesystemHostApi } from "../../groups/filesystem/host-api.ts";
import { CsiProxyError, Code } from "../../errors.ts";
import { fsError } from "../fs-error.ts";
import { FILE_ATTRIBUTE_REPARSE_POINT, IO_REPARSE_TAG_MOUNT_POINT, type Awaitable, type Win32 } from "../../win32/win32.ts";

/** The Win32 calls the filesystem host needs (a {@link Win32}, or a fake in tests). */
export type ReparseProbe = Awaitable<Pick<Win32, "getFileAttributes" | "reparseTag">>;

/**
 * Filesystem host operations on Windows: Node's fs (libuv over Win32) plus two Win32 calls through
 * koffi. No processes.
 *
 * - Node's lstat reports symlinks and drive-letter junctions as symbolic links, and a volume
 *   mount point (a junction to `\??\Volume{GUID}\`) as a plain directory; isMountPoint recognises
 *   those with GetFileAttributesW (FILE_ATTRIBUTE_REPARSE_POINT) + FindFirstFileW's reparse tag
 *   (IO_REPARSE_TAG_MOUNT_POINT), as upstream does since 3c06f01.
 * - removeAll never descends into a reparse point: links and junctions are removed as entries, and
 *   a volume mount point is refused (FailedPrecondition) instead of deleting the mounted volume's
 *   data (Node's fs.rm would recurse into it, since lstat shows it as a directory).
 */
export class WindowsFilesystemHost implements FilesystemHostApi {
  readonly #win32: ReparseProbe;

  constructor(win32: ReparseProbe) {
    this.#win32 = win32;
  }

  async lstat(p: string): Promise<EntryKind | null> {
    try {
      const st = await fs.lstat(p);
      return st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "directory" : st.isFile() ? "file" : "other";
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw fsError(err, "stat", p);
    }
  }

  async realpath(p: string): Promise<string | null> {
    try {
      return await fs.realpath(p);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw fsError(err, "resolve", p);
    }
  }

  async mkdirAll(p: string): Promise<void> {
    await fs.mkdir(p, { recursive: true }).catch((err) => {
      throw fsError(err, "mkdir", p);
    });
  }

  async removeDir(p: string): Promise<void> {
    // RemoveDirectoryW removes an empty directory, or a directory symlink/junction itself.
    const st = await fs.lstat(p).catch((err) => {
      throw fsError(err, "rmdir", p);
    });
    const remove = st.isSymbolicLink() ? fs.unlink(p).catch(() => fs.rmdir(p)) : fs.rmdir(p);
    await remove.catch((err) => {
      throw fsError(err, "rmdir", p);
    });
  }

  async removeAll(p: string): Promise<void> {
    let st;
    try {
      st = await fs.lstat(p);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw fsError(err, "remove", p);
    }
    if (st.isSymbolicLink()) {
      // a file or directory link / junction: remove the link, never the target
      await fs.unlink(p).catch(() => fs.rmdir(p)).catch((err) => {
        throw fsError(err, "remove", p);
      });
      return;
    }
    if (!st.isDirectory()) {
      await fs.unlink(p).catch((err) => {
        throw fsError(err, "remove", p);
      });
      return;
    }
    const attrs = await this.#win32.getFileAttributes(p);
    if (attrs !== null && (attrs & FILE_ATTRIBUTE_REPARSE_POINT) !== 0) {
      if ((await this.#win32.reparseTag(p)) === IO_REPARSE_TAG_MOUNT_POINT) {
        throw new CsiProxyError(Code.FailedPrecondition, `remove ${p}: a volume is mounted there; unmount it first`);
      }
      await fs.rmdir(p).catch((err) => {
        throw fsError(err, "remove", p);
      });
      return;
    }
    for (const name of await this.readDir(p)) await this.removeAll(path.join(p, name));
    await fs.rmdir(p).catch((err) => {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw fsError(err, "remove", p);
    });
  }

  async readDir(p: string): Promise<string[]> {
    return fs.readdir(p).catch((err) => {
      throw fsError(err, "read directory", p);
    });
  }

  async symlink(target: string, linkPath: string): Promise<void> {
    // Node picks a directory link when the target is a directory (like Go's os.Symlink) and uses
    // SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE.
    await fs.symlink(target, linkPath).catch((err) => {
      throw fsError(err, "symlink", linkPath);
    });
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
