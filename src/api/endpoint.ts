import * as path from "node:path";

/** The Windows named pipe of a group/version, as upstream's client dials it: `\\.\pipe\csi-proxy-<group>-<version>`. */
export function pipePath(group: string, version: string): string {
  return `\\\\.\\pipe\\csi-proxy-${group}-${version}`;
}

/** The Unix socket of a group/version on Linux: `<dir>/csi-proxy-<group>-<version>.sock`. */
export function socketPath(dir: string, group: string, version: string): string {
  return path.join(dir, `csi-proxy-${group}-${version}.sock`);
}

/**
 * Where a group/version listens: a named pipe on Windows, a Unix socket in `socketDir` elsewhere.
 * `socketDir` is ignored on Windows.
 */
export function endpointPath(group: string, version: string, options: { platform?: NodeJS.Platform; socketDir: string }): string {
  return (options.platform ?? process.platform) === "win32" ? pipePath(group, version) : socketPath(options.socketDir, group, version);
}

/** Default socket directory: /run/csi-proxy for root, $XDG_RUNTIME_DIR/csi-proxy (or /tmp/csi-proxy-<uid>) otherwise. */
export function defaultSocketDir(): string {
  const uid = process.getuid?.() ?? 0;
  if (uid === 0) return "/run/csi-proxy";
  const runtime = process.env.XDG_RUNTIME_DIR;
  return runtime ? path.join(runtime, "csi-proxy") : `/tmp/csi-proxy-${uid}`;
}
