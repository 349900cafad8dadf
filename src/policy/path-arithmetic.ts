/**
 * Path arithmetic on absolute paths of one platform's grammar: lexical normalisation and the
 * directory-boundary "inside" test (case-insensitive on win32, byte-exact on linux). Pure string
 * logic: no symlink resolution, no filesystem access; never throws.
 */
import path from "node:path";
import type { Platform } from "./path-syntax.ts";

/** node:path's implementation for `platform`. */
export const pathApi = (platform: Platform) => (platform === "win32" ? path.win32 : path.posix);

/** Lexical normalisation: `.`, `..`, duplicate and trailing separators (root kept); `/` → `\` on win32. */
export function normalisePath(p: string, platform: Platform): string {
  const m = pathApi(platform);
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

/** {@link isWithin} on already normalised paths. */
export function isWithinNormalised(child: string, parent: string, platform: Platform): boolean {
  const m = pathApi(platform);
  const c = platform === "win32" ? foldWin32(child) : child;
  const p = platform === "win32" ? foldWin32(parent) : parent;
  if (c === p) return true;
  const prefix = p.endsWith(m.sep) ? p : p + m.sep;
  return c.startsWith(prefix);
}

/** Equality of already normalised paths (case-insensitive on win32). */
export function isSamePath(a: string, b: string, platform: Platform): boolean {
  return platform === "win32" ? foldWin32(a) === foldWin32(b) : a === b;
}

/**
 * True when `child` equals `parent` or lies inside it on a directory boundary (`/a/bc` is not inside
 * `/a/b`). Both are normalised lexically first (`.`, `..`, duplicate/trailing separators; on
 * win32 `/` counts as `\`); comparison is case-insensitive on win32 and byte-exact on linux. Pure
 * string logic: no symlink resolution. Never throws.
 */
export function isWithin(child: string, parent: string, platform: Platform): boolean {
  return isWithinNormalised(normalisePath(child, platform), normalisePath(parent, platform), platform);
}
