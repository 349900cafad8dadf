/**
 * What `npm start` and the pretest cost a returning operator: `npm start` rebuilds only when the build's
 * inputs changed (scripts/build.ts --if-changed), and a long install is announced on stderr before it
 * starts (scripts/apt-install.sh, which install-linux-tools.sh and install-test-tools.sh run), instead
 * of a silent minute.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { buildInputsHash } from "../../scripts/build.ts";
import { repoRoot } from "../helpers/daemon-process.ts";

test("the inputs' hash changes with a source, a build script or the commit, and only then", (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "build-inputs-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, "src", "a"), { recursive: true });
  writeFileSync(path.join(dir, "src", "a", "x.ts"), "export const x = 1;\n");
  writeFileSync(path.join(dir, "package.json"), "{}");
  const h0 = buildInputsHash(dir, "c1");
  assert.equal(buildInputsHash(dir, "c1"), h0, "stable");
  writeFileSync(path.join(dir, "src", "a", "x.ts"), "export const x = 2;\n");
  const h1 = buildInputsHash(dir, "c1");
  assert.notEqual(h1, h0, "a source changed");
  writeFileSync(path.join(dir, "src", "a", "y.ts"), "");
  const h2 = buildInputsHash(dir, "c1");
  assert.notEqual(h2, h1, "a source added");
  assert.notEqual(buildInputsHash(dir, "c2"), h2, "another commit");
  writeFileSync(path.join(dir, "README.md"), "not an input");
  assert.equal(buildInputsHash(dir, "c1"), h2, "not an input");
});

test("build --if-changed: a second run with nothing changed leaves dist/ as it is and returns quickly", () => {
  const node = process.execPath, script = path.join(repoRoot, "scripts", "build.ts");
  execFileSync(node, [script, "--if-changed"], { cwd: repoRoot, stdio: "ignore", timeout: 180_000 });
  const bundle = path.join(repoRoot, "dist", "bundle", "main.js");
  const before = statSync(bundle).mtimeMs;
  const t0 = Date.now();
  execFileSync(node, [script, "--if-changed"], { cwd: repoRoot, stdio: "ignore", timeout: 60_000 });
  const ms = Date.now() - t0;
  assert.equal(statSync(bundle).mtimeMs, before, "not rebuilt");
  assert.ok(ms < 5_000, `${ms} ms`);
  assert.equal(readFileSync(path.join(repoRoot, ".cache", "build-inputs"), "utf8"), buildInputsHash());
  // and npm start runs it
  assert.match((JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { scripts: { prestart: string } }).scripts.prestart, /node scripts\/build\.ts --if-changed$/);
});

test("apt-install.sh says what it installs, on stderr, before apt-get runs", (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "apt-install-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Stand-ins on PATH: dpkg-query reports nothing installed; apt-get records when it ran.
  const order = path.join(dir, "order");
  writeFileSync(path.join(dir, "dpkg-query"), "#!/bin/sh\nexit 1\n");
  writeFileSync(path.join(dir, "apt-get"), `#!/bin/sh\necho apt-get >> ${JSON.stringify(order)}\nexit 0\n`);
  writeFileSync(path.join(dir, "id"), "#!/bin/sh\necho 0\n"); // as root, whoever runs the test
  for (const f of ["dpkg-query", "apt-get", "id"]) chmodSync(path.join(dir, f), 0o755);
  const r = spawnSync("bash", [path.join(repoRoot, "scripts", "apt-install.sh"), "test-who", "pkg-a", "pkg-b"], {
    encoding: "utf8",
    env: { ...process.env, PATH: `${dir}:${process.env.PATH}` },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, "test-who: installing pkg-a pkg-b with apt-get (log: /tmp/test-who.log) ...\n");
  assert.equal(readFileSync(order, "utf8"), "apt-get\n");
  rmSync("/tmp/test-who.log", { force: true });
});
