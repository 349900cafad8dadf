import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createMountTableCache, openMountChangeProbe, shareMountChangeProbe, type MountChangeProbe } from "./mount-table-cache.ts";
import { watchGcClosedFds } from "../../../../test/helpers/gc-closed-fds.ts";
import { readMountTable, type MountEntry } from "../kernel/mountinfo.ts";

const entry = (mountId: number): MountEntry => ({ mountId, parentId: 1, device: "8:1", root: "/", mountPoint: `/m${mountId}`, fsType: "ext4", source: "/dev/sda1" });

/** A scripted probe and a counting reader, logging the order of their calls. */
function fakes() {
  const log: string[] = [];
  let pending = false;
  let reads = 0;
  const probe: MountChangeProbe = {
    changed() {
      log.push("probe");
      const was = pending;
      pending = false;
      return was;
    },
  };
  const read = async () => {
    log.push("read");
    return [entry(++reads)];
  };
  return { log, probe, read, change: () => void (pending = true), reads: () => reads };
}

describe("createMountTableCache()", () => {
  it("during the daemon's start-up reads the file for each call and opens no probe; the first call after opens it", async () => {
    const f = fakes();
    let opened = 0;
    let startingUp = true;
    const cache = createMountTableCache({ openProbe: async () => (opened++, f.probe), read: f.read, readDirectly: () => startingUp });
    try {
      assert.equal((await cache.table())[0].mountId, 1);
      assert.equal((await cache.table())[0].mountId, 2, "not cached without a probe");
      assert.equal(opened, 0, "no probe (no koffi) during start-up");
    } finally {
      startingUp = false;
    }
    assert.equal((await cache.table())[0].mountId, 3);
    assert.equal(opened, 1);
    assert.equal((await cache.table())[0].mountId, 3, "cached once the probe is open");
    assert.deepEqual(f.log, ["read", "read", "probe", "read", "probe"]);
  });

  it("reads once while nothing changes, again after each change, probing before reading", async () => {
    const f = fakes();
    const cache = createMountTableCache({ openProbe: async () => f.probe, read: f.read });
    assert.equal((await cache.table())[0].mountId, 1);
    assert.equal((await cache.table())[0].mountId, 1);
    f.change();
    assert.equal((await cache.table())[0].mountId, 2);
    assert.equal((await cache.table())[0].mountId, 2);
    assert.equal(f.reads(), 2);
    assert.deepEqual(f.log, ["probe", "read", "probe", "probe", "read", "probe"]);
  });

  it("concurrent callers share one read, also when the change was consumed by another caller", async () => {
    const f = fakes();
    const cache = createMountTableCache({ openProbe: async () => f.probe, read: f.read });
    await cache.table();
    f.change();
    const all = await Promise.all([cache.table(), cache.table(), cache.table()]);
    assert.deepEqual(all.map((t) => t[0].mountId), [2, 2, 2]);
    assert.equal(f.reads(), 2);
  });

  it("does not keep a failed read", async () => {
    let fail = true;
    let reads = 0;
    const cache = createMountTableCache({
      openProbe: async () => ({ changed: () => false }),
      read: async () => {
        reads++;
        if (fail) throw new Error("EIO");
        return [entry(reads)];
      },
    });
    await assert.rejects(cache.table(), /EIO/);
    fail = false;
    assert.equal((await cache.table())[0].mountId, 2);
  });

  it("reads on every call when no probe can be opened", async () => {
    const f = fakes();
    const cache = createMountTableCache({ openProbe: () => Promise.reject(new Error("no koffi")), read: f.read });
    await cache.table();
    await cache.table();
    assert.equal(f.reads(), 2);
  });
});

describe("shareMountChangeProbe()", () => {
  it("reports one change to every view, whichever view's poll consumed it", () => {
    const f = fakes();
    const views = shareMountChangeProbe(f.probe);
    const a = views();
    const b = views();
    assert.equal(a.changed(), false);
    assert.equal(b.changed(), false);
    f.change();
    assert.equal(a.changed(), true);
    assert.equal(a.changed(), false);
    assert.equal(b.changed(), true, "the change a consumed is still reported to b");
    assert.equal(b.changed(), false);
    const c = views();
    assert.equal(c.changed(), false, "a view made after a change starts from it");
  });
});

describe("createMountTableCache() with the default probe", () => {
  it("leaves no descriptor for garbage collection to close when caches are dropped", async () => {
    const watch = watchGcClosedFds();
    for (let i = 0; i < 20; i++) await createMountTableCache().table();
    assert.deepEqual(await watch.check(), []);
  });
});

const root = process.getuid?.() === 0;

describe("openMountChangeProbe() on this host", { skip: root ? false : "needs root (mount --bind)" }, () => {
  it("reports a bind mount and its removal at once, and nothing in between", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "mount-probe-"));
    const src = path.join(dir, "src");
    const at = path.join(dir, "at");
    mkdirSync(src);
    mkdirSync(at);
    const probe = await openMountChangeProbe();
    let reads = 0;
    const cache = createMountTableCache({ openProbe: async () => probe, read: () => (reads++, readMountTable()) });
    try {
      assert.equal(probe.changed(), false);
      assert.equal((await cache.table()).some((m) => m.mountPoint === at), false);
      execFileSync("mount", ["--bind", src, at]);
      try {
        assert.equal((await cache.table()).some((m) => m.mountPoint === at), true, "a bind mount made just before is seen");
        await cache.table();
        assert.equal(reads, 2, "no read while nothing changed");
      } finally {
        execFileSync("umount", [at]);
      }
      assert.equal((await cache.table()).some((m) => m.mountPoint === at), false, "an unmount made just before is seen");
      await probe.close!();
      assert.equal(probe.changed(), true, "a closed probe answers changed");
    } finally {
      await probe.close!();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
