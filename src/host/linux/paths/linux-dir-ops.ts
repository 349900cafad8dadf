/**
 * The directory operations of the recursive delete (src/host/tree-walker.ts) on Linux, through
 * directory handles (dir-handle.ts): every entry is named relative to a held directory
 * (`/proc/self/fd/<fd>/<name>`), directories are opened `O_NOFOLLOW`, so a symbolic link is always
 * removed itself and never followed, and a parent swapped for a link cannot redirect a step.
 *
 * - Identity: dev + ino + mount id; a child whose mount id differs from its parent's is a mount point
 *   (bind mounts included): reported "mount", never entered.
 * - Listing: a directory whose size when entered (st_size: bytes of its entries on ext4/xfs, about 20
 *   per entry on tmpfs) is at most {@link SMALL_DIR_BYTES} is read whole in one call; larger ones
 *   through a directory stream, stopped at `want` names and closed before the pass returns.
 * - {@link UNLINKS} unlinks by name run at once in the directory being worked on.
 * - A level is re-entered from its child by `..`; the walk compares its identity.
 */
import * as fs from "node:fs/promises";
import { Code, CsiProxyError } from "../../../errors.ts";
import { fsError } from "../../fs-error.ts";
import { leftInDir } from "../../remove-summary.ts";
import type { DirOps, ListedEntry, Opened } from "../../tree-walker.ts";
import { DirHandle, openDirAt, openParentOf, whyNotAt } from "./dir-handle.ts";

/** Unlinks in flight within the directory being worked on. */
export const UNLINKS = 8;
/** A directory at most this big (st_size) is listed whole in one call; larger ones `want` names per pass. */
export const SMALL_DIR_BYTES = 64 * 1024;

/** What the walk records of a directory when it enters it. */
export interface LinuxDirId {
  dev: bigint;
  ino: bigint;
  mountId: number;
  /** st_size ≤ SMALL_DIR_BYTES when entered. */
  small: boolean;
}

const errno = (e: unknown) => (e as NodeJS.ErrnoException | null)?.code;

/** The identity of the held directory `dir` (fstat), shown as `shown` in a failure. */
export async function linuxDirId(dir: DirHandle, shown: string): Promise<LinuxDirId> {
  const st = await dir.stat().catch((err) => {
    throw fsError(err, "stat", shown);
  });
  return { dev: st.dev, ino: st.ino, mountId: dir.mountId, small: st.size <= SMALL_DIR_BYTES };
}

/** Reads up to `want` entries of `dir` (none of `skip`); `end`: the directory was read to its end. */
async function list(dir: DirHandle, id: LinuxDirId, want: number, skip: ReadonlySet<string> | null, shown: string, stop: () => void): Promise<{ entries: ListedEntry[]; end: boolean }> {
  const entries: ListedEntry[] = [];
  let end = false;
  await dir.use(undefined, async (p) => {
    if (id.small) {
      const all = await fs.readdir(p, { withFileTypes: true }).catch((err) => {
        throw fsError(err, "read directory", shown);
      });
      for (const e of all) {
        if (entries.length >= want) break;
        if (!skip?.has(e.name)) entries.push({ name: e.name, dir: e.isDirectory() });
      }
      end = entries.length < want;
      return;
    }
    const d = await fs.opendir(p, { bufferSize: Math.min(want, 1024) }).catch((err) => {
      throw fsError(err, "read directory", shown);
    });
    try {
      while (entries.length < want) {
        stop();
        const e = await d.read().catch((err) => {
          throw fsError(err, "read directory", shown);
        });
        if (e === null) {
          end = true;
          break;
        }
        if (!skip?.has(e.name)) entries.push({ name: e.name, dir: e.isDirectory() });
      }
    } finally {
      d.closeSync(); // a directory stream's close never waits for the filesystem
    }
  });
  return { entries, end };
}

async function openChild(parent: DirHandle, _parentId: LinuxDirId, name: string, shown: string): Promise<Opened<DirHandle, LinuxDirId>> {
  let child: DirHandle | null;
  try {
    child = await openDirAt(parent, name, name);
  } catch (err) {
    if (err instanceof CsiProxyError && err.code === Code.NotFound) return { kind: "missing" };
    throw new CsiProxyError(err instanceof CsiProxyError ? err.code : Code.Internal, `open ${shown}: ${(err as Error).message}`, { cause: err });
  }
  if (child === null) return { kind: "other" }; // a link or a file
  if (child.mountId !== parent.mountId) {
    await child.close();
    return { kind: "mount" };
  }
  try {
    return { kind: "dir", h: child, id: await linuxDirId(child, shown) };
  } catch (err) {
    await child.close();
    throw err;
  }
}

/** Linux {@link DirOps} over {@link DirHandle}s (module doc). */
export const linuxDirOps: DirOps<DirHandle, LinuxDirId> = {
  sep: "/",
  unlinksInFlight: UNLINKS,
  same: (a, b) => a.dev === b.dev && a.ino === b.ino && a.mountId === b.mountId,
  list,
  openChild,
  unlink: (parent, name, shown) =>
    parent.use(name, (p) => fs.unlink(p)).then(() => "gone" as const, (err: unknown) => {
      if (errno(err) === "ENOENT") return "missing" as const;
      if (errno(err) === "EISDIR") return "dir" as const; // a directory after all (or now): walked below
      throw fsError(err, "remove", shown);
    }),
  // rmdir by name in the parent needs nothing of the child's handle: both run at once, both settle before it returns
  async removeDir(parent, name, child, shown) {
    const [r] = await Promise.all([
      parent.use(name, (p) => fs.rmdir(p)).then(() => "gone" as const, (err: unknown) => {
        if (errno(err) === "ENOENT") return "missing" as const;
        if (errno(err) === "ENOTDIR") return "link" as const; // swapped for a link after it was emptied: the link itself goes
        if (errno(err) === "ENOTEMPTY" || errno(err) === "EEXIST") {
          return new CsiProxyError(Code.FailedPrecondition, `remove ${shown}: directory not empty (entries were created in it while it was being removed)`, { cause: err });
        }
        return fsError(err, "remove", shown);
      }),
      child.close(),
    ]);
    if (r instanceof CsiProxyError) throw r;
    return r;
  },
  async reopen(child, shown) {
    const dir = await openParentOf(child, "..").catch((err: unknown) => {
      throw new CsiProxyError(err instanceof CsiProxyError ? err.code : Code.Internal, `re-enter ${shown}: ${(err as Error).message}`, { cause: err });
    });
    try {
      return { h: dir, id: await linuxDirId(dir, shown) };
    } catch (err) {
      await dir.close();
      throw err;
    }
  },
  whyNotNamed: (h, id, shown) => whyNotAt(h, shown, id.dev, id.ino),
  leftIn: async (h, _shown) => ({ there: true, left: await h.use(undefined, (dp) => leftInDir(dp)).catch(() => "what is left in it could not be listed") }),
  close: (h) => h.close(),
};
