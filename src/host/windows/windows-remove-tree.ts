/**
 * Recursive removal on Windows through handles (koffi), in bounded handles and memory whatever the
 * depth or width of the tree (the walk's constants and name budget are src/host/tree-walk-bounds.ts,
 * shared with the Linux walker).
 *
 * - Every entry is opened as itself (FILE_FLAG_OPEN_REPARSE_POINT: a link, junction or mount point is
 *   opened, never followed), inspected through that handle (GetFileInformationByHandle: attributes
 *   and identity) and deleted through it (FileDispositionInfo), so what is deleted is what was
 *   inspected. A reparse point is never entered: a volume mount point (IO_REPARSE_TAG_MOUNT_POINT)
 *   stops the walk with FailedPrecondition, any other one is removed as an entry.
 * - Handles: the directories being emptied are held without FILE_SHARE_DELETE (nobody can rename or
 *   delete them meanwhile), at most {@link OPEN_DIRS} of them — the named directory and the deepest
 *   levels (the named directory's handle is held for the whole walk). A level whose
 *   handle was given up is opened again (by its `\\?\` path) when the walk climbs back to it, and
 *   must have the identity (volume serial + file index) recorded when it was entered; otherwise the
 *   walk stops with FailedPrecondition ("moved while its contents were being removed"). Besides
 *   those: one entry handle at a time and one listing handle (ReOpenFile of the level's handle,
 *   read with GetFileInformationByHandleEx(FileIdBothDirectoryInfo), closed before any entry is
 *   acted on).
 * - Memory: a level keeps its name, identity and at most {@link BATCH} pending names; at most
 *   {@link NAME_BUDGET} pending names over all levels (beyond it a level lists one name per pass). One
 *   path string is kept, the deepest level's; directories are listed {@link BATCH} names per pass.
 * - The named directory: before each listing pass and once it is empty, its path is opened again (the
 *   entry itself) and must be the directory held (identity as above); otherwise — renamed away and
 *   replaced by another directory, a junction or a link, on a filesystem that does not honour the
 *   share mode — the walk stops with FailedPrecondition and its counts.
 * - One step at a time: nothing runs concurrently, so when a step fails or `signal` aborts (checked
 *   before every entry and every listing pass) nothing is in flight; every handle of the walk is
 *   closed, then the call rejects with the failure's code (DeadlineExceeded/Cancelled for the signal)
 *   and says how many entries were removed, whether the named directory is still there, how many
 *   entries are left in it and the first few names (src/host/remove-summary.ts, shared with Linux).
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { Code, CsiProxyError } from "../../errors.ts";
import { abortError } from "../stop-if-aborted.ts";
import { leftInDir, removeFailure, removeSummary } from "../remove-summary.ts";
import { FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT, IO_REPARSE_TAG_MOUNT_POINT } from "../../win32/win32-constants.ts";
import type { Awaitable, Handle, Win32 } from "../../win32/win32.ts";
import { OPEN_DIRS, PendingNames } from "../tree-walk-bounds.ts";

/** The Win32 calls the walk needs (a {@link Win32}, or a test double). */
export type RemoveTreeWin32 = Awaitable<Pick<Win32, "reparseTag" | "openEntryNoFollow" | "fileInfo" | "openListing" | "readDirectoryBatch" | "deleteByHandle" | "closeHandle">>;

export { OPEN_DIRS, BATCH, NAME_BUDGET } from "../tree-walk-bounds.ts";

/**
 * The path Win32 is given: drive-letter paths get the `\\?\` prefix, so paths longer than MAX_PATH
 * (a deep tree) reach the filesystem; they are already normalised (built by path.join). Others
 * (the test doubles' POSIX paths) are passed as they are.
 */
export const win32Path = (p: string) => (/^[A-Za-z]:\\/.test(p) ? `\\\\?\\${p}` : p);

/** One level of the walk; `h` null while given up to stay within {@link OPEN_DIRS}. */
interface Frame {
  name: string;
  h: Handle | null;
  id: string;
  pending: string[];
}

class Walker {
  removed = 0;
  readonly #win32: RemoveTreeWin32;
  readonly #signal: AbortSignal | undefined;
  readonly #stack: Frame[] = [];
  /** Path of the deepest frame. */
  #cur = "";
  readonly #pending = new PendingNames();

  constructor(win32: RemoveTreeWin32, signal: AbortSignal | undefined) {
    this.#win32 = win32;
    this.#signal = signal;
  }

  #stopIfAborted(): void {
    if (this.#signal?.aborted) throw abortError(this.#signal);
  }

  async #open(p: string, forDelete: boolean): Promise<Handle | null> {
    return this.#win32.openEntryNoFollow(win32Path(p), forDelete);
  }

  async #close(h: Handle): Promise<void> {
    await this.#win32.closeHandle(h);
  }

  /** Enters the directory held by `h` (already inspected): becomes the deepest frame; the shallowest held one beyond the window is given up. */
  async #push(name: string, h: Handle, id: string, p: string): Promise<void> {
    this.#stack.push({ name, h, id, pending: [] });
    this.#cur = p;
    // the named directory (frame 0) is never given up: held, it cannot be renamed or replaced
    const held = this.#stack.filter((f) => f.h !== null);
    if (held.length > OPEN_DIRS) {
      const f = held[1];
      const fh = f.h!;
      f.h = null;
      await this.#close(fh);
    }
  }

  /** Leaves the deepest frame (its handle already closed); the new deepest is re-opened and checked if it was given up. */
  async #pop(): Promise<void> {
    const f = this.#stack.pop()!;
    this.#pending.remove(f.pending.length);
    this.#cur = this.#cur.slice(0, this.#cur.length - f.name.length - 1);
    const top = this.#stack.at(-1);
    if (top === undefined || top.h !== null) return;
    this.#stopIfAborted();
    const h = await this.#open(this.#cur, this.#stack.length > 1 || this.#deleteRoot);
    if (h === null) throw new CsiProxyError(Code.FailedPrecondition, `re-enter ${this.#cur}: it is gone (it moved while its contents were being removed)`);
    top.h = h;
    const { id } = await this.#win32.fileInfo(h, this.#cur);
    if (id !== top.id) throw new CsiProxyError(Code.FailedPrecondition, `re-enter ${this.#cur}: it is another directory now (it moved while its contents were being removed)`);
  }

  #deleteRoot = false;
  #rootPath = "";

  /**
   * FailedPrecondition unless the named directory's path still opens (the entry itself, no link
   * followed) to the directory the walk holds as its frame 0 (same volume serial + file index).
   */
  async #checkRoot(): Promise<void> {
    const p = this.#rootPath;
    const h = await this.#open(p, false);
    let id: string | null = null;
    if (h !== null) {
      try {
        id = (await this.#win32.fileInfo(h, p)).id;
      } finally {
        await this.#close(h);
      }
    }
    if (id !== this.#stack[0].id) {
      throw new CsiProxyError(Code.FailedPrecondition, `${p} no longer names the directory being emptied (${id === null ? "it is gone" : "it is another entry now"}): it was moved or replaced while its contents were being removed; stopped`);
    }
  }

  /**
   * Opens the entry `p` itself and inspects it: a directory (not a reparse point) is returned with
   * its handle and identity, to be entered; anything else is deleted through its handle (a volume
   * mount point: FailedPrecondition). Null when there is nothing to enter.
   */
  async #entry(p: string, forDelete: boolean, what = "remove"): Promise<{ h: Handle; id: string } | null> {
    this.#stopIfAborted();
    const h = await this.#open(p, forDelete);
    if (h === null) return null;
    let keep = false;
    try {
      const { id, attributes } = await this.#win32.fileInfo(h, p);
      const dir = (attributes & FILE_ATTRIBUTE_DIRECTORY) !== 0;
      if (dir && (attributes & FILE_ATTRIBUTE_REPARSE_POINT) !== 0 && (await this.#win32.reparseTag(win32Path(p))) === IO_REPARSE_TAG_MOUNT_POINT) {
        throw new CsiProxyError(Code.FailedPrecondition, `${what} ${p}: a volume is mounted there; unmount it first`);
      }
      if (!forDelete && (attributes & FILE_ATTRIBUTE_REPARSE_POINT) !== 0) {
        throw new CsiProxyError(Code.FailedPrecondition, `${p} is a link or junction now (the path changed since it was checked); refusing to follow it`);
      }
      if (dir && (attributes & FILE_ATTRIBUTE_REPARSE_POINT) === 0) {
        keep = true;
        return { h, id };
      }
      if (!forDelete) throw new CsiProxyError(Code.FailedPrecondition, `${what} ${p}: not a directory`);
      // a file, or a link or junction (the link itself, never followed)
      await this.#win32.deleteByHandle(h, p);
      this.removed++;
      return null;
    } finally {
      if (!keep) await this.#close(h);
    }
  }

  /**
   * Up to BATCH names of the deepest directory (fewer when the walk's name budget is spent, at least
   * one), read from the start through a listing handle re-opened from the level's own handle (no
   * path) and closed before this returns.
   */
  async #list(): Promise<string[]> {
    this.#stopIfAborted();
    const top = this.#stack.at(-1)!;
    const want = this.#pending.want();
    const names: string[] = [];
    const lh = await this.#win32.openListing(top.h!, this.#cur);
    try {
      for (let restart = true; names.length < want; restart = false) {
        const batch = await this.#win32.readDirectoryBatch(lh, restart, this.#cur);
        if (batch === null) break;
        names.push(...batch.slice(0, want - names.length));
      }
    } finally {
      await this.#close(lh);
    }
    this.#pending.add(names.length);
    return names;
  }

  /**
   * Empties the tree at `p` (opened and inspected by the caller: `h`, `id`); when `deleteRoot`,
   * deletes `p` too. Every handle of the walk is closed when this settles.
   */
  async run(p: string, h: Handle, id: string, deleteRoot: boolean): Promise<void> {
    this.#deleteRoot = deleteRoot;
    this.#rootPath = p;
    try {
      await this.#push(path.basename(p), h, id, p);
      while (this.#stack.length > 0) {
        const top = this.#stack.at(-1)!;
        if (top.pending.length === 0) {
          await this.#checkRoot();
          top.pending = await this.#list();
        }
        if (top.pending.length === 0) {
          if (this.#stack.length === 1) await this.#checkRoot();
          // emptied: delete it through its handle (the named directory only for removeAll)
          const th = top.h!;
          top.h = null;
          try {
            if (this.#stack.length > 1 || deleteRoot) {
              this.#stopIfAborted();
              await this.#win32.deleteByHandle(th, this.#cur);
              this.removed += this.#stack.length > 1 ? 1 : 0;
            }
          } finally {
            await this.#close(th);
          }
          if (this.#stack.length === 1) {
            this.#stack.pop();
            return;
          }
          await this.#pop();
          continue;
        }
        const name = top.pending.shift()!;
        this.#pending.remove();
        const child = this.#cur + path.sep + name;
        const entered = await this.#entry(child, true);
        if (entered !== null) await this.#push(name, entered.h, entered.id, child);
      }
    } finally {
      // nothing of this walk is in flight here (every step is awaited); close what it still holds
      for (const f of this.#stack.splice(0)) if (f.h !== null) await this.#close(f.h);
      this.#pending.reset();
    }
  }

  /** Opens and inspects the named entry; see {@link run}. Null: nothing to walk (missing, or removed as an entry). */
  async root(p: string, forDelete: boolean, what: string): Promise<{ h: Handle; id: string } | null> {
    return this.#entry(p, forDelete, what);
  }
}

/** What a failed walk answers: its code and what was and was not removed below `p`. */
async function answer(err: unknown, walker: Walker, p: string, what: string): Promise<CsiProxyError> {
  const there = await fs.lstat(p).then(() => true, () => false);
  const left = there ? await leftInDir(p) : `${p} is gone`;
  return removeFailure(err, what, p, removeSummary(walker.removed, p, there && what === "remove", left));
}

/**
 * Removes `p` and everything below it (`contents`: only what is below it; `p` must be a directory).
 * Missing `p`: nothing to do for removal of the entry; NotFound for `contents`. Never follows a link
 * or junction; a volume mount point at or below `p`: FailedPrecondition (`p` itself: before anything
 * is removed). The caller holds `p`'s ancestors. Settles only when every handle of the walk is closed.
 */
export async function removeTreeWindows(win32: RemoveTreeWin32, p: string, contents: boolean, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) throw abortError(signal);
  const walker = new Walker(win32, signal);
  const what = contents ? "empty" : "remove";
  // the named entry itself: refused or removed as an entry before any walk (errors as they are)
  const root = await walker.root(p, !contents, what);
  if (root === null) {
    if (contents) throw new CsiProxyError(Code.NotFound, `read directory ${p}: no such directory`);
    return;
  }
  let failure: CsiProxyError | undefined;
  try {
    await walker.run(p, root.h, root.id, !contents);
  } catch (err) {
    // the walk has stopped and closed every handle it opened: say what was and was not removed
    failure = await answer(err, walker, p, what);
  }
  if (failure) throw failure;
}
