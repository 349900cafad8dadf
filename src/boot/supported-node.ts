/**
 * Refuses an unsupported Node.js before anything else runs: imported first by the entries
 * (src/main.ts, src/cli/ctl.ts, and so their bundles), so an older Node.js gets one line on stderr
 * and exit code 1 — not V8's "unrecognized flag" errors from the start-up settings
 * (src/boot/v8-flags.ts sets flags that older V8s lack) nor a failure further in. The exe embeds its
 * own Node.js and always passes.
 */

/**
 * The oldest supported Node.js, [major, minor]: package.json "engines" says the same (a test checks).
 * 22.12: what every dependency declares (@connectrpc/connect-node 2.2 needs ≥ 22; Node 20 is past its
 * end of life) and the first 22 that loads this ES-module package from CommonJS `require()` unflagged.
 */
export const MIN_NODE = [22, 12] as const;

/** The line to print when `version` (e.g. "18.19.0") is older than {@link MIN_NODE}, else null. */
export function unsupportedNode(version: string = process.versions.node, execPath: string = process.execPath, platform: NodeJS.Platform = process.platform): string | null {
  const [major, minor] = version.split(".").map(Number);
  if (major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])) return null;
  // What brings its own Node.js on this platform: the exe on Windows; elsewhere a clone's `npm start`.
  const own = platform === "win32" ? "or use csi-proxy.exe, which brings its own" : "or, from a clone of the repository, `npm start`, which brings its own";
  return `csi-proxy needs Node.js ${MIN_NODE.join(".")} or later; ${execPath} is Node.js ${version}: install a supported Node.js (${own})\n`;
}

const refusal = unsupportedNode();
if (refusal !== null) {
  process.stderr.write(refusal);
  process.exit(1);
}
