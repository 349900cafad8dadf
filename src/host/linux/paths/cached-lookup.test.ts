import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { lstatSync, mkdirSync, mkdtempSync, rmSync, statfsSync, symlinkSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { openCachedLookup, type CachedLookup } from "./cached-lookup.ts";
import { startStoppableFuse, fuseSkipReason, type StoppableFuse } from "../../../../test/helpers/stoppable-fuse.ts";

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

  it("answers absent only from a cached negative entry (on every filesystem tried, whatever holds the temp dir), and never for a component under a file", () => {
    // tmpfs and ramfs drop a negative dentry as soon as the lookup ends (always_delete_dentry): there
    // the answer must be undefined; disk filesystems keep it: there it must be "absent".
    const keepsNoNegativeEntries = new Map([[0x01021994, "tmpfs"], [0x858458f6, "ramfs"]]);
    const roots = [tmpdir(), "/dev/shm", "/var/tmp", fileURLToPath(new URL("../../../../", import.meta.url))];
    const seen = new Map<string, string>();
    for (const root of roots) {
      let probe: string;
      try {
        probe = mkdtempSync(path.join(root, ".csi-proxy-cached-"));
      } catch {
        continue; // missing or read-only
      }
      try {
        const type = statfsSync(probe).type;
        const missing = path.join(probe, "missing");
        warm(missing);
        const expected = keepsNoNegativeEntries.has(type) ? undefined : "absent";
        assert.equal(lookup(missing), expected, `${missing} on filesystem 0x${type.toString(16)}`);
        seen.set(root, keepsNoNegativeEntries.get(type) ?? `0x${type.toString(16)}`);
      } finally {
        rmSync(probe, { recursive: true, force: true });
      }
    }
    assert.ok([...seen.values()].some((t) => t !== "tmpfs" && t !== "ramfs"), `a filesystem that keeps negative entries was tried: ${JSON.stringify([...seen])}`);
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
