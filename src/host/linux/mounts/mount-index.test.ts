import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { indexMounts, mountHolding, processMountIndex } from "./mount-index.ts";
import type { MountEntry } from "../kernel/mountinfo.ts";
import { LinuxFilesystemHost } from "../filesystem.ts";

const m = (mountId: number, mountPoint: string, device = "8:1"): MountEntry => ({ mountId, parentId: 1, device, root: "/", mountPoint, fsType: "ext4", source: "/dev/x" });

describe("indexMounts()", () => {
  const table = [m(1, "/"), m(2, "/var/lib/kubelet", "8:2"), m(3, "/var/lib/kubelet/pods/a", "0:40"), m(4, "/var/lib/kubelet/pods/a", "0:41"), m(5, "/data dir", "8:2")];
  const index = indexMounts(table);

  it("answers by mount point (stacks in table order), device and mount id", () => {
    assert.deepEqual(index.at("/var/lib/kubelet/pods/a").map((e) => e.mountId), [3, 4]);
    assert.deepEqual(index.at("/var/lib/kubelet/pods"), []);
    assert.deepEqual(index.ofDevice("8:2").map((e) => e.mountId), [2, 5]);
    assert.equal(index.byId(5)?.mountPoint, "/data dir");
    assert.equal(index.byId(9), undefined);
  });

  it("holding(): the visible mount at the deepest mount point at or above the path", () => {
    assert.equal(index.holding("/var/lib/kubelet/pods/a/volumes/x")?.mountId, 4);
    assert.equal(index.holding("/var/lib/kubelet/pods/a")?.mountId, 4);
    assert.equal(index.holding("/var/lib/kubelet/pods/ab")?.mountId, 2, "a sibling sharing a prefix is not inside");
    assert.equal(index.holding("/var/lib/kubelet/")?.mountId, 2);
    assert.equal(index.holding("/data dir/f")?.mountId, 5);
    assert.equal(index.holding("/etc")?.mountId, 1);
    assert.equal(index.holding("/")?.mountId, 1);
    assert.equal(indexMounts([m(2, "/a")]).holding("/b"), undefined);
  });

  it("is built once per table array", () => {
    assert.equal(indexMounts(table), index);
    assert.notEqual(indexMounts([...table]), index);
  });
});

const root = process.getuid?.() === 0;
describe("this process's indexed mount table", { skip: root ? false : "needs root (mount)" }, () => {
  it("a mount and an unmount between two calls are seen by the second (IsSymlink's mount check, mountHolding)", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "mount-index-"));
    const at = path.join(dir, "at");
    mkdirSync(at);
    const host = new LinuxFilesystemHost();
    try {
      assert.equal(await host.isMountPoint(at), false);
      assert.notEqual((await mountHolding(path.join(at, "f")))?.mountPoint, at);
      const before = await processMountIndex();
      assert.equal(await processMountIndex(), before, "nothing changed: the same index, not re-read");

      execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "mount-index-test", at]);
      try {
        assert.equal(await host.isMountPoint(at), true, "a mount made just before is seen");
        assert.equal((await mountHolding(path.join(at, "f")))?.mountPoint, at);
        const index = await processMountIndex();
        assert.notEqual(index, before);
        assert.equal(index.at(at).at(-1)?.source, "mount-index-test");
        assert.equal(index.byId(index.at(at)[0].mountId)?.mountPoint, at);
        assert.equal(index.ofDevice(index.at(at)[0].device).length, 1);
      } finally {
        execFileSync("umount", [at]);
      }
      assert.equal(await host.isMountPoint(at), false, "an unmount made just before is seen");
      assert.notEqual((await mountHolding(path.join(at, "f")))?.mountPoint, at);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
