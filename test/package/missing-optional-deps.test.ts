// scripts/missing-optional-deps.ts: which of the lock's optional packages this machine needs and lacks
// (the check scripts/ensure-node-deps.sh runs after `npm ci`, for npms that skip them on an old Node).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { missingOptionalDeps } from "../../scripts/missing-optional-deps.ts";

describe("missingOptionalDeps", () => {
  it("lists this platform's missing optional packages, not other platforms' nor installed ones", () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "optional-deps-"));
    try {
      const here = { os: [process.platform], cpu: [process.arch] };
      const glibc = (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime;
      const otherLibc = glibc ? "musl" : "glibc";
      const packages = {
        "": { name: "x" },
        "node_modules/here-missing": { version: "1.0.0", optional: true, ...here },
        "node_modules/here-installed": { version: "1.0.0", optional: true, ...here },
        "node_modules/here-not-optional": { version: "1.0.0", ...here },
        "node_modules/other-os": { version: "1.0.0", optional: true, os: ["aix"], cpu: [process.arch] },
        "node_modules/negated-os": { version: "1.0.0", optional: true, os: [`!${process.platform}`] },
        "node_modules/other-libc": { version: "1.0.0", optional: true, ...here, libc: [otherLibc] },
        "node_modules/@scope/nested/node_modules/any-platform": { version: "1.0.0", optional: true },
      };
      writeFileSync(path.join(root, "package-lock.json"), JSON.stringify({ lockfileVersion: 3, packages }));
      mkdirSync(path.join(root, "node_modules/here-installed"), { recursive: true });
      writeFileSync(path.join(root, "node_modules/here-installed/package.json"), "{}");
      assert.deepEqual(missingOptionalDeps(root).map(([where]) => where).sort(), ["node_modules/@scope/nested/node_modules/any-platform", "node_modules/here-missing"]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("finds nothing missing in this checkout after npm ci", () => {
    assert.deepEqual(missingOptionalDeps(path.resolve(import.meta.dirname, "../..")), []);
  });
});
