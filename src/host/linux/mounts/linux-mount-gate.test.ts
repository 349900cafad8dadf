import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { LINK_KEEP_MS, linkLookups, mountLookup } from "./linux-mount-gate.ts";
import type { MountEntry } from "../kernel/mountinfo.ts";

const m = (mountId: number, mountPoint: string): MountEntry => ({ mountId, parentId: 1, device: "8:1", root: "/", mountPoint, fsType: "ext4", source: "/dev/x" });

test("mountLookup: the longest mount point at or above the path, lexically; a new table is used as soon as the cache gives it", async () => {
  let table: MountEntry[] = [m(1, "/"), m(2, "/var/lib/kubelet"), m(3, "/var/lib/kubelet/pods/a/volumes/v")];
  const lookup = mountLookup({ table: async () => table });
  assert.equal(await lookup("/var/lib/kubelet/pods/a/volumes/v/data"), "/var/lib/kubelet/pods/a/volumes/v");
  assert.equal(await lookup("/var/lib/kubelet/pods/a/volumes/vv"), "/var/lib/kubelet");
  assert.equal(await lookup("/var/lib/kubelet"), "/var/lib/kubelet");
  assert.equal(await lookup("/etc/passwd"), "/");
  // A link or ".." on the way is not resolved: the path is taken as written.
  assert.equal(await lookup("/var/lib/kubelet/../x"), "/var/lib/kubelet");
  table = [m(1, "/"), m(4, "/etc")];
  assert.equal(await lookup("/var/lib/kubelet/pods"), "/");
  assert.equal(await lookup("/etc/passwd"), "/etc");
  assert.equal(await mountLookup({ table: async () => [m(5, "/a")] })("/b"), "/", "a table without / still answers /");
});

test("linkLookups: a component's look-up (link target or not a link) is reused for LINK_KEEP_MS, then looked up again", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "link-lookups-"));
  try {
    symlinkSync("/elsewhere", path.join(dir, "l"));
    let now = 0;
    const links = linkLookups(() => now);
    assert.equal(links.known(path.join(dir, "l")), undefined, "nothing kept before a look-up");
    assert.equal(await links.readLink(path.join(dir, "l")), "/elsewhere");
    assert.equal(await links.readLink(dir), null);
    assert.equal(links.known(path.join(dir, "l")), "/elsewhere");
    assert.equal(links.known(dir), null);
    now = LINK_KEEP_MS;
    assert.equal(links.known(path.join(dir, "l")), undefined, "expired");
    await assert.rejects(links.readLink(path.join(dir, "missing")), /ENOENT/);
    assert.equal(links.known(path.join(dir, "missing")), undefined, "errors are not kept");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
