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
 *
 * Bounds (like fts(3) in coreutils rm; the walk's constants and name budget are src/host/tree-walk-bounds.ts,
 * shared with the Windows walker), whatever the depth or width of the tree:
 * - descriptors: at most {@link OPEN_DIRS} directory handles of the walk are open (the deepest ones),
 *   plus one listing stream and {@link UNLINKS} unlinks in flight; a directory whose handle was
 *   closed is re-entered from its child by `..` and must still be the same inode (dev + ino), else
 *   the walk stops (FailedPrecondition: it moved);
 * - memory: one frame per level holding its name, dev/ino and at most {@link BATCH} pending names, and
 *   at most {@link NAME_BUDGET} pending names over all levels; no full path is kept per level;
 * - one walker, one directory at a time: only unlinks of the directory being worked on run
 *   concurrently, and every one of them has settled before that directory's handle is closed.
 *
 * The named directory: before each listing pass and once it is empty, the walk checks that the
 * directory it holds is still the one the path names — found at that path (so still inside the
 * allowed directories, reached through no link) with the same dev + ino and mount id; a directory
 * renamed away, or replaced by another directory, a bind mount or a link, stops the walk with
 * FailedPrecondition. What may have been removed in it where it now is: between two checks, at most
 * one listing pass's names ({@link BATCH}) and the directories emptied since; nothing after the answer.
 *
 * Stopping: the first failure, or the abort of `signal`, stops the walk: nothing new starts, the
 * call waits for what is in flight and closes every handle, then rejects — with the failure's code
 * (or DeadlineExceeded/Cancelled for the signal) and a message saying how many entries were removed,
 * how many are left in the named directory and the first few of their names.
 */
import type { BigIntStats } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { Code, CsiProxyError, failedPrecondition } from "../../errors.ts";
import { fsError } from "../fs-error.ts";
import { DirHandle, openDirAt, openDirNoFollow, openParentOf, whyNotAt, withParent } from "./dir-handle.ts";
import { readMountTable } from "./mountinfo.ts";
import { abortError } from "../stop-if-aborted.ts";
import { leftInDir, NAMES_SHOWN, removeFailure, removeSummary } from "../remove-summary.ts";
import { OPEN_DIRS, PendingNames } from "../tree-walk-bounds.ts";

export { OPEN_DIRS } from "../tree-walk-bounds.ts";
/** Unlinks in flight within the directory being worked on. */
const UNLINKS = 8;
/**
 * A directory whose size (st_size: bytes of its entries on ext4/xfs, about 20 per entry on tmpfs) is
 * at most this is listed whole in one call; larger ones are read BATCH names per pass.
 */
const SMALL_DIR_BYTES = 64 * 1024;
/** Tries per entry when it keeps changing between a directory and a non-directory under us. */
const MAX_TRIES = 8;

const errno = (e: unknown) => (e as NodeJS.ErrnoException | null)?.code;
const isWithin = (child: string, parent: string) => parent === "/" || child === parent || child.startsWith(parent + "/");

/** FailedPrecondition when anything is mounted at or below `p` (per the mount table, now). */
async function refuseMountsBelow(p: string, what: string): Promise<void> {
  const mounts = (await readMountTable()).filter((m) => isWithin(m.mountPoint, p)).map((m) => m.mountPoint);
  if (mounts.length > 0) {
    throw failedPrecondition(`refusing to ${what} ${p}: ${[...new Set(mounts)].join(", ")} ${mounts.length === 1 ? "is a mount point" : "are mount points"}; unmount first`);
  }
}

interface Pending {
  name: string;
  dir: boolean;
}

/** One level of the walk. `dir` is null while its handle is closed to stay within {@link OPEN_DIRS}. */
interface Frame {
  name: string;
  dir: DirHandle | null;
  dev: bigint;
  ino: bigint;
  mountId: number;
  pending: Pending[];
  /** The last listing pass read the directory to its end. */
  listedAll: boolean;
  /** Small when opened (st_size ≤ SMALL_DIR_BYTES): listed in one call, whole. */
  small: boolean;
  /** Names kept on purpose (they hold a mount point); null when none. */
  kept: Set<string> | null;
}

/** The walk of one call; `run` closes every handle it opened before it settles. */
class Walker {
  removed = 0;
  readonly skipped: string[] = [];
  readonly #stack: Frame[] = [];
  readonly #base: string;
  readonly #signal: AbortSignal | undefined;
  readonly #pending = new PendingNames();

  /** `base` is the path of the directory the walk starts in (for messages). */
  constructor(base: string, signal: AbortSignal | undefined) {
    this.#base = base;
    this.#signal = signal;
  }

  #shown(depth = this.#stack.length, name?: string): string {
    const names = this.#stack.slice(1, depth).map((f) => f.name);
    if (name !== undefined) names.push(name);
    return path.posix.join(this.#base, ...names);
  }

  #checkSignal(): void {
    if (this.#signal?.aborted) throw abortError(this.#signal);
  }

  /** FailedPrecondition unless the walk's root is still the directory its path names (see the module doc). */
  async #checkRoot(): Promise<void> {
    const root = this.#stack[0];
    const why = await whyNotAt(root.dir!, this.#base, root.dev, root.ino);
    if (why !== null) throw failedPrecondition(`${this.#base} no longer names the directory being emptied (${why}): it was moved or replaced while its contents were being removed; stopped`);
  }

  async #push(dir: DirHandle, name: string): Promise<void> {
    // The deepest level beyond the window gives up its handle (never the caller's root), concurrently with the stat.
    const old = this.#stack.length - OPEN_DIRS > 0 ? this.#stack[this.#stack.length - OPEN_DIRS] : undefined;
    const oldDir = old?.dir ?? null;
    if (old) old.dir = null;
    const [st] = await Promise.allSettled([dir.stat(), oldDir?.close()]);
    if (st.status === "rejected") {
      await dir.close();
      throw fsError(st.reason, "stat", this.#shown(this.#stack.length, name));
    }
    const { dev, ino, size } = st.value;
    this.#stack.push({ name, dir, dev, ino, mountId: dir.mountId, pending: [], listedAll: false, kept: null, small: size <= SMALL_DIR_BYTES });
  }

  /** The open handle of level `i` (re-entered from level i+1 by `..`, checked by dev + ino). */
  async #open(i: number): Promise<DirHandle> {
    const f = this.#stack[i];
    if (f.dir) return f.dir;
    const child = this.#stack[i + 1].dir!;
    const shown = () => this.#shown(i + 1);
    const dir = await openParentOf(child, "..").catch((err) => {
      throw new CsiProxyError(err instanceof CsiProxyError ? err.code : Code.Internal, `re-enter ${shown()}: ${(err as Error).message}`, { cause: err });
    });
    let st: BigIntStats;
    try {
      st = await dir.stat();
    } catch (err) {
      await dir.close();
      throw fsError(err, "stat", shown());
    }
    if (st.dev !== f.dev || st.ino !== f.ino || dir.mountId !== f.mountId) {
      await dir.close();
      throw failedPrecondition(`remove ${shown()}: the directory moved while its contents were being removed; stopped`);
    }
    f.dir = dir;
    return dir;
  }

  /** Reads up to BATCH names of the top directory (skipping kept ones) into its pending list. */
  async #list(f: Frame): Promise<void> {
    const want = this.#pending.want();
    const shown = () => this.#shown();
    await f.dir!.use(undefined, async (p) => {
      if (f.small) {
        const all = await fs.readdir(p, { withFileTypes: true }).catch((err) => {
          throw fsError(err, "read directory", shown());
        });
        for (const e of all) {
          if (f.pending.length >= want) break;
          if (!f.kept?.has(e.name)) f.pending.push({ name: e.name, dir: e.isDirectory() });
        }
        f.listedAll = f.pending.length < want;
        return;
      }
      const d = await fs.opendir(p, { bufferSize: Math.min(want, 1024) }).catch((err) => {
        throw fsError(err, "read directory", shown());
      });
      try {
        let reachedEnd = false;
        while (f.pending.length < want) {
          this.#checkSignal();
          const e = await d.read().catch((err) => {
            throw fsError(err, "read directory", shown());
          });
          if (e === null) {
            reachedEnd = true;
            break;
          }
          if (f.kept?.has(e.name)) continue;
          f.pending.push({ name: e.name, dir: e.isDirectory() });
        }
        f.listedAll = reachedEnd;
      } finally {
        d.closeSync(); // a directory stream's close never waits for the filesystem
      }
    });
    this.#pending.add(f.pending.length);
  }

  /** Unlinks the pending non-directories of the top level, UNLINKS at a time; all settle before it returns. */
  async #unlinkFiles(f: Frame): Promise<void> {
    const files = f.pending.filter((e) => !e.dir);
    if (files.length === 0) return;
    f.pending = f.pending.filter((e) => e.dir);
    this.#pending.remove(files.length);
    const dir = f.dir!;
    let next = 0;
    let failure: unknown;
    const worker = async () => {
      while (failure === undefined && next < files.length) {
        if (this.#signal?.aborted) {
          failure ??= abortError(this.#signal);
          return;
        }
        const e = files[next++];
        try {
          const gone = await dir.use(e.name, (p) => fs.unlink(p)).then(() => true, (err: unknown) => {
            if (errno(err) === "ENOENT") return false;
            if (errno(err) === "EISDIR") return null; // a directory after all (or now): walked below
            throw fsError(err, "remove", this.#shown(this.#stack.length, e.name));
          });
          if (gone === null) {
            f.pending.push({ name: e.name, dir: true });
            this.#pending.add();
          }
          else if (gone) this.removed++;
        } catch (err) {
          failure ??= err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(UNLINKS, files.length) }, worker));
    if (failure !== undefined) throw failure;
  }

  /** Handles one pending directory entry `e` of the top level: descends into it, or removes what it is now. */
  async #enter(f: Frame, e: Pending, tries: number): Promise<void> {
    const dir = f.dir!;
    const shown = () => this.#shown(this.#stack.length, e.name);
    if (tries >= MAX_TRIES) throw failedPrecondition(`remove ${shown()}: it keeps changing between a directory and a link or file; gave up after ${MAX_TRIES} tries`);
    let child: DirHandle | null;
    try {
      child = await openDirAt(dir, e.name, e.name);
    } catch (err) {
      if (err instanceof CsiProxyError && err.code === Code.NotFound) return;
      throw new CsiProxyError(err instanceof CsiProxyError ? err.code : Code.Internal, `open ${shown()}: ${(err as Error).message}`, { cause: err });
    }
    if (child === null) {
      // a link or a file now: unlink the entry itself, never what a link points to
      const r = await dir.use(e.name, (p) => fs.unlink(p)).then(() => "gone", (err: unknown) => {
        if (errno(err) === "ENOENT") return "missing";
        if (errno(err) === "EISDIR") return "dir";
        throw fsError(err, "remove", shown());
      });
      if (r === "gone") this.removed++;
      if (r === "dir") return this.#enter(f, e, tries + 1);
      return;
    }
    if (child.mountId !== f.mountId) {
      await child.close();
      this.skipped.push(shown());
      (f.kept ??= new Set()).add(e.name);
      return;
    }
    await this.#push(child, e.name);
  }

  /** Pops the emptied top level and removes it from its parent; a level holding a mount point is kept. */
  async #pop(): Promise<void> {
    const i = this.#stack.length - 1;
    const top = this.#stack[i];
    const parent = await this.#open(i - 1);
    const topDir = top.dir!;
    top.dir = null;
    this.#stack.pop();
    const above = this.#stack[i - 1];
    if (top.kept !== null) {
      await topDir.close();
      (above.kept ??= new Set()).add(top.name);
      return;
    }
    const shown = () => this.#shown(i, top.name);
    // rmdir by name in the parent needs nothing of the child's handle: both run at once, both settle before going on.
    const [r] = await Promise.all([
      parent.use(top.name, (p) => fs.rmdir(p)).then(() => "gone", (err: unknown) => {
        if (errno(err) === "ENOENT") return "missing";
        if (errno(err) === "ENOTDIR") return "link"; // swapped for a link after it was emptied: the link itself goes
        if (errno(err) === "ENOTEMPTY" || errno(err) === "EEXIST") {
          return new CsiProxyError(Code.FailedPrecondition, `remove ${shown()}: directory not empty (entries were created in it while it was being removed)`, { cause: err });
        }
        return fsError(err, "remove", shown());
      }),
      topDir.close(),
    ]);
    if (r instanceof CsiProxyError) throw r;
    if (r === "gone") this.removed++;
    if (r === "link") {
      above.pending.unshift({ name: top.name, dir: false });
      this.#pending.add();
    }
  }

  /** Empties the held directory `root` (owned by the caller, who closes it after `run` settles). */
  async run(root: DirHandle): Promise<void> {
    const st = await root.stat().catch((err) => {
      throw fsError(err, "stat", this.#base);
    });
    this.#stack.push({ name: "", dir: root, dev: st.dev, ino: st.ino, mountId: root.mountId, pending: [], listedAll: false, kept: null, small: st.size <= SMALL_DIR_BYTES });
    try {
      for (;;) {
        this.#checkSignal();
        const f = this.#stack[this.#stack.length - 1];
        await this.#open(this.#stack.length - 1);
        if (f.pending.length === 0) {
          if (!f.listedAll) {
            await this.#checkRoot();
            await this.#list(f);
            continue;
          }
          // Read to its end and emptied (but for kept names); an entry created since makes rmdir fail.
          if (this.#stack.length === 1) {
            await this.#checkRoot();
            return;
          }
          await this.#pop();
          continue;
        }
        await this.#unlinkFiles(f);
        const e = f.pending.shift();
        if (e === undefined) continue;
        this.#pending.remove();
        await this.#enter(f, e, 0);
      }
    } finally {
      // Nothing of this walk is in flight here (every step above is awaited); close what it opened.
      for (const f of this.#stack.splice(1)) await f.dir?.close();
      this.#pending.reset();
    }
  }
}

/** The walk's failure (or skipped mount points) as the call's answer, with what was and was not removed. */
async function answer(err: unknown, walker: Walker, p: string, what: string, dir: DirHandle, selfLeft: boolean): Promise<CsiProxyError> {
  const left = await dir.use(undefined, (dp) => leftInDir(dp)).catch(() => "what is left in it could not be listed");
  const summary = removeSummary(walker.removed, p, selfLeft, left);
  if (err === undefined) {
    const s = walker.skipped;
    const shown = s.slice(0, NAMES_SHOWN).join(", ") + (s.length > NAMES_SHOWN ? ` and ${s.length - NAMES_SHOWN} more` : "");
    return failedPrecondition(`${what} ${p}: stopped at mount point${s.length === 1 ? "" : "s"} ${shown} (not entered, not removed); unmount first; ${summary}`);
  }
  return removeFailure(err, what, p, summary);
}

export interface RemoveOptions {
  /** Aborting it stops the walk (within one filesystem call); the call then rejects with what was removed. */
  signal?: AbortSignal;
}

/**
 * Rmdir(force): removes `p` (absolute, its parents canonical) and everything below it, never following
 * a link (a link at `p` is removed itself). Missing `p` or parent: done. Mount points at or below `p`:
 * FailedPrecondition (see module doc). Symbolic link met on the way to `p`: FailedPrecondition.
 * Settles only after every filesystem call it started has settled.
 */
export async function removeTree(p: string, options: RemoveOptions = {}): Promise<void> {
  const { signal } = options;
  if (signal?.aborted) throw abortError(signal);
  await refuseMountsBelow(p, "remove");
  const name = path.posix.basename(p);
  if (name === "" || p === "/") throw new CsiProxyError(Code.InvalidArgument, `${p} has no parent directory`);
  let parent: DirHandle;
  try {
    parent = await openDirNoFollow(path.posix.dirname(p));
  } catch (err) {
    if (err instanceof CsiProxyError && err.code === Code.NotFound) return; // a parent is missing
    throw err;
  }
  try {
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const r = await parent.use(name, (q) => fs.unlink(q)).then(() => "gone", (err: unknown) => {
        if (errno(err) === "ENOENT") return "gone";
        if (errno(err) === "EISDIR") return "dir";
        throw fsError(err, "remove", p);
      });
      if (r === "gone") return;
      let dir: DirHandle | null;
      try {
        dir = await openDirAt(parent, name, p);
      } catch (err) {
        if (err instanceof CsiProxyError && err.code === Code.NotFound) return;
        throw err;
      }
      if (dir === null) continue; // a link or file now: unlink it itself
      const walker = new Walker(p, signal);
      let failure: CsiProxyError | undefined;
      try {
        if (dir.mountId !== parent.mountId) throw failedPrecondition(`refusing to remove ${p}: it is a mount point; unmount it first`);
        try {
          await walker.run(dir);
        } catch (err) {
          failure = await answer(err, walker, p, "remove", dir, true);
        }
        if (failure === undefined && walker.skipped.length > 0) failure = await answer(undefined, walker, p, "remove", dir, true);
      } finally {
        await dir.close();
      }
      if (failure) throw failure;
      const gone = await parent.use(name, (q) => fs.rmdir(q)).then(() => true, (err: unknown) => {
        if (errno(err) === "ENOENT") return true;
        if (errno(err) === "ENOTDIR") return false; // swapped for a link after it was emptied: the link itself goes (next try)
        const reason = errno(err) === "ENOTEMPTY" ? "directory not empty (entries were created in it while it was being removed)" : fsError(err, "remove", p).message;
        throw new CsiProxyError(errno(err) === "ENOTEMPTY" ? Code.FailedPrecondition : fsError(err, "remove", p).code,
          `remove ${p}: ${reason}; removed ${walker.removed} entries below it; ${p} is still there`, { cause: err });
      });
      if (gone) return;
    }
    throw failedPrecondition(`remove ${p}: it keeps changing between a directory and a link or file; gave up after ${MAX_TRIES} tries`);
  } finally {
    await parent.close();
  }
}

/**
 * RmdirContents: removes everything inside the directory `p` (absolute, canonical), keeping `p`.
 * Missing `p`: NotFound. `p` itself or anything below it a mount point: FailedPrecondition.
 * Settles only after every filesystem call it started has settled.
 */
export async function removeContents(p: string, options: RemoveOptions = {}): Promise<void> {
  const { signal } = options;
  if (signal?.aborted) throw abortError(signal);
  await refuseMountsBelow(p, "empty");
  await withParent(p, async (parent, name) => {
    const dir = await openDirAt(parent, name, p);
    if (dir === null) throw failedPrecondition(`empty ${p}: not a directory (or a symbolic link now)`);
    const walker = new Walker(p, signal);
    let failure: CsiProxyError | undefined;
    try {
      if (dir.mountId !== parent.mountId) throw failedPrecondition(`refusing to empty ${p}: it is a mount point; unmount first`);
      try {
        await walker.run(dir);
      } catch (err) {
        failure = await answer(err, walker, p, "empty", dir, false);
      }
      if (failure === undefined && walker.skipped.length > 0) failure = await answer(undefined, walker, p, "empty", dir, false);
    } finally {
      await dir.close();
    }
    if (failure) throw failure;
  });
}
