// Mounting through mount-tools.ts: an ext4 loop device of this test's own on a temporary directory.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createMountTools } from "./mount-tools.ts";
import { loopDeviceSkipReason, withLoopDevice } from "../../../../test/helpers/loop-device.ts";

const MiB = 1024 * 1024;
const dir = mkdtempSync(path.join(tmpdir(), "csi-mt-"));
after(() => rmSync(dir, { recursive: true, force: true }));

it("what is at a path: a directory, empty or not; a file; nothing", async () => {
  const mt = createMountTools();
  const d = mkdtempSync(path.join(dir, "d-"));
  assert.deepEqual(await mt.inspectDirectory(d), { isDirectory: true, empty: true });
  writeFileSync(path.join(d, "f"), "x");
  assert.deepEqual(await mt.inspectDirectory(d), { isDirectory: true, empty: false });
  assert.equal((await mt.inspectDirectory(path.join(d, "f")))?.isDirectory, false);
  assert.equal(await mt.inspectDirectory(path.join(d, "none")), null);
});

it("a temporary directory: private, canonical, removed", async () => {
  const mt = createMountTools();
  const t = await mt.makeTempDir();
  try {
    assert.equal(statSync(t).mode & 0o777, 0o700);
    assert.equal(path.resolve(t), t);
  } finally {
    await mt.removeTempDir(t);
  }
  assert.equal(existsSync(t), false);
});

describe("mount and unmount", { skip: loopDeviceSkipReason() ?? false }, () => {
  it("an ext4 loop device mounted on a temporary directory, then unmounted", () =>
    withLoopDevice(8 * MiB, "mt", async (loop) => {
      const mt = createMountTools();
      const target = await mt.makeTempDir();
      try {
        execFileSync("mkfs.ext4", ["-q", loop.device]);
        await mt.mount(loop.device, target, "ext4");
        const dev = `${loop.major}:${loop.minor}`;
        const at = () => readFileSync("/proc/self/mountinfo", "utf8").split("\n").some((l) => l.split(" ")[2] === dev && l.split(" ")[4] === target);
        assert.equal(at(), true);
        await mt.unmount(target);
        assert.equal(at(), false);
      } finally {
        if (loop.mounts().includes(target)) execFileSync("umount", [target]);
        await mt.removeTempDir(target);
      }
    }));
});
