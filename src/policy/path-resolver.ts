/**
 * Symlink resolution for the path policy: the PathResolver contract (a realpath that also follows
 * dangling links) and its implementation over injected fs primitives.
 */
import { pathApi } from "./path-arithmetic.ts";
import type { Platform } from "./path-syntax.ts";

/**
 * Injected canonicaliser (a realpath). Contract:
 * - something exists at `p` → its canonical absolute path (every symlink/junction resolved);
 * - `p` is a dangling symlink → where it points, canonicalised as far as that exists — never null,
 *   otherwise a dangling link in a parent (`kubelet/link -> /etc/new`) would look like a plain
 *   missing directory and `Mkdir kubelet/link/x` would escape;
 * - there is no directory entry at `p` (ENOENT / ENOTDIR) → `null`;
 * - anything else → throw (errno-style errors with `code` keep their meaning: path-policy.ts
 *   answers ELOOP / ENAMETOOLONG with InvalidArgument, anything else with Internal).
 * A bare `fs.realpath` mapped ENOENT→null does NOT satisfy the dangling-link rule; use
 * {@link createFsResolver}.
 */
export type PathResolver = (p: string) => Promise<string | null>;

/** Symlink hops followed by {@link createFsResolver} when resolving dangling links (Linux MAXSYMLINKS). */
const MAX_LINK_HOPS = 40;

/** Anything that failed with an errno-style `code` of ENOENT/ENOTDIR: "no such entry". */
function isMissing(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** The filesystem primitives {@link createFsResolver} needs; `node:fs/promises` satisfies it. */
export interface ResolverFs {
  realpath(p: string): Promise<string>;
  lstat(p: string): Promise<{ isSymbolicLink(): boolean }>;
  readlink(p: string): Promise<string>;
}

/**
 * A {@link PathResolver} honouring the full contract, dangling symlinks included, built from
 * injected fs primitives (pass `fs.promises` in the composition root). Uses `realpath` and only
 * falls back to `lstat`/`readlink` when that reports a missing entry. Throws an error with
 * `code: "ELOOP"` after {@link MAX_LINK_HOPS} dangling-link hops.
 * Windows caveat (unverified on a real host): Node's realpath uses GetFinalPathNameByHandle, so
 * a folder that is a volume mount point may resolve to a path outside the allowed dirs or fail;
 * check this with the Windows integration tests before relying on it there.
 */
export function createFsResolver(fs: ResolverFs, platform: Platform): PathResolver {
  const m = pathApi(platform);
  const resolveAt = async (p: string, hops: number): Promise<string | null> => {
    try {
      return await fs.realpath(p);
    } catch (e) {
      if (!isMissing(e)) throw e;
    }
    let isLink: boolean;
    try {
      isLink = (await fs.lstat(p)).isSymbolicLink();
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
    // An entry exists at p, so its parent exists (and resolves).
    let parent: string;
    try {
      parent = await fs.realpath(m.dirname(p));
    } catch (e) {
      if (isMissing(e) && hops < MAX_LINK_HOPS) return resolveAt(p, hops + 1); // renamed meanwhile
      throw e;
    }
    if (!isLink) return m.join(parent, m.basename(p)); // created between realpath and lstat
    if (hops >= MAX_LINK_HOPS) {
      throw Object.assign(new Error(`too many levels of symbolic links: ${p}`), { code: "ELOOP" });
    }
    let link: string;
    try {
      link = await fs.readlink(p);
    } catch (e) {
      // Replaced or removed since lstat (a concurrent rename): resolve again from the start.
      const code = (e as { code?: unknown } | null)?.code;
      if ((code === "EINVAL" || isMissing(e)) && hops < MAX_LINK_HOPS) return resolveAt(p, hops + 1);
      throw e;
    }
    const target = m.resolve(parent, link);
    const tail: string[] = [];
    for (let cur = target; ; cur = m.dirname(cur)) {
      const real = await resolveAt(cur, hops + 1);
      if (real !== null) return tail.length ? m.join(real, ...tail) : real;
      if (m.dirname(cur) === cur) return target;
      tail.unshift(m.basename(cur));
    }
  };
  return (p) => resolveAt(p, 0);
}
