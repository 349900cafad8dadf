/**
 * Path confinement for the filesystem group (and SMB `local_path`): every path a client names must lie
 * inside the kubelet path or one of the configured working directories.
 *
 * Contract of everything exported here (codes are `Code` values from errors.ts):
 * - malformed input (empty, relative, NUL/control characters, too long, forbidden characters,
 *   `..` component on Windows) → `CsiProxyError` with `Code.InvalidArgument`;
 * - a well-formed path that is, or resolves (through symlinks of its existing parents, or of the
 *   path itself with `followFinal`) to, a location outside every allowed directory →
 *   `Code.PermissionDenied`;
 * - a resolver failure other than "does not exist": `Code.InvalidArgument` for ELOOP /
 *   ENAMETOOLONG (the client's path is unusable), `Code.Internal` otherwise (cause kept).
 *
 * Upstream (kubernetes-csi/csi-proxy `validatePathWindows`, reference-behaviour.md §0.4) only has
 * the Windows string checks plus a plain, case-insensitive string-prefix test. Deliberate
 * differences, all of them stricter except the `a..b` one (§8.3 "known gaps"):
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
import path from "node:path";
import { Code, CsiProxyError } from "../../errors.ts";
import { fragmentError } from "../../compat/driver-fragments.ts";

/** Which path grammar applies. `linux` = POSIX paths, `win32` = drive-letter Windows paths. */
export type Platform = "linux" | "win32";

/**
 * Injected canonicaliser (a realpath). Contract:
 * - something exists at `p` → its canonical absolute path (every symlink/junction resolved);
 * - `p` is a dangling symlink → where it points, canonicalised as far as that exists — never null,
 *   otherwise a dangling link in a parent (`kubelet/link -> /etc/new`) would look like a plain
 *   missing directory and `Mkdir kubelet/link/x` would escape;
 * - there is no directory entry at `p` (ENOENT / ENOTDIR) → `null`;
 * - anything else → throw (errno-style errors with `code` keep their meaning, see module doc).
 * A bare `fs.realpath` mapped ENOENT→null does NOT satisfy the dangling-link rule; use
 * {@link createFsResolver}.
 */
export type PathResolver = (p: string) => Promise<string | null>;

export interface PathPolicyOptions {
  platform: Platform;
  /** The working dirs, then the kubelet path; order is kept for error messages. Must be absolute. */
  allowedDirs: string[];
  resolve: PathResolver;
  /**
   * Optional (Linux): for each canonical path, the directory it really shows when it lies inside a
   * bind mount of a directory (see host/linux/bind-mount-source.ts), else null. With it, a path
   * whose bind source is outside every allowed dir (and outside every allowed dir's own bind source)
   * is refused like a symbolic link pointing there.
   */
  bindSources?: (paths: readonly string[]) => Promise<(string | null)[]>;
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

/** Linux PATH_MAX: the longest accepted path, in UTF-8 bytes. */
export const LINUX_PATH_MAX = 4096;
/** Upstream's Windows limit (MAX_PATH), compared with the UTF-8 byte length as Go's `len` does. */
export const WINDOWS_MAX_PATH = 260;
/** Symlink hops followed by {@link createFsResolver} when resolving dangling links (Linux MAXSYMLINKS). */
const MAX_LINK_HOPS = 40;

const pathFor = (platform: Platform) => (platform === "win32" ? path.win32 : path.posix);

const invalid = (message: string) => new CsiProxyError(Code.InvalidArgument, message);

/**
 * Linux syntax rules, in this order: non-empty, at most {@link LINUX_PATH_MAX} UTF-8 bytes, no NUL
 * byte, absolute. Throws `CsiProxyError` with `Code.InvalidArgument`; returns nothing otherwise.
 * Empty and relative paths carry the `path-not-absolute` fragment (compat/driver-fragments.ts), as
 * upstream's empty and non-`X:\` paths do.
 * `..`, `.` and duplicate slashes are allowed here (normalised later).
 */
export function validateLinuxPathSyntax(p: string): void {
  if (p.length === 0) throw fragmentError("path-not-absolute", "path must not be empty");
  const bytes = Buffer.byteLength(p, "utf8");
  if (bytes > LINUX_PATH_MAX) throw invalid(`path length ${bytes} exceeds maximum bytes: ${LINUX_PATH_MAX}`);
  if (p.includes("\0")) throw invalid(`path contains a NUL byte: ${JSON.stringify(p)}`);
  if (!p.startsWith("/")) throw fragmentError("path-not-absolute", `not an absolute path: ${p}`);
}

const DRIVE_PREFIX = /^[a-zA-Z]:\\/;
/** Upstream's set `" / : ? * |`, plus `<`, `>` and C0 controls (NUL included). */
const WINDOWS_INVALID_CHARS = /["/:?*|<>\x00-\x1f]/;
/** `..`, `...`, `.. `, `. .`: only dots and spaces, at least two dots. */
const DOTS_ONLY_COMPONENT = /^[. ]*\.[. ]*\.[. ]*$/;

/**
 * Upstream's Windows syntax checks, in upstream's order and with its exact texts, all
 * `Code.InvalidArgument` (`<p>` = the path as given):
 * 1. UTF-8 byte length > 260 → `path length <n> exceeds maximum characters: 260`;
 * 2. leading `\` (UNC `\\server\share`, `\\?\`, `\\.\pipe\…`, rooted `\x`) →
 *    `invalid character \ at beginning of path: <p>`; (upstream's separate UNC check after it is
 *    unreachable and therefore omitted);
 * 3. after a `X:\` prefix: any of `" / : ? * |` — and here also `<`, `>`, U+0000–U+001F — or a `..`
 *    component (or a dots-and-spaces-only component with two or more dots) →
 *    `path contains invalid characters: <p>`; unlike upstream, `..` inside a name (`a..b`) passes;
 *    without that prefix, the same characters anywhere in the path or `..` anywhere (`C:/x`, `C:x`,
 *    `/x`, `a..b`) → the same text, as upstream;
 * 4. any other path not starting with `X:\` (including the empty path) →
 *    `not an absolute Windows path: <p>`.
 */
export function validateWindowsPathSyntax(p: string): void {
  const bytes = Buffer.byteLength(p, "utf8");
  if (bytes > WINDOWS_MAX_PATH) throw invalid(`path length ${bytes} exceeds maximum characters: ${WINDOWS_MAX_PATH}`);
  if (p.startsWith("\\")) throw invalid(`invalid character \\ at beginning of path: ${p}`);
  if (DRIVE_PREFIX.test(p)) {
    const rest = p.slice(3);
    if (WINDOWS_INVALID_CHARS.test(rest) || rest.split("\\").some((c) => DOTS_ONLY_COMPONENT.test(c))) {
      throw invalid(`path contains invalid characters: ${p}`);
    }
  } else {
    // as upstream: without the `X:\` prefix the whole path is searched, `..` anywhere counts
    if (WINDOWS_INVALID_CHARS.test(p) || p.includes("..")) throw invalid(`path contains invalid characters: ${p}`);
    throw fragmentError("path-not-absolute", `not an absolute Windows path: ${p}`);
  }
}

/** Lexical normalisation: `.`, `..`, duplicate and trailing separators (root kept); `/` → `\` on win32. */
function normalise(p: string, platform: Platform): string {
  const m = pathFor(platform);
  let n = m.normalize(p);
  const root = m.parse(n).root;
  while (n.length > root.length && (n.endsWith(m.sep) || (platform === "win32" && n.endsWith("/")))) {
    n = n.slice(0, -1);
  }
  return n;
}

/**
 * Windows case folding for comparisons: per code point simple upper-casing, keeping characters
 * whose upper case is not a single character (NTFS's upcase table is 1:1, `ß` stays `ß`).
 */
function foldWin32(s: string): string {
  let out = "";
  for (const ch of s) {
    const up = ch.toUpperCase();
    out += up.length === ch.length ? up : ch;
  }
  return out;
}

/** `isWithin` on already normalised paths. */
function within(child: string, parent: string, platform: Platform): boolean {
  const m = pathFor(platform);
  const c = platform === "win32" ? foldWin32(child) : child;
  const p = platform === "win32" ? foldWin32(parent) : parent;
  if (c === p) return true;
  const prefix = p.endsWith(m.sep) ? p : p + m.sep;
  return c.startsWith(prefix);
}

function samePath(a: string, b: string, platform: Platform): boolean {
  return platform === "win32" ? foldWin32(a) === foldWin32(b) : a === b;
}

/**
 * True when `child` equals `parent` or lies inside it on a directory boundary (`/a/bc` is not inside
 * `/a/b`). Both are normalised lexically first (`.`, `..`, duplicate/trailing separators; on
 * win32 `/` counts as `\`); comparison is case-insensitive on win32 and byte-exact on linux. Pure
 * string logic: no symlink resolution. Never throws.
 */
export function isWithin(child: string, parent: string, platform: Platform): boolean {
  return within(normalise(child, platform), normalise(parent, platform), platform);
}

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
  const m = pathFor(platform);
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
  const m = pathFor(platform);
  const allowedDirs = Object.freeze([...options.allowedDirs]);
  const lexicalRoots = allowedDirs.map((d) => {
    if (!m.isAbsolute(d) || (platform === "win32" && !/^(?:[a-zA-Z]:[\\/]|[\\/]{2})/.test(d))) {
      throw invalid(`allowed directory is not an absolute path: ${JSON.stringify(d)}`);
    }
    return normalise(d, platform);
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
      const grpc = code === "ELOOP" || code === "ENAMETOOLONG" ? Code.InvalidArgument : Code.Internal;
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
    return normalise(r, platform);
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
      const lexical = normalise(input, platform);
      const roots = await allowedRoots();
      // Lexical pre-filter: never touch the filesystem for paths plainly outside (no oracle).
      const plausible =
        lexicalRoots.some((r) => within(lexical, r, platform)) ||
        roots.some((r) => within(lexical, r.real, platform) || within(lexical, r.entry, platform));
      if (!plausible) throw denied(input, lexical);
      const canonical = alongside?.(lexical);
      const known = canonical ? await canonical.catch(() => false) : false;
      const checked = known === true ? lexical : (await canonicalise(lexical, followFinal)).path;
      if (!roots.some((r) => within(checked, r.real, platform) || samePath(checked, r.entry, platform))) {
        throw denied(input, checked);
      }
      if (options.bindSources) {
        const [source, ...rootSources] = await options.bindSources([checked, ...roots.map((r) => r.real)]);
        if (source !== null) {
          const inside = (dir: string | null) => dir !== null && within(normalise(source, platform), normalise(dir, platform), platform);
          if (!roots.some((r) => inside(r.real)) && !rootSources.some(inside)) throw denied(input, source);
        }
      }
      return checked;
    },
    async isAllowedRoot(checked) {
      const roots = await allowedRoots();
      return roots.some((r) => samePath(checked, r.real, platform) || samePath(checked, r.entry, platform));
    },
  };
}
