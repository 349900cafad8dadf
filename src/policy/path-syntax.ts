/**
 * Path syntax: which grammar applies (Platform) and the per-platform checks every path a client
 * names passes before anything else (codes: InvalidArgument; texts as documented per function).
 * Pure: no filesystem access.
 */
import { Code, CsiProxyError } from "../errors.ts";
import { fragmentError } from "../compat/driver-fragments.ts";

/** Which path grammar applies. `linux` = POSIX paths, `win32` = drive-letter Windows paths. */
export type Platform = "linux" | "win32";

/** Linux PATH_MAX: the longest accepted path, in UTF-8 bytes. */
export const LINUX_PATH_MAX = 4096;
/** Upstream's Windows limit (MAX_PATH), compared with the UTF-8 byte length as Go's `len` does. */
export const WINDOWS_MAX_PATH = 260;

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
/**
 * `..`, `...`, `.. `, `. .`: only dots and spaces, at least two dots. Win32 path normalisation gives
 * such a component a meaning that depends on where it stands (the last component loses its trailing
 * dots and spaces and so names the directory containing it: `<k>\x\. .` is `<k>\x`; elsewhere one
 * trailing dot is dropped: `. .` becomes the name `. `) while `\\?\` paths and the path arithmetic
 * here take it literally, so the path checked would not be the path acted on. Refused, also where
 * upstream (which only looks for `..`) accepts it: docs/driver-compat.md.
 */
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
