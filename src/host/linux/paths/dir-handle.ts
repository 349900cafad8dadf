/**
 * Directory handles on Linux: a path is resolved once, component by component with
 * `O_DIRECTORY|O_NOFOLLOW`, into an open directory; every later step names entries relative to that
 * handle as `/proc/self/fd/<fd>/<name>`, which the kernel resolves through the magic link to exactly
 * the held directory (a rename or symlink swap of any parent after the open changes nothing).
 *
 * Handles are `O_PATH` descriptors: they pin the directory for path resolution only; listing goes
 * through `/proc/self/fd/<fd>` (which needs read permission on that directory itself).
 *
 * Contract:
 * - {@link openDirNoFollow} refuses any symbolic link on the way with FailedPrecondition (the paths
 *   given here were already canonicalised by the path policy, so a link there means the tree changed
 *   since the check); a missing component is NotFound; a non-directory is FailedPrecondition.
 * - Every handle records its mount id (`mnt_id` of /proc/self/fdinfo); a child whose mount id differs
 *   from its parent's is a mount point (bind mounts of the same filesystem included).
 * - Handles must be closed by the caller (`close`, idempotent).
 */
import { constants, readFileSync } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { Code, CsiProxyError } from "../../../errors.ts";
import { fsError } from "../../fs-error.ts";

/** O_PATH (Linux, the generic value used on x86-64 and arm64): a handle needing only search permission. */
const O_PATH = 0o10000000;
/** A directory handle: never a link (ENOTDIR), no read permission needed on ancestors (0711 dirs). */
const DIR_FLAGS = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * An open directory, anchored: names below it never pass through a symbolic link or a rename.
 * Lifetime: `/proc/self/fd/<fd>` strings exist only inside {@link DirHandle.use}; `close` waits until
 * every `use` has settled, and a `use` or `at` after `close` began is refused (Internal), so no
 * operation can reach a descriptor number after it was closed and possibly reused.
 */
export class DirHandle {
  readonly #file: fs.FileHandle;
  /** The path this directory had when it was opened (for messages and mount-table comparisons). */
  readonly path: string;
  /** The kernel's id of the mount the directory lies on. */
  readonly mountId: number;
  #inFlight = 0;
  #closing: Promise<void> | undefined;
  #idle: (() => void) | undefined;

  constructor(file: fs.FileHandle, shownPath: string, mountId: number) {
    this.#file = file;
    this.path = shownPath;
    this.mountId = mountId;
  }

  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * `/proc/self/fd/<fd>` (the directory itself) or `/proc/self/fd/<fd>/<name>` (an entry in it), for
   * an operation the caller awaits before it closes this handle. Throws Internal once closing began.
   */
  at(name?: string): string {
    if (this.#closing !== undefined) throw new CsiProxyError(Code.Internal, `directory handle of ${this.path} used after close`);
    const fd = this.#file.fd;
    return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
  }

  /** Runs `op` on `at(name)`; `close` waits for it. */
  async use<T>(name: string | undefined, op: (p: string) => Promise<T>): Promise<T> {
    const p = this.at(name);
    this.#inFlight++;
    try {
      return await op(p);
    } finally {
      if (--this.#inFlight === 0) this.#idle?.();
    }
  }

  /** fstat of the held directory (device and inode as bigints). */
  stat(): Promise<import("node:fs").BigIntStats> {
    return this.use(undefined, () => this.#file.stat({ bigint: true }));
  }

  /** Where the held directory is now (it may have been renamed since it was opened). */
  async currentPath(): Promise<string> {
    return this.use(undefined, (p) => fs.readlink(p));
  }

  /** Idempotent; resolves once every {@link use} has settled and the descriptor is closed. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
      await this.#file.close().catch(() => {});
    })();
    return this.#closing;
  }
}

/**
 * The mount id of an open descriptor (Linux ≥ 3.15), from /proc/self/fdinfo. Read synchronously:
 * procfs answers from memory and never waits for a filesystem; the caller owns `fd` for the call.
 */
export function mountIdOf(fd: number): number {
  const info = readFileSync(`/proc/self/fdinfo/${fd}`, "utf8");
  const m = /^mnt_id:\s*(\d+)/m.exec(info);
  if (!m) throw new CsiProxyError(Code.Internal, `no mnt_id in /proc/self/fdinfo/${fd}`);
  return Number(m[1]);
}

/**
 * Whether the held directory `dir` (recorded as `dev`/`ino` when it was opened) is still the
 * directory the absolute, canonical path `p` names: it is at `p` now (its current path, as the kernel
 * shows it, is `p`: not renamed away, not reached through a link) and `p` opens, without following a
 * link at its end, to the same dev + ino on the same mount (not replaced by another directory, a bind
 * mount or a link). Null when it is; otherwise why not (for a message). Never throws.
 */
export async function whyNotAt(dir: DirHandle, p: string, dev: bigint, ino: bigint): Promise<string | null> {
  const now = await dir.currentPath().catch(() => null);
  if (now !== p) return now === null ? "it can no longer be located" : `it is now at ${now}`;
  let file: fs.FileHandle;
  try {
    file = await fs.open(p, DIR_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "ELOOP" || code === "ENOTDIR" ? `${p} is a symbolic link or not a directory now` : `${p} cannot be opened (${code})`;
  }
  try {
    const st = await file.stat({ bigint: true });
    if (st.dev !== dev || st.ino !== ino) return `${p} is another directory now`;
    if (mountIdOf(file.fd) !== dir.mountId) return `${p} is on another mount now`;
    return null;
  } catch (err) {
    return `${p} cannot be checked (${(err as Error).message})`;
  } finally {
    await file.close().catch(() => {});
  }
}

const linkSwapped = (shown: string) =>
  new CsiProxyError(Code.FailedPrecondition, `${shown} is a symbolic link or not a directory now (the path changed since it was checked); refusing to follow it`);

/** A just-opened directory as a handle shown as `shown`; the file is closed when that fails (no mount id). */
async function adopt(file: fs.FileHandle, shown: string): Promise<DirHandle> {
  try {
    return new DirHandle(file, shown, mountIdOf(file.fd));
  } catch (err) {
    await file.close().catch(() => {});
    throw err;
  }
}

/**
 * Opens `name` inside `parent` without following a link, as a handle shown as `shown`. Resolves
 * null when the entry is a symbolic link or not a directory (ELOOP/ENOTDIR), throws coded errors
 * otherwise (ENOENT → NotFound).
 */
export async function openDirAt(parent: DirHandle, name: string, shown: string): Promise<DirHandle | null> {
  let file: fs.FileHandle;
  try {
    file = await parent.use(name, (p) => fs.open(p, DIR_FLAGS));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "ENOTDIR") return null;
    throw fsError(err, "open", shown);
  }
  return adopt(file, shown);
}

/** The parent of the held directory `child` (by `..`), shown as `shown`; the caller checks it is the one it expects. */
export async function openParentOf(child: DirHandle, shown: string): Promise<DirHandle> {
  const file = await child.use("..", (p) => fs.open(p, DIR_FLAGS)).catch((err) => {
    throw fsError(err, "open", shown);
  });
  return adopt(file, shown);
}

/**
 * Opens `name` inside `parent` without following a link. Resolves null when the entry is a symbolic
 * link or not a directory (ELOOP/ENOTDIR), throws coded errors otherwise (ENOENT → NotFound).
 */
export function openChildDir(parent: DirHandle, name: string): Promise<DirHandle | null> {
  return openDirAt(parent, name, path.posix.join(parent.path, name));
}

/**
 * Opens the absolute, canonical `dir` from `/` one component at a time, never following a symbolic
 * link (FailedPrecondition when one is met). Mounts on the way are crossed (the path names them).
 */
export async function openDirNoFollow(dir: string): Promise<DirHandle> {
  if (!path.posix.isAbsolute(dir)) throw new CsiProxyError(Code.Internal, `openDirNoFollow needs an absolute path: ${dir}`);
  const rootFile = await fs.open("/", DIR_FLAGS);
  let rootMount: number;
  try {
    rootMount = mountIdOf(rootFile.fd);
  } catch (e) {
    await rootFile.close();
    throw e;
  }
  let cur = new DirHandle(rootFile, "/", rootMount);
  try {
    for (const name of dir.split("/").filter((c) => c !== "" && c !== ".")) {
      if (name === "..") throw new CsiProxyError(Code.Internal, `openDirNoFollow needs a normalised path: ${dir}`);
      const next = await openChildDir(cur, name);
      if (next === null) throw linkSwapped(path.posix.join(cur.path, name));
      await cur.close();
      cur = next;
    }
    return cur;
  } catch (err) {
    await cur.close();
    throw err;
  }
}

/** Runs `fn` with the parent directory of `p` opened by {@link openDirNoFollow}, and the final name. */
export async function withParent<T>(p: string, fn: (parent: DirHandle, name: string) => Promise<T>): Promise<T> {
  const name = path.posix.basename(p);
  if (name === "" || p === "/") throw new CsiProxyError(Code.InvalidArgument, `${p} has no parent directory`);
  const parent = await openDirNoFollow(path.posix.dirname(p));
  try {
    return await fn(parent, name);
  } finally {
    await parent.close();
  }
}

/**
 * mkdir -p through handles: the deepest existing ancestor of the absolute, canonical `dir` is opened
 * without following links, then each missing component is created (mode `mode`, subject to the umask)
 * inside the held parent and opened `O_NOFOLLOW` before the next one. An existing directory is fine;
 * a link met anywhere FailedPrecondition; a non-directory in the way AlreadyExists.
 */
export async function mkdirAllNoFollow(dir: string, mode: number): Promise<void> {
  const names = dir.split("/").filter((c) => c !== "" && c !== ".");
  const rootFile = await fs.open("/", DIR_FLAGS);
  let cur = new DirHandle(rootFile, "/", 0);
  try {
    for (const name of names) {
      let next = await openChildDir(cur, name).catch((err) => {
        if (err instanceof CsiProxyError && err.code === Code.NotFound) return undefined;
        throw err;
      });
      if (next === undefined) {
        await fs.mkdir(cur.at(name), { mode }).catch((err) => {
          if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw fsError(err, "mkdir", path.posix.join(cur.path, name));
        });
        next = await openChildDir(cur, name);
      }
      if (next === null) {
        const st = await fs.lstat(cur.at(name)).catch(() => null);
        const shown = path.posix.join(cur.path, name);
        if (st && !st.isSymbolicLink() && !st.isDirectory()) throw new CsiProxyError(Code.AlreadyExists, `mkdir ${shown}: exists and is not a directory`);
        throw linkSwapped(shown);
      }
      await cur.close();
      cur = next;
    }
  } finally {
    await cur.close();
  }
}
