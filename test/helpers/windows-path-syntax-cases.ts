/**
 * Upstream's Windows path syntax errors with their exact texts (docs/upstream-behaviour.md, Path
 * validation), plus csi-proxy's stricter additions: shared by the syntax check's tests
 * (src/policy/path-syntax.test.ts) and the path policy's on win32 (src/policy/path-policy.test.ts).
 */
export const WINDOWS_SYNTAX_ERRORS: { name: string; path: string; message: string }[] = (() => {
  const base = "C:\\var\\lib\\kubelet\\"; // 19 bytes
  const chars = (p: string) => `path contains invalid characters: ${p}`;
  const notAbs = (p: string) => `not an absolute Windows path: ${p}`;
  const lead = (p: string) => `invalid character \\ at beginning of path: ${p}`;
  const rows: [string, string, string][] = [
    ["261 bytes", base + "a".repeat(242), "path length 261 exceeds maximum characters: 260"],
    ["261 bytes of which multi-byte (140 characters)", base + "é".repeat(121), "path length 261 exceeds maximum characters: 260"],
    ["length is checked before the leading backslash", "\\".repeat(300), "path length 300 exceeds maximum characters: 260"],
    ["UNC path", "\\\\server\\share\\x", lead("\\\\server\\share\\x")],
    ["\\\\?\\ long-path prefix", "\\\\?\\C:\\var\\lib\\kubelet\\pods", lead("\\\\?\\C:\\var\\lib\\kubelet\\pods")],
    ["\\\\?\\UNC prefix", "\\\\?\\UNC\\server\\share", lead("\\\\?\\UNC\\server\\share")],
    ["\\\\.\\ device path (named pipe)", "\\\\.\\pipe\\x", lead("\\\\.\\pipe\\x")],
    ["\\\\.\\ device path (drive)", "\\\\.\\C:\\var\\lib\\kubelet", lead("\\\\.\\C:\\var\\lib\\kubelet")],
    ["rooted path without drive", "\\var\\lib\\kubelet", lead("\\var\\lib\\kubelet")],
    ["leading backslash wins over invalid characters", "\\\\?\\C:\\a|b", lead("\\\\?\\C:\\a|b")],
    ...['"', "/", ":", "?", "*", "|"].map((ch): [string, string, string] => [`invalid character ${ch}`, `${base}a${ch}b`, chars(`${base}a${ch}b`)]),
    ["alternate data stream", `${base}x:stream`, chars(`${base}x:stream`)],
    ["`..` component escaping", `${base}..\\..\\Windows`, chars(`${base}..\\..\\Windows`)],
    ["`..` as the last component", `${base}..`, chars(`${base}..`)],
    ["`..` right after the drive", "C:\\..\\x", chars("C:\\..\\x")],
    // stricter than upstream
    ["`...` component (stricter than upstream's reading)", `${base}...\\x`, chars(`${base}...\\x`)],
    ["`.. ` component with trailing space", `${base}.. \\x`, chars(`${base}.. \\x`)],
    // dots separated by spaces contain no `..` (upstream accepts them; Win32 trims them by position: see docs/driver-compat.md)
    ["`. .` component in the middle (upstream: accepted)", `${base}. .\\dir`, chars(`${base}. .\\dir`)],
    ["`. .` as the last component (Win32: the directory containing it)", `${base}. .`, chars(`${base}. .`)],
    ["`. . .` component", `${base}. . .\\x`, chars(`${base}. . .\\x`)],
    ["` . .` component with a leading space", `${base} . .\\x`, chars(`${base} . .\\x`)],
    ["< (not rejected upstream)", `${base}a<b`, chars(`${base}a<b`)],
    ["> (not rejected upstream)", `${base}a>b`, chars(`${base}a>b`)],
    ["NUL (not rejected upstream)", `${base}a\0b`, chars(`${base}a\0b`)],
    ["newline (not rejected upstream)", `${base}a\nb`, chars(`${base}a\nb`)],
    ["U+001F (not rejected upstream)", `${base}a\x1fb`, chars(`${base}a\x1fb`)],
    // not absolute
    ["empty path", "", notAbs("")],
    ["relative path", "var\\lib\\kubelet", notAbs("var\\lib\\kubelet")],
    // not absolute, with upstream's invalid characters anywhere (upstream checks them first)
    ["forward slashes after the drive", "C:/var/lib/kubelet", chars("C:/var/lib/kubelet")],
    ["drive-relative path", "C:var\\lib\\kubelet", chars("C:var\\lib\\kubelet")],
    ["POSIX path", "/var/lib/kubelet", chars("/var/lib/kubelet")],
    ["digit instead of a drive letter", "1:\\var", chars("1:\\var")],
    ["drive letter only", "C:", chars("C:")],
    ["relative path with `..` inside a name", "var\\a..b", chars("var\\a..b")],
    ["relative `..` component", "..\\x", chars("..\\x")],
  ];
  return rows.map(([name, p, message]) => ({ name, path: p, message }));
})();
