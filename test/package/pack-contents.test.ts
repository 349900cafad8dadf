// What `npm pack` would publish (its prepack step builds dist/ first): the build, the systemd unit, the
// Linux tools installer, deploy/ and
// the package's own files — no test code, no test doubles, no sources.
import { it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { repoRoot } from "../helpers/daemon-process.ts";

/** A file the package must never hold: tests, fakes and other doubles, sources outside the build. */
const testCode = /(^|\/)(test|tests|doubles|fake|fakes)\/|\.test\.|(^|\/)fake[-_.]|(^|\/)[^/]*-fake\.|(^|\/)src\//;

it("npm pack ships the build only: no test files, no fakes", () => {
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--loglevel=error"], { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 << 20 });
  const files = (JSON.parse(out) as { files: { path: string }[] }[])[0].files.map((f) => f.path);
  assert.ok(files.includes("dist/index.js") && files.includes("dist/bundle/main.js"), "the build is packed");
  assert.deepEqual(files.filter((f) => testCode.test(f)), [], "test code in the package");
  const roots = new Set(files.map((f) => f.split("/")[0]));
  assert.deepEqual([...roots].sort(), ["LICENSE", "README.md", "deploy", "dist", "package.json", "packaging", "scripts"]);
  // of scripts/, only what README sends package users to (install-linux-tools.sh and the apt-install.sh it runs)
  assert.deepEqual(files.filter((f) => f.startsWith("scripts/")).sort(), ["scripts/apt-install.sh", "scripts/install-linux-tools.sh"]);
  // Nothing in the build refers to a test double either (a product module importing one would be bundled).
  const bundled = files.filter((f) => f.endsWith(".js"));
  const grep = spawnSync("grep", ["-l", "-E", "[\"'][^\"']*/doubles/|class Fake[A-Z]", ...bundled], { cwd: repoRoot, encoding: "utf8" });
  assert.equal(grep.status, 1, `grep finds no test double in the built files (status 1), got ${grep.status}: ${grep.stdout}${grep.stderr}`);
});
