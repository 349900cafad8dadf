/**
 * Refuses an unsupported Node.js before anything else runs: imported first by the entries
 * (src/main.ts, src/cli/ctl.ts, and so their bundles), so an older Node.js gets one line on stderr
 * and exit code 1 — not V8's "unrecognized flag" errors from the start-up settings
 * (src/boot/v8-flags.ts sets flags that older V8s lack) nor a failure further in. The exe embeds its
 * own Node.js and always passes.
 */

/** The oldest supported Node.js, [major, minor]: package.json "engines" says the same (a test checks). */
export const MIN_NODE = [20, 10] as const;

/** The line to print when `version` (e.g. "18.19.0") is older than {@link MIN_NODE}, else null. */
export function unsupportedNode(version: string = process.versions.node, execPath: string = process.execPath): string | null {
  const [major, minor] = version.split(".").map(Number);
  if (major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])) return null;
  return `csi-proxy needs Node.js ${MIN_NODE.join(".")} or later; ${execPath} is Node.js ${version}: install a supported Node.js (or use the csi-proxy executable, which brings its own)\n`;
}

const refusal = unsupportedNode();
if (refusal !== null) {
  process.stderr.write(refusal);
  process.exit(1);
}
