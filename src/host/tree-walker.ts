/**
 * The one bounded recursive-delete walk of both platforms, over {@link DirOps}: Linux directory
 * handles and *at calls (src/host/linux/paths/linux-dir-ops.ts), Win32 handles
 * (src/host/windows/win32-dir-ops.ts), or a test double. The walk owns the traversal, the bounds, the
 * stop checks, the identity checks and what a stopped walk answers; the operations only touch the
 * filesystem, each through a handle or by a name inside a held directory, never following a link.
 *
 * Bounds (src/host/tree-walk-bounds.ts; docs/reliability.md), whatever the depth or width of the tree:
 * - handles: at most {@link OPEN_DIRS} directory handles of a walk are open — the named directory's
 *   (never given up) and the deepest levels'; a level whose handle was given up is opened again when
 *   the walk climbs back to it and must be the directory recorded when it was entered (else
 *   FailedPrecondition "re-enter P: it is another directory now"/"it is gone"); besides those, one
 *   entry being inspected, one listing and `unlinksInFlight` removals by name;
 * - memory: one frame per level (name, identity, at most {@link BATCH} pending names), at most
 *   {@link NAME_BUDGET} pending names over all levels, one path string (the deepest level's);
 * - one directory at a time: only removals in the directory being worked on run concurrently, and all
 *   of them have settled before the walk moves on or stops.
 *
 * The named directory: before each listing pass and once it is empty, the walk asks the operations
 * whether the path still names the directory it holds (same identity, reached through no link);
 * otherwise it stops with FailedPrecondition "P no longer names the directory being emptied (why)".
 *
 * Mount points met on the way (`openChild` says "mount") are not entered and not removed: they are
 * kept, the walk goes on elsewhere and the call ends FailedPrecondition naming them. A platform that
 * refuses them at once throws from `openChild` instead.
 *
 * Stopping: the first failure, or the abort of `signal` (checked before every listing pass, every
 * entry, every removal), stops the walk: nothing new starts, what is in flight settles, every handle
 * the walk opened is closed, then the call rejects with the failure's code (DeadlineExceeded or
 * Cancelled for the signal) and says how many entries were removed, whether the named directory is
 * still there, how many entries are left in it and the first few names (src/host/remove-summary.ts).
 */
import { Code, CsiProxyError, failedPrecondition } from "../errors.ts";
import { abortError } from "../util/stop-if-aborted.ts";
import { NAMES_SHOWN, removeFailure, removeSummary } from "./remove-summary.ts";
import { OPEN_DIRS, PendingNames } from "./tree-walk-bounds.ts";

/** Tries per entry when it keeps changing between a directory and a non-directory under the walk. */
export const MAX_TRIES = 8;

/** A listed name; `dir` true/false when the listing said, null when only opening it tells. */
export interface ListedEntry {
  name: string;
  dir: boolean | null;
}

/** What `openChild` found at a name. */
export type Opened<H, I> =
  | { kind: "dir"; h: H; id: I } // a directory (not a link, not a mount point), held open: entered
  | { kind: "missing" } // nothing there (any more)
  | { kind: "removed" } // not a directory: removed by the operation itself, through the handle it inspected
  | { kind: "other" } // not a directory (a file or a link): the walk removes it by name
  | { kind: "mount" }; // a mount point: kept (not entered, not removed)

/**
 * The directory operations one walk needs. `H` is a directory handle (owned by whoever opened it;
 * the walk closes every one it got from `openChild`/`reopen`), `I` its identity. `shown` is the path
 * for messages (and the path itself where the platform works by path). Errors are CsiProxyErrors
 * whose message names `shown`.
 */
export interface DirOps<H, I> {
  /** Path separator of `shown` paths. */
  readonly sep: string;
  /** Removals by name run at once within one directory (entries the listing said are not directories). */
  readonly unlinksInFlight: number;
  /** Same directory (identity recorded when entered vs. now). */
  same(a: I, b: I): boolean;
  /** Up to `want` names of `h` (none of `skip`), read from its start; `end`: read to its end. `stop` throws once aborted. */
  list(h: H, id: I, want: number, skip: ReadonlySet<string> | null, shown: string, stop: () => void): Promise<{ entries: ListedEntry[]; end: boolean }>;
  /** Opens `name` in `parent` as itself, never following a link (see {@link Opened}). */
  openChild(parent: H, parentId: I, name: string, shown: string): Promise<Opened<H, I>>;
  /** Removes the non-directory `name` of `parent` by name: "dir" when it is a directory after all. */
  unlink(parent: H, name: string, shown: string): Promise<"gone" | "missing" | "dir">;
  /** Removes the emptied directory `child` (`name` in `parent`) and closes `child` whatever happens; "link": it is a link now, to be removed as an entry. */
  removeDir(parent: H, name: string, child: H, shown: string): Promise<"gone" | "missing" | "link">;
  /** Opens the directory at `shown`, the parent of the held `child`, again; null when it is gone. The walk checks its identity. */
  reopen(child: H, shown: string): Promise<{ h: H; id: I } | null>;
  /** Null while the path `shown` still names the held directory `h` (identity `id`); otherwise why not. Rejects only when the check itself fails. */
  whyNotNamed(h: H, id: I, shown: string): Promise<string | null>;
  /** "N entries left in it (…)" for the held named directory; `there`: it is still at `shown`. Never throws. */
  leftIn(h: H, shown: string): Promise<{ there: boolean; left: string }>;
  /** Idempotent. */
  close(h: H): Promise<void>;
}

/** One level of the walk; `h` null while given up to stay within {@link OPEN_DIRS}. */
interface Frame<H, I> {
  name: string;
  h: H | null;
  id: I;
  pending: ListedEntry[];
  /** The last listing pass read the directory to its end. */
  listedAll: boolean;
  /** Names kept on purpose (they hold a mount point); null when none. */
  kept: Set<string> | null;
}

/** The walk of one call over one named directory (held by the caller, who closes it after `run` settles). */
export class TreeWalker<H, I> {
  removed = 0;
  /** Mount points met and kept (shown paths). */
  readonly skipped: string[] = [];
  readonly #ops: DirOps<H, I>;
  readonly #base: string;
  readonly #signal: AbortSignal | undefined;
  readonly #stack: Frame<H, I>[] = [];
  readonly #pending = new PendingNames();
  /** Shown path of the deepest level. */
  #cur: string;

  constructor(ops: DirOps<H, I>, base: string, signal: AbortSignal | undefined) {
    this.#ops = ops;
    this.#base = base;
    this.#cur = base;
    this.#signal = signal;
  }

  #stop = (): void => {
    if (this.#signal?.aborted) throw abortError(this.#signal);
  };

  #child(name: string): string {
    return this.#cur + this.#ops.sep + name;
  }

  async #checkRoot(): Promise<void> {
    const root = this.#stack[0];
    const why = await this.#ops.whyNotNamed(root.h!, root.id, this.#base);
    if (why !== null) throw failedPrecondition(`${this.#base} no longer names the directory being emptied (${why}): it was moved or replaced while its contents were being removed; stopped`);
  }

  /** Enters `h` as the deepest level; the shallowest held level beyond the window (never the named one) gives up its handle. */
  async #push(name: string, h: H, id: I): Promise<void> {
    this.#stack.push({ name, h, id, pending: [], listedAll: false, kept: null });
    this.#cur = this.#child(name);
    const old = this.#stack.length - OPEN_DIRS;
    if (old > 0 && this.#stack[old].h !== null) {
      const oh = this.#stack[old].h!;
      this.#stack[old].h = null;
      await this.#ops.close(oh);
    }
  }

  async #list(f: Frame<H, I>): Promise<void> {
    const { entries, end } = await this.#ops.list(f.h!, f.id, this.#pending.want(), f.kept, this.#cur, this.#stop);
    f.pending = entries;
    f.listedAll = end;
    this.#pending.add(entries.length);
  }

  /** Removes by name the pending entries of `f` the listing said are not directories, `unlinksInFlight` at a time; all settle before it returns. */
  async #unlinkFiles(f: Frame<H, I>): Promise<void> {
    const files = f.pending.filter((e) => e.dir === false);
    if (files.length === 0) return;
    f.pending = f.pending.filter((e) => e.dir !== false);
    this.#pending.remove(files.length);
    const h = f.h!;
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
          const r = await this.#ops.unlink(h, e.name, this.#child(e.name));
          if (r === "gone") this.removed++;
          if (r === "dir") {
            f.pending.push({ name: e.name, dir: true });
            this.#pending.add();
          }
        } catch (err) {
          failure ??= err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#ops.unlinksInFlight, files.length) }, worker));
    if (failure !== undefined) throw failure;
  }

  /** Handles the pending entry `e` of the deepest level `f`: enters it, or removes what it is now. */
  async #enter(f: Frame<H, I>, e: ListedEntry): Promise<void> {
    const shown = this.#child(e.name);
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      this.#stop();
      const r = await this.#ops.openChild(f.h!, f.id, e.name, shown);
      if (r.kind === "dir") return this.#push(e.name, r.h, r.id);
      if (r.kind === "removed") this.removed++;
      if (r.kind === "mount") {
        this.skipped.push(shown);
        (f.kept ??= new Set()).add(e.name);
      }
      if (r.kind !== "other") return;
      const u = await this.#ops.unlink(f.h!, e.name, shown); // a link or a file: the entry itself goes, never what it points to
      if (u === "gone") this.removed++;
      if (u !== "dir") return;
    }
    throw failedPrecondition(`remove ${shown}: it keeps changing between a directory and a link or file; gave up after ${MAX_TRIES} tries`);
  }

  /** Pops the emptied deepest level and removes it from its parent (re-entered first if given up); a level holding a mount point is kept. */
  async #pop(): Promise<void> {
    this.#stop();
    const top = this.#stack.at(-1)!;
    const shown = this.#cur;
    this.#cur = this.#cur.slice(0, this.#cur.length - top.name.length - this.#ops.sep.length);
    const above = this.#stack.at(-2)!;
    if (above.h === null) {
      const r = await this.#ops.reopen(top.h!, this.#cur);
      if (r === null) throw failedPrecondition(`re-enter ${this.#cur}: it is gone (it moved while its contents were being removed)`);
      above.h = r.h;
      if (!this.#ops.same(r.id, above.id)) throw failedPrecondition(`re-enter ${this.#cur}: it is another directory now (it moved while its contents were being removed)`);
    }
    const th = top.h!;
    top.h = null;
    this.#stack.pop();
    this.#pending.remove(top.pending.length);
    if (top.kept !== null) {
      await this.#ops.close(th);
      (above.kept ??= new Set()).add(top.name);
      return;
    }
    const r = await this.#ops.removeDir(above.h!, top.name, th, shown);
    if (r === "gone") this.removed++;
    if (r === "link") {
      above.pending.unshift({ name: top.name, dir: false });
      this.#pending.add();
    }
  }

  /** Empties the held directory `root` (identity `id`); the caller keeps and closes `root`. Every other handle is closed when this settles. */
  async run(root: H, id: I): Promise<void> {
    this.#stack.push({ name: "", h: root, id, pending: [], listedAll: false, kept: null });
    try {
      for (;;) {
        this.#stop();
        const f = this.#stack.at(-1)!;
        if (f.pending.length === 0) {
          if (!f.listedAll) {
            await this.#checkRoot();
            await this.#list(f);
            await this.#unlinkFiles(f);
            continue;
          }
          // read to its end and emptied (but for kept names); an entry created since makes its removal fail
          if (this.#stack.length === 1) {
            await this.#checkRoot();
            return;
          }
          await this.#pop();
          continue;
        }
        const e = f.pending.shift()!;
        this.#pending.remove();
        await this.#enter(f, e);
      }
    } finally {
      // nothing of this walk is in flight here (every step above is awaited); close what it opened
      for (const f of this.#stack.splice(1)) if (f.h !== null) await this.#ops.close(f.h);
      this.#stack.length = 0;
      this.#pending.reset();
    }
  }
}

/**
 * Empties the held directory `root` at `p` (identity `id`) — RmdirContents (`what` "empty") or the
 * walk of Rmdir(recursive) (`what` "remove", `p` itself to be removed by the caller, or by `then`,
 * which runs once `p` is empty and whose failure is answered like the walk's). Resolves with the
 * count of entries removed below `p`; rejects with the answer of a stopped walk (module doc), or
 * FailedPrecondition naming the mount points it kept. The caller closes `root` after this settles.
 */
export async function emptyTree<H, I>(ops: DirOps<H, I>, root: H, id: I, p: string, what: "empty" | "remove", signal: AbortSignal | undefined, then?: () => Promise<void>): Promise<number> {
  const walker = new TreeWalker(ops, p, signal);
  let failure: unknown;
  try {
    await walker.run(root, id);
    if (walker.skipped.length === 0) await then?.();
  } catch (err) {
    failure = err ?? new CsiProxyError(Code.Internal, "the walk failed");
  }
  if (failure === undefined && walker.skipped.length === 0) return walker.removed;
  const { there, left } = await ops.leftIn(root, p);
  const summary = removeSummary(walker.removed, p, there && what === "remove", left);
  if (failure !== undefined) throw removeFailure(failure, what, p, summary);
  const s = walker.skipped;
  const shown = s.slice(0, NAMES_SHOWN).join(", ") + (s.length > NAMES_SHOWN ? ` and ${s.length - NAMES_SHOWN} more` : "");
  throw failedPrecondition(`${what} ${p}: stopped at mount point${s.length === 1 ? "" : "s"} ${shown} (not entered, not removed); unmount first; ${summary}`);
}
