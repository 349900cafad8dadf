/**
 * The mount a call on a POSIX path will reach: the path's symbolic links followed component by
 * component (as the kernel's lookup does), so that a link on one filesystem into another counts
 * against the filesystem behind it (mount-gate.ts), never the one the link lies on.
 *
 * Each component is looked at with `readLink` (lstat, and readlink for a link) run by `lookAt` under the
 * mount it lies on (mount-gate.ts runs it in that mount's slots: a lookup that hangs holds a slot of
 * the hung mount, not of `/`). A component on a mount `isSilent` marks not responding is never looked
 * at: that mount is the answer (the call reaches it, or at least has to pass through it). A
 * component that cannot be looked at (missing, not a directory, no permission) ends the walk: the rest
 * of the path is taken lexically from there, which is where a call creating it would act. At most
 * {@link MAX_LINKS} links are followed (the kernel's ELOOP bound); past it the mount reached so far is
 * the answer (the call itself then fails ELOOP). With `followLast: false` (lstat, creating a link) the
 * last component is not followed: the mount it lies on is the answer.
 */

/** Links followed per path, as the kernel's MAXSYMLINKS. */
export const MAX_LINKS = 40;

export interface ReachOptions {
  /** The mount point holding an absolute, link-free path (lexically). */
  mountOf(path: string): Promise<string>;
  /** A link's target when `path` is a symbolic link, null when it is not; rejects when it cannot be looked at. */
  readLink(path: string): Promise<string | null>;
  /** Whether the mount at `mountPoint` is marked not responding now. */
  isSilent(mountPoint: string): boolean;
  /** What a recent look-up of `path` found (a target, or null for "not a link"), undefined when none is kept: used without a look-up. */
  known?(path: string): string | null | undefined;
  /** Runs a look-up of a component under the mount it lies on. */
  lookAt<T>(mountPoint: string, op: () => Promise<T>): Promise<T>;
}

const parts = (p: string) => p.split("/").filter((x) => x !== "" && x !== ".");
const join = (dir: string, name: string) => (dir === "/" ? `/${name}` : `${dir}/${name}`);
const parent = (dir: string) => (dir.lastIndexOf("/") <= 0 ? "/" : dir.slice(0, dir.lastIndexOf("/")));

/** The mount point a call on the absolute path `path` reaches (see the module comment). */
export async function reachedMount(path: string, o: ReachOptions, options: { followLast?: boolean } = {}): Promise<string> {
  let resolved = "/";
  const rest = parts(path);
  let links = 0;
  while (rest.length > 0) {
    const name = rest.shift()!;
    if (name === "..") {
      resolved = parent(resolved);
      continue;
    }
    const next = join(resolved, name);
    const mount = await o.mountOf(next);
    if (o.isSilent(mount)) return mount;
    // A call that does not follow its last component (lstat, symlink) acts on the mount it lies on.
    if (rest.length === 0 && options.followLast === false) return mount;
    let target: string | null | undefined = o.known?.(next);
    try {
      if (target === undefined) target = await o.lookAt(mount, () => o.readLink(next));
    } catch (err) {
      // The look-up's own errno (ENOENT, ENOTDIR, EACCES…): the rest is lexical from here. Anything
      // else is the gate's refusal of that mount (not responding, no slot): the call reaches it.
      if (typeof (err as NodeJS.ErrnoException).code === "string") return o.mountOf(rest.reduce(join, next));
      return mount;
    }
    if (target === null) {
      resolved = next;
      continue;
    }
    if (++links > MAX_LINKS) return mount;
    if (target.startsWith("/")) resolved = "/";
    rest.unshift(...parts(target));
  }
  return o.mountOf(resolved);
}
