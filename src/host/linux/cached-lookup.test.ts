import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { openCachedLookup, type CachedLookup } from "./cached-lookup.ts";
import { startStoppableFuse, fuseSkipReason, type StoppableFuse } from "../../../test/helpers/stoppable-fuse.ts";

const skip = process.platform !== "linux" ? "Linux only" : undefined;

describe("cached lookup (openat2 RESOLVE_CACHED)", { skip }, () => {
  let lookup: CachedLookup;
  let dir: string;
  before(async () => {
    const l = await openCachedLookup();
    assert.ok(l, "openat2 with RESOLVE_CACHED is available on this kernel (5.12+)");
    lookup = l;
    dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-cached-"));
    mkdirSync(path.join(dir, "d", "e"), { recursive: true });
    writeFileSync(path.join(dir, "d", "file"), "x");
    symlinkSync(path.join(dir, "d"), path.join(dir, "link-to-d"));
    symlinkSync(path.join(dir, "nowhere"), path.join(dir, "d", "dangling"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Looks the path up once the way the slow path would, so the kernel's caches hold it. */
  const warm = (p: string) => {
    try {
      lstatSync(p);
    } catch {
      // a missing path leaves a negative dentry, which is what "absent" needs
    }
  };

  it("answers present for an existing entry with no link on the way", () => {
    for (const p of [path.join(dir, "d", "e"), path.join(dir, "d", "file"), "/"]) {
      warm(p);
      assert.equal(lookup(p), "present", p);
    }
  });

  it("answers present for a final link, dangling or not (lstat semantics)", () => {
    for (const p of [path.join(dir, "d", "dangling"), path.join(dir, "link-to-d")]) {
      warm(p);
      assert.equal(lookup(p), "present", p);
    }
  });

  it("does not answer for a path with a link before its final component", () => {
    const p = path.join(dir, "link-to-d", "e");
    warm(p);
    assert.equal(lookup(p), undefined);
  });

  it("answers absent only from a cached negative entry, and never for a component under a file", () => {
    const missing = path.join(dir, "d", "missing");
    warm(missing);
    assert.equal(lookup(missing), "absent");
    const underFile = path.join(dir, "d", "file", "x");
    warm(underFile);
    assert.equal(lookup(underFile), undefined);
    assert.equal(lookup(path.join(dir, "d", "e") + "\0/etc"), undefined);
  });

  it("does not answer for files it cannot see in the caches (procfs magic links, kernfs)", () => {
    assert.equal(lookup("/proc/self/fd/0"), undefined);
    assert.equal(lookup("/sys/block"), undefined);
  });

  describe("on a FUSE filesystem whose daemon is stopped", { skip: fuseSkipReason() }, () => {
    let fuse: StoppableFuse;
    before(async () => {
      fuse = await startStoppableFuse(path.join(dir, "fuse"));
      writeFileSync(path.join(fuse.source, "seen"), "x");
      warm(path.join(fuse.mountpoint, "seen"));
      fuse.stop();
    });
    after(() => fuse?.remove());

    it("answers at once: cached entries from the cache, anything else undefined (no wait on the daemon)", () => {
      const t0 = performance.now();
      const answers = [lookup(path.join(fuse.mountpoint, "never-looked-up")), lookup(path.join(fuse.mountpoint, "seen")), lookup(fuse.mountpoint)];
      const ms = performance.now() - t0;
      assert.equal(answers[0], undefined);
      assert.ok(answers[1] === "present" || answers[1] === undefined, `seen: ${answers[1]}`); // present until the entry's FUSE timeout
      assert.equal(answers[2], "present");
      assert.ok(ms < 100, `three lookups took ${ms} ms`);
    });
  });
});
