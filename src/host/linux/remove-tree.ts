/**
 * Recursive removal on Linux through directory handles (dir-handle.ts): the tree is walked with
 * `O_NOFOLLOW` opens relative to held directories, entries are unlinked by name inside the held
 * directory, so a symbolic link is always removed itself and never followed, and a parent swapped for
 * a link while the removal runs cannot redirect it.
 *
 * Mount points (an entry whose mount id differs from its directory's, bind mounts included) are
 * never entered and never removed:
 * - before anything is deleted, the mount table is read: a mount at or below the path →
 *   FailedPrecondition naming it, nothing changed (unmount it first);
 * - a mount that appears during the walk is skipped (the walk stops at its boundary) and the call
 *   ends FailedPrecondition naming it, with everything else below the path removed.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { Code, CsiProxyError, failedPrecondition } from "../../errors.ts";
import { fsError } from "../fs-error.ts";
import { DirHandle, openChildDir, withParent } from "./dir-handle.ts";
import { readMountTable } from "./mountinfo.ts";

/** Entries removed concurrently within one directory. */
const BATCH = 32;

const errno = (e: unknown) => (e as NodeJS.ErrnoException | null)?.code;
const isWithin = (child: string, parent: string) => parent === "/" || child === parent || child.startsWith(parent + "/");

/** FailedPrecondition when anything is mounted at or below `p` (per the mount table, now). */
async function refuseMountsBelow(p: string, what: string): Promise<void> {
  const mounts = (await readMountTable()).filter((m) => isWithin(m.mountPoint, p)).map((m) => m.mountPoint);
  if (mounts.length > 0) {
    throw failedPrecondition(`refusing to ${what} ${p}: ${[...new Set(mounts)].join(", ")} ${mounts.length === 1 ? "is a mount point" : "are mount points"}; unmount first`);
  }
}

const stoppedAt = (p: string, what: string, skipped: string[]) =>
  failedPrecondition(`${what} ${p}: stopped at mount point${skipped.length === 1 ? "" : "s"} ${skipped.join(", ")} (not entered, not removed); unmount first`);

/** Tries per entry when it keeps changing between a directory and a non-directory under us. */
const MAX_TRIES = 8;

/** Removes the entry `name` of `dir` (recursively for a directory); a missing entry is fine. */
async function removeEntry(dir: DirHandle, name: string, looksLikeDir: boolean, skipped: string[]): Promise<void> {
  const entry = dir.at(name);
  const shown = path.posix.join(dir.path, name);
  let asDir = looksLikeDir;
  for (let tries = 0; tries < MAX_TRIES; tries++, asDir = !asDir) {
    if (!asDir) {
      try {
        await fs.unlink(entry);
        return;
      } catch (err) {
        const code = errno(err);
        if (code === "ENOENT") return;
        if (code !== "EISDIR") throw fsError(err, "remove", shown);
        continue; // a directory: open it
      }
    }
    let child: DirHandle | null;
    try {
      child = await openChildDir(dir, name);
    } catch (err) {
      if (err instanceof CsiProxyError && err.code === Code.NotFound) return;
      throw err;
    }
    if (child === null) continue; // a link or a file now: unlink the entry itself
    const before = skipped.length;
    try {
      if (child.mountId !== dir.mountId) {
        skipped.push(child.path);
        return;
      }
      await emptyDir(child, skipped);
    } finally {
      await child.close();
    }
    if (skipped.length > before) return; // holds a mount point: kept
    try {
      await fs.rmdir(entry);
      return;
    } catch (err) {
      const code = errno(err);
      if (code === "ENOENT") return;
      if (code !== "ENOTDIR") throw fsError(err, "remove", shown);
      // Swapped for a link after it was emptied: unlink the link (next try), never what it points to.
    }
  }
  throw failedPrecondition(`remove ${shown}: it keeps changing between a directory and a link or file; gave up after ${MAX_TRIES} tries`);
}

/** Removes everything inside the held directory `dir`. */
async function emptyDir(dir: DirHandle, skipped: string[]): Promise<void> {
  let entries: { name: string; dir: boolean }[];
  try {
    entries = (await fs.readdir(dir.at(), { withFileTypes: true })).map((d) => ({ name: d.name, dir: d.isDirectory() }));
  } catch (err) {
    throw fsError(err, "read directory", dir.path);
  }
  for (let i = 0; i < entries.length; i += BATCH) {
    await Promise.all(entries.slice(i, i + BATCH).map((e) => removeEntry(dir, e.name, e.dir, skipped)));
  }
}

/**
 * Rmdir(force): removes `p` (absolute, its parents canonical) and everything below it, never following
 * a link (a link at `p` is removed itself). Missing `p` or parent: done. Mount points at or below `p`:
 * FailedPrecondition (see module doc). Symbolic link met on the way to `p`: FailedPrecondition.
 */
export async function removeTree(p: string): Promise<void> {
  await refuseMountsBelow(p, "remove");
  const skipped: string[] = [];
  try {
    await withParent(p, async (parent, name) => {
      const st = await fs.lstat(parent.at(name)).catch((err) => {
        if (errno(err) === "ENOENT") return null;
        throw fsError(err, "remove", p);
      });
      if (st === null) return;
      await removeEntry(parent, name, st.isDirectory(), skipped);
    });
  } catch (err) {
    if (err instanceof CsiProxyError && err.code === Code.NotFound) return; // a parent is missing
    throw err;
  }
  if (skipped.length > 0) throw stoppedAt(p, "remove", skipped);
}

/**
 * RmdirContents: removes everything inside the directory `p` (absolute, canonical), keeping `p`.
 * Missing `p`: NotFound. `p` itself or anything below it a mount point: FailedPrecondition.
 */
export async function removeContents(p: string): Promise<void> {
  await refuseMountsBelow(p, "empty");
  const skipped: string[] = [];
  await withParent(p, async (parent, name) => {
    const dir = await openChildDir(parent, name);
    if (dir === null) throw failedPrecondition(`empty ${p}: not a directory (or a symbolic link now)`);
    try {
      if (dir.mountId !== parent.mountId) throw failedPrecondition(`refusing to empty ${p}: it is a mount point; unmount first`);
      await emptyDir(dir, skipped);
    } finally {
      await dir.close();
    }
  });
  if (skipped.length > 0) throw stoppedAt(p, "empty", skipped);
}
