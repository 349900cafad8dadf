// `npm run release`: the npm tarball and the Windows zip with SHA256SUMS, byte-identical when built
// twice from the same commit — the second time with the exe rebuilt from scratch (not the cache)
// and under another time zone.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { repoRoot } from "../helpers/daemon-process.ts";

const version = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")).version as string;
const zipName = `csi-proxy-${version}-windows-amd64.zip`;
const tarName = `csi-proxy-ts-${version}.tgz`;

describe("release artefacts", () => {
  let work: string;
  const runs: string[] = [];
  before(() => {
    work = mkdtempSync(path.join(tmpdir(), "csi-proxy-release-"));
    const variants: Record<string, string>[] = [{ TZ: "UTC" }, { TZ: "America/New_York", CSI_PROXY_EXE_REBUILD: "1" }];
    for (const [i, env] of variants.entries()) {
      const out = path.join(work, `run${i}`);
      const r = spawnSync(process.execPath, [path.join(repoRoot, "scripts/release.ts"), "--out", out], { env: { ...process.env, ...env }, encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr);
      runs.push(out);
    }
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("writes the tarball, the Windows zip and their SHA256SUMS", () => {
    const sums = readFileSync(path.join(runs[0], "SHA256SUMS"), "utf8");
    assert.deepEqual(sums.trim().split("\n").map((l) => l.split(/\s+/)[1]), [zipName, tarName].sort());
    const check = spawnSync("sha256sum", ["-c", "SHA256SUMS"], { cwd: runs[0], encoding: "utf8" });
    assert.equal(check.status, 0, check.stdout + check.stderr);
  });

  it("builds byte-identical artefacts twice from the same commit", () => {
    for (const f of ["SHA256SUMS", zipName, tarName]) {
      assert.ok(readFileSync(path.join(runs[0], f)).equals(readFileSync(path.join(runs[1], f))), `${f} differs between builds`);
    }
  });

  it("zips the exe, koffi, VERSION, LICENSE and README in a fixed order, modes and the commit's time", () => {
    const listing = execFileSync("zipinfo", ["-T", path.join(runs[0], zipName)], { encoding: "utf8", env: { ...process.env, TZ: "UTC" } });
    const entries = listing.split("\n").filter((l) => /^[-d]r/.test(l)).map((l) => l.trim().split(/\s+/));
    assert.deepEqual(entries.map((e) => e.at(-1)), ["csi-proxy.exe", "koffi/win32_x64/koffi.node", "VERSION", "LICENSE", "README.txt"]);
    assert.deepEqual(entries.map((e) => e[0]), ["-rwxr-xr-x", "-rw-r--r--", "-rw-r--r--", "-rw-r--r--", "-rw-r--r--"]);
    const commit = execFileSync("git", ["log", "-1", "--format=%cd", "--date=format-local:%Y%m%d.%H%M"], { cwd: repoRoot, encoding: "utf8", env: { ...process.env, TZ: "UTC" } }).trim();
    for (const e of entries) assert.equal(e.at(-2)!.slice(0, 13), commit, `${e.at(-1)} dated by the commit`);
    const exe = execFileSync("unzip", ["-p", path.join(runs[0], zipName), "csi-proxy.exe"], { maxBuffer: 512 << 20 });
    assert.equal(exe.toString("latin1", 0, 2), "MZ");
    assert.match(execFileSync("unzip", ["-p", path.join(runs[0], zipName), "VERSION"], { encoding: "utf8" }), new RegExp(`^v${version}\\n`));
  });

  it("packs the build, the systemd unit, the license and the Linux tool installer, not the sources", () => {
    const files = execFileSync("tar", ["-tzf", path.join(runs[0], tarName)], { encoding: "utf8" }).trim().split("\n");
    for (const f of ["package/package.json", "package/LICENSE", "package/README.md", "package/dist/main.js", "package/dist/bundle/main.js", "package/dist/bundle/ctl.js", "package/dist/index.d.ts", "package/packaging/systemd/csi-proxy.service", "package/scripts/install-linux-tools.sh", "package/scripts/apt-install.sh"]) {
      assert.ok(files.includes(f), `${f} packed`);
    }
    // Of scripts/, only what the README sends package users to: the Debian packages the host layer uses.
    const shippedScripts = new Set(["package/scripts/install-linux-tools.sh", "package/scripts/apt-install.sh"]);
    assert.deepEqual(files.filter((f) => (/^package\/(src|test|scripts|bench)\//.test(f) && !shippedScripts.has(f)) || f.includes(".test.")), []);
  });
});
