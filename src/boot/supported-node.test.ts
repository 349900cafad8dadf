/**
 * The Node.js version gate (supported-node.ts): the boundary against package.json's "engines", and
 * the installed entries under a Node.js that reports an older version (process.versions faked by a
 * preload, since this machine's Node.js are all supported): one line, exit 1, nothing else.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { MIN_NODE, unsupportedNode } from "./supported-node.ts";

const repo = path.resolve(import.meta.dirname, "..", "..");

test("the minimum is package.json's engines.node", () => {
  const engines = JSON.parse(readFileSync(path.join(repo, "package.json"), "utf8")).engines.node;
  assert.equal(engines, `>=${MIN_NODE.join(".")}`);
});

test("older than the minimum: one line naming both versions; the minimum and newer: null", () => {
  for (const v of ["18.19.0", "20.19.2", "20.20.2", "22.11.0", "21.7.3", "16.20.2", "0.10.48"]) {
    const line = unsupportedNode(v, "/usr/bin/node", "linux");
    assert.ok(line !== null, v);
    assert.equal(line, `csi-proxy needs Node.js 22.12 or later; /usr/bin/node is Node.js ${v}: install a supported Node.js (or, from a clone of the repository, \`npm start\`, which brings its own)\n`);
  }
  // the exe exists only for Windows: named only there
  assert.equal(unsupportedNode("20.0.0", "C:\\node\\node.exe", "win32"), "csi-proxy needs Node.js 22.12 or later; C:\\node\\node.exe is Node.js 20.0.0: install a supported Node.js (or use csi-proxy.exe, which brings its own)\n");
  for (const v of ["22.12.0", "22.23.3", "23.0.0", "24.21.0", "100.0.0"]) assert.equal(unsupportedNode(v), null, v);
});

test("csi-proxy and csi-proxyctl under a Node.js reporting 18.19.0: exactly one line on stderr, exit 1, nothing started", (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "old-node-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const preload = path.join(dir, "old.mjs");
  writeFileSync(preload, 'Object.defineProperty(process, "versions", { value: { ...process.versions, node: "18.19.0" } });\n');
  for (const entry of ["src/main.ts", "src/cli/ctl.ts"]) {
    const r = spawnSync(process.execPath, ["--import", preload, path.join(repo, entry), "-kubelet-path", path.join(dir, "k"), "-socket-dir", path.join(dir, "s")], {
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(r.status, 1, `${entry}: exit ${r.status}, stderr ${r.stderr}`);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /^csi-proxy needs Node\.js 22\.12 or later; .* is Node\.js 18\.19\.0: install a supported Node\.js \(or, from a clone of the repository, `npm start`, which brings its own\)\n$/);
    assert.equal(r.stderr.split("\n").length, 2, `one line: ${JSON.stringify(r.stderr)}`);
  }
});
