// The built server's log lines cite the TypeScript file and line of the logging call (as klog cites
// main.go:123), not a bundle chunk: resolved when the bundle is built (scripts/log-sites.ts), with
// no source map read by the running program.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { repoRoot } from "../helpers/daemon-process.ts";
import { build } from "../../scripts/build.ts";
import { decodeMappings } from "../../scripts/log-sites.ts";

const bin = path.join(repoRoot, "dist/bundle/main.js");
const header = /^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ ([^\s\]]+)\] (.*)$/;

/** `file.ts:line` of the first line of src/`file` holding `text`. */
function sourceLine(file: string, text: string): string {
  const lines = readFileSync(path.join(repoRoot, "src", file), "utf8").split("\n");
  const i = lines.findIndex((l) => l.includes(text));
  assert.ok(i >= 0, `${text} in src/${file}`);
  return `${path.basename(file)}:${i + 1}`;
}

describe("log lines of the built server", () => {
  before(() => build());

  it("cite the source file and line of each logging call, before and while serving", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-log-sites-"));
    try {
      // Refused flags: logged from server-main.ts before anything is served.
      const refused = spawnSync(process.execPath, [bin, "-kubelet-path", dir, "-socket-dir", path.join(dir, "s"), "-state-dir", path.join(dir, "st"), "-vmodule", "x", "-default-fs-type", "btrfs"], { encoding: "utf8" });
      assert.equal(refused.status, 2, refused.stderr);
      const refusedLines = refused.stderr.trim().split("\n").map((l) => header.exec(l)!);
      assert.deepEqual(refusedLines.map((m) => m[1]), [sourceLine("server-main.ts", "is accepted for compatibility"), sourceLine("server-main.ts", "for (const line of checked.errors) logger.error(line)")]);
      assert.match(refused.stderr, /-default-fs-type must be ext4 or xfs, not "btrfs"/);

      // A serving daemon: start-up lines, one line per RPC at -v 2 from daemon.ts (another chunk), the stop.
      const server = spawn(process.execPath, [bin, "-v", "2", "-kubelet-path", dir, "-socket-dir", path.join(dir, "s"), "-state-dir", path.join(dir, "st")], { stdio: ["ignore", "ignore", "pipe"] });
      let err = "";
      server.stderr!.setEncoding("utf8").on("data", (s: string) => (err += s));
      const deadline = Date.now() + 120_000;
      while (!/Serving \d+ endpoints/.test(err) && server.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.match(err, /Serving \d+ endpoints/);
      const ctl = spawnSync(process.execPath, [path.join(repoRoot, "dist/bundle/ctl.js"), "-socket-dir", path.join(dir, "s"), "filesystem", "PathExists", JSON.stringify({ path: dir })], { encoding: "utf8" });
      assert.equal(ctl.status, 0, ctl.stderr);
      server.kill("SIGTERM");
      await new Promise((r) => server.once("exit", r));
      const lines = err.trim().split("\n").map((l) => header.exec(l));
      assert.ok(lines.every((m) => m !== null), err);
      const at = (text: string) => lines.find((m) => m![2].includes(text))?.[1];
      assert.equal(at("Starting CSI-Proxy Server"), sourceLine("server-main.ts", '"Starting CSI-Proxy Server'));
      assert.equal(at("PathExists code=OK"), sourceLine("daemon.ts", "else v2.info(line)"));
      assert.equal(at("Received SIGTERM"), sourceLine("server-main.ts", "Received ${signal}"));
      for (const m of lines) assert.match(m![1], /^[\w-]+\.ts:\d+$/, `every line cites a .ts file: ${m![0]}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the running program reads no source map: the bundles carry only the table of logging lines", () => {
    const files = readdirSync(path.join(repoRoot, "dist/bundle"), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".js"));
    const tables = files.map((f) => readFileSync(path.join(repoRoot, "dist/bundle", f), "utf8")).filter((code) => code.includes("__csiProxyLogSites ??= {}"));
    assert.ok(tables.length >= 2, "the server's chunks carry log-site tables");
    for (const code of tables) {
      assert.doesNotMatch(code, /\.js\.map["'`]/, "no code names a source map file");
      const entries = Object.keys(JSON.parse(/__csiProxyLogSites \?\?= \{\}\)\[[^\]]+\] = (\{.*\});$/m.exec(code)![1]));
      assert.ok(entries.length < 200, `${entries.length} entries: only logging lines`);
    }
  });

  it("decodes source-map VLQ mappings", () => {
    // Fields: generated column (reset per line), source, original line, original column (relative).
    // "SASA" = column 9, line +9; "CACA,GAEA" = column 1, line +1, then column +3, line +2.
    assert.deepEqual(decodeMappings("AAAA;SASA;CACA,GAEA"), [
      [{ column: 0, source: 0, line: 0 }],
      [{ column: 9, source: 0, line: 9 }],
      [{ column: 1, source: 0, line: 10 }, { column: 4, source: 0, line: 12 }],
    ]);
    assert.deepEqual(decodeMappings("gBAgBA"), [[{ column: 16, source: 0, line: 16 }]]);
  });
});
