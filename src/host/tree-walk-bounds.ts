/**
 * The bounds of one recursive removal walk (src/host/tree-walker.ts, the one walk of both platforms:
 * Linux directory handles and *at calls, Win32 handles), whatever the depth or width of the tree:
 * - handles: at most {@link OPEN_DIRS} directory handles of a walk are open (the named directory's and the deepest levels'; a
 *   level whose handle was given up is entered again, and checked to be the same directory, when
 *   the walk climbs back to it);
 * - memory: a level keeps its name, identity and at most {@link BATCH} pending names, and a walk at
 *   most {@link NAME_BUDGET} pending names over all its levels ({@link PendingNames});
 * - listing: a directory is read at most {@link BATCH} names per pass.
 * docs/reliability.md lists them with the other bounds.
 */

/** Directory handles of one walk kept open (the named directory's and the deepest levels'). */
export const OPEN_DIRS = 16;
/** Names read from one directory per listing pass. */
export const BATCH = 1024;
/** Pending names over all levels of one walk (beyond it, a level reads one name per pass). */
export const NAME_BUDGET = 65_536;

/** The count of names a walk has read and not yet acted on, over all its levels. */
export class PendingNames {
  #count = 0;

  get count(): number {
    return this.#count;
  }

  /** Names the next listing pass may read: {@link BATCH}, fewer once the budget is nearly spent, never less than one (the walk always progresses). */
  want(): number {
    return Math.max(1, Math.min(BATCH, NAME_BUDGET - this.#count));
  }

  /** `n` names read (or put back to be handled again). */
  add(n = 1): void {
    this.#count += n;
  }

  /** `n` names handled or dropped. */
  remove(n = 1): void {
    this.#count -= n;
  }

  /** The walk ended: nothing pending. */
  reset(): void {
    this.#count = 0;
  }
}
