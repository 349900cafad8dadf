/**
 * Path confinement for the filesystem group (and SMB `local_path`, and mount points seen by the disk
 * and volume refusals): every path a client names must lie inside the kubelet path or one of the
 * configured working directories. Built on path-syntax.ts (the syntax checks), path-arithmetic.ts
 * (normalisation, inside-ness) and path-resolver.ts (symlink resolution).
 *
 * Contract of `check` (codes are `Code` values from errors.ts):
 * - malformed input (empty, relative, NUL/control characters, too long, forbidden characters,
 *   `..` component on Windows) → `CsiProxyError` with `Code.InvalidArgument`;
 * - a well-formed path that is, or resolves (through symlinks of its existing parents, or of the
 *   path itself with `followFinal`) to, a location outside every allowed directory →
 *   `Code.PermissionDenied`;
 * - a resolver failure other than "does not exist": `Code.InvalidArgument` for ELOOP /
 *   ENAMETOOLONG (the client's path is unusable), `Code.Unavailable` for a mount whose server is gone
 *   (errors.ts `DEAD_MOUNT_ERRNOS`: ENOTCONN, ECONNABORTED… as every host operation answers them),
 *   `Code.Internal` otherwise (cause kept).
 *
 * Upstream (kubernetes-csi/csi-proxy `validatePathWindows`, docs/upstream-behaviour.md, Path validation) only has
 * the Windows string checks plus a plain, case-insensitive string-prefix test. Deliberate
 * differences, all of them stricter except the `a..b` one (docs/upstream-behaviour.md, Security):
 * - the allowed-dir test is on directory boundaries (`C:\var\lib\kubelet-x` is outside
 *   `C:\var\lib\kubelet`), trailing separators are normalised;
 * - symlinks / junctions of existing ancestors are resolved through the injected resolver, so a
 *   link inside an allowed dir that points elsewhere cannot be used to escape;
 * - Windows additionally rejects `<`, `>` and C0 control characters (U+0000–U+001F);
 * - Windows rejects `..` only as a path component (and components made only of dots and spaces
 *   with two or more dots, such as `...` or `.. `, which some Win32 layers trim or treat
 *   specially); a name merely containing `..` (`a..b`, `..x`, `x..`) is accepted. Upstream rejects
 *   any `..` substring; accepting such names cannot change the directory a path lands in, because
 *   they are never interpreted as "parent", so the relaxation is safe;
 * - Linux (not supported upstream at all) normalises `..` lexically instead of rejecting it; this is
 *   safe because callers operate on the returned, already resolved path, never on the input.
 *
 * Callers MUST operate on the path returned by `check`, not on the request's string: that is the
 * path that was checked. Another writer inside an allowed dir may swap a checked directory for a
 * symlink between `check` and the operation: on Linux the hosts therefore act through directory
 * handles opened without following links (host/linux/dir-handle.ts) for every destructive or
 * creating step (recursive delete and empty, rmdir, symlink creation, mount, unmount), so a swap
 * makes the call fail, never act elsewhere. A bind mount is not a link: with `bindSources` (Linux)
 * a path inside a bind mount of an outside directory is refused as if it were a link there.
 */
import { Code, CsiProxyError, DEAD_MOUNT_ERRNOS } from "../errors.ts";
import { isSamePath, isWithinNormalised, normalisePath, pathApi } from "./path-arithmetic.ts";
import type { PathResolver } from "./path-resolver.ts";
import { validateLinuxPathSyntax, validateWindowsPathSyntax, type Platform } from "./path-syntax.ts";

export interface PathPolicyOptions {
  platform: Platform;
  /** The working dirs, then the kubelet path; order is kept for error messages. Must be absolute. */
  allowedDirs: string[];
  resolve: PathResolver;
  /**
   * Optional (Linux): for each canonical path, the directory it really shows when it lies inside a
   * bind mount of a directory (see host/linux/bind-mount-source.ts), else null; `{ unseen }` (the
   * bind's mount point) when it lies in a mount of a subdirectory whose place cannot be seen. With
   * it, a path whose bind source is outside every allowed dir (and outside every allowed dir's own
   * bind source) is refused like a symbolic link pointing there, and so is a path in an unseen bind
   * mounted strictly below an allowed dir (fail closed: it may show any directory); an allowed dir
   * that itself lies in such a mount (a container's or chroot's view) is taken as it is.
   */
  bindSources?: (paths: readonly string[]) => Promise<(string | null | { unseen: string })[]>;
}

export interface CheckOptions {
  /**
   * Resolve the final component too when it is a symlink (default false). Use it for operations that
   * act *through* the final component: RmdirContents and Mkdir. (CreateSymlink's source is checked
   * without it: the new link points to the source entry as given, as upstream.) Without it a final symlink is checked (and returned) as the link itself, which
   * is right for PathExists, Rmdir (removes the link) and the link location of CreateSymlink.
   */
  followFinal?: boolean;
  /**
   * Called at most once, synchronously, with the lexically normalised path once it passed the syntax
   * checks and the lexical pre-filter, before any symlink is resolved: lets the caller start a
   * read-only host call concurrently with the resolution. The caller may use that call's result only
   * when `check` then returns exactly the path it was given (no link or bind on the way: the same
   * entry); otherwise it must discard it and act on the returned path. Not called for paths refused
   * without touching the filesystem.
   * When it returns a promise that resolves `true`, the caller asserts that `lexical` is already
   * its own canonical form: no component before the final one is a link (with `followFinal`, the
   * final one neither), and every missing component comes after the existing ones (so nothing is
   * left to resolve, e.g. a realpath of it returned it unchanged, or a link-free walk ended in a
   * missing component): the policy then takes it as resolved instead of resolving its parent (the
   * allowed-dir and bind-mount checks still apply). `false` or a rejection: resolved as usual.
   */
  alongside?: (lexical: string) => Promise<boolean> | void;
}

export interface PathPolicy {
  readonly platform: Platform;
  /** The allowed dirs as configured (working dirs, then kubelet path). */
  readonly allowedDirs: readonly string[];
  /**
   * Validates `path`, normalises it lexically, resolves symlinks of its existing parents (and of
   * the path itself with `followFinal`), and returns that resolved path when it equals or lies
   * inside an allowed dir. Throws `CsiProxyError`: InvalidArgument for malformed input
   * (Windows: upstream's exact texts), PermissionDenied when outside (Linux:
   * `path <p> is not within the allowed directories [<dirs>]`, Windows: upstream's
   * `path: <p> is not within the working directories: [<dirs>]`, each followed by
   * ` (resolved to <r>)` when the checked path differs from the input).
   * Paths that are lexically outside every allowed dir are refused without touching the
   * filesystem (no existence or link-target oracle for arbitrary host paths).
   */
  check(path: string, options?: CheckOptions): Promise<string>;
  /**
   * True when `checked` (a path returned by `check`) is one of the allowed dirs itself (its real
   * location or its own entry). Destructive operations refuse those: removing or emptying the
   * kubelet directory is never a driver's intent.
   */
  isAllowedRoot(checked: string): Promise<boolean>;
}

const invalid = (message: string) => new CsiProxyError(Code.InvalidArgument, message);

interface AllowedRoot {
  /** Canonical form of the dir (followed through a final symlink): inside-ness is tested against it. */
  real: string;
  /** The dir's own entry (parents resolved, final component not followed): only equality counts. */
  entry: string;
}

/**
 * Creates the policy. Throws `CsiProxyError` (`Code.InvalidArgument`) at once when an allowed dir
 * is not absolute: an empty `--working-dir` would otherwise allow everything, as upstream's prefix
 * test does. Allowed dirs are canonicalised through `resolve` on first use and cached once they
 * exist (a missing one is retried on every check, lexically normalised meanwhile).
 */
export function createPathPolicy(options: PathPolicyOptions): PathPolicy {
  const { platform, resolve } = options;
  const m = pathApi(platform);
  const allowedDirs = Object.freeze([...options.allowedDirs]);
  const lexicalRoots = allowedDirs.map((d) => {
    if (!m.isAbsolute(d) || (platform === "win32" && !/^(?:[a-zA-Z]:[\\/]|[\\/]{2})/.test(d))) {
      throw invalid(`allowed directory is not an absolute path: ${JSON.stringify(d)}`);
    }
    return normalisePath(d, platform);
  });
  const cache: (AllowedRoot | undefined)[] = [];

  /** resolve() with its result checked and normalised, and its errors coded. */
  const canonicalOf = async (p: string): Promise<string | null> => {
    let r: string | null;
    try {
      r = await resolve(p);
    } catch (e) {
      if (e instanceof CsiProxyError) throw e;
      const code = (e as { code?: unknown } | null)?.code;
      const message = `failed to resolve ${p}: ${e instanceof Error ? e.message : String(e)}`;
      const grpc = code === "ELOOP" || code === "ENAMETOOLONG" ? Code.InvalidArgument : typeof code === "string" && DEAD_MOUNT_ERRNOS.has(code) ? Code.Unavailable : Code.Internal;
      throw new CsiProxyError(grpc, message, { cause: e });
    }
    if (r === null) return null;
    if (typeof r !== "string") {
      throw new CsiProxyError(Code.Internal, `failed to resolve ${p}: resolver returned ${typeof r}`);
    }
    if (platform === "win32") {
      // Win32 file namespace prefixes some realpath implementations return.
      if (/^\\\\\?\\[a-zA-Z]:\\/.test(r)) r = r.slice(4);
      else if (/^\\\\\?\\UNC\\/i.test(r)) r = "\\\\" + r.slice(8);
    }
    if (!m.isAbsolute(r)) {
      throw new CsiProxyError(Code.Internal, `failed to resolve ${p}: resolver returned a non-absolute path`);
    }
    return normalisePath(r, platform);
  };

  /**
   * Canonical form of the normalised absolute `p`: the deepest existing ancestor of its parent
   * (of `p` itself with followFinal) is resolved and the remaining components appended.
   * `existed` = the first directory asked about existed.
   */
  const canonicalise = async (p: string, followFinal: boolean) => {
    const tail: string[] = [];
    let cur = p;
    if (!followFinal && m.dirname(p) !== p) {
      tail.push(m.basename(p));
      cur = m.dirname(p);
    }
    for (let first = true; ; first = false) {
      const real = await canonicalOf(cur);
      if (real !== null) return { path: tail.length ? m.join(real, ...tail) : real, existed: first };
      if (m.dirname(cur) === cur) return { path: p, existed: false }; // not even the root exists
      tail.unshift(m.basename(cur));
      cur = m.dirname(cur);
    }
  };

  const allowedRoots = (): Promise<AllowedRoot[]> =>
    Promise.all(
      lexicalRoots.map(async (lexical, i) => {
        const cached = cache[i];
        if (cached) return cached;
        const real = await canonicalise(lexical, true);
        const entry = await canonicalise(lexical, false);
        const root = { real: real.path, entry: entry.path };
        if (real.existed) cache[i] = root;
        return root;
      }),
    );

  const denied = (input: string, checked: string) => {
    const dirs = `[${allowedDirs.join(" ")}]`;
    const text =
      platform === "win32"
        ? `path: ${input} is not within the working directories: ${dirs}`
        : `path ${input} is not within the allowed directories ${dirs}`;
    return new CsiProxyError(Code.PermissionDenied, checked === input ? text : `${text} (resolved to ${checked})`);
  };

  return {
    platform,
    allowedDirs,
    async check(input, { followFinal = false, alongside } = {}) {
      if (platform === "win32") validateWindowsPathSyntax(input);
      else validateLinuxPathSyntax(input);
      const lexical = normalisePath(input, platform);
      const roots = await allowedRoots();
      // Lexical pre-filter: never touch the filesystem for paths plainly outside (no oracle).
      const plausible =
        lexicalRoots.some((r) => isWithinNormalised(lexical, r, platform)) ||
        roots.some((r) => isWithinNormalised(lexical, r.real, platform) || isWithinNormalised(lexical, r.entry, platform));
      if (!plausible) throw denied(input, lexical);
      const canonical = alongside?.(lexical);
      const known = canonical ? await canonical.catch(() => false) : false;
      const checked = known === true ? lexical : (await canonicalise(lexical, followFinal)).path;
      if (!roots.some((r) => isWithinNormalised(checked, r.real, platform) || isSamePath(checked, r.entry, platform))) {
        throw denied(input, checked);
      }
      if (options.bindSources) {
        const [source, ...rootSources] = await options.bindSources([checked, ...roots.map((r) => r.real)]);
        if (typeof source === "string") {
          const inside = (dir: string | { unseen: string } | null) =>
            typeof dir === "string" && isWithinNormalised(normalisePath(source, platform), normalisePath(dir, platform), platform);
          if (!roots.some((r) => inside(r.real)) && !rootSources.some(inside)) throw denied(input, source);
        } else if (source !== null) {
          const at = normalisePath(source.unseen, platform);
          if (roots.some((r) => isWithinNormalised(at, r.real, platform) && !isSamePath(at, r.real, platform))) {
            throw denied(input, `${checked}, in a bind mount at ${source.unseen} whose source directory cannot be seen`);
          }
        }
      }
      return checked;
    },
    async isAllowedRoot(checked) {
      const roots = await allowedRoots();
      return roots.some((r) => isSamePath(checked, r.real, platform) || isSamePath(checked, r.entry, platform));
    },
  };
}
