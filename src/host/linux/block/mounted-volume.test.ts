import { test } from "node:test";
import assert from "node:assert/strict";
import { takeSnapshot } from "./block-snapshot.ts";
import { mountAt } from "./snapshot-mounts.ts";
import type { DevNumber } from "./block-types.ts";
import { findMountedVolume } from "./mounted-volume.ts";
import { FakeBlockWorld } from "../../../../test/doubles/fake-block-world.ts";
import { FakeBlockTools } from "../../../../test/doubles/fake-block-tools.ts";

const ID = "\\\\?\\Volume{00000000-0000-4000-8000-000000000001}\\";

function setup() {
  const world = new FakeBlockWorld();
  world.addLoop(3, "/images/a.img");
  world.partition("loop3", [512]);
  world.putFilesystem("/dev/loop3p1", "ext4");
  world.mountDirect("/dev/loop3p1", "/var/lib/kubelet/stage");
  world.mounts.push({ major: 0, minor: 45, mountPoint: "/run/x", fsType: "tmpfs", source: "tmpfs" });
  const tools = new FakeBlockTools(world);
  const reads: (DevNumber | undefined)[] = [];
  const read = (dev?: DevNumber) => (reads.push(dev), takeSnapshot(tools, dev));
  return { tools, read, reads };
}

test("a mounted partition is its volume; what is not a volume is described; nothing mounted is null", async () => {
  const { tools, read } = setup();
  assert.deepEqual(await findMountedVolume(tools, read, (s) => mountAt(s, "/var/lib/kubelet/stage")), { mountPoint: "/var/lib/kubelet/stage", volumeId: ID, description: `volume ${ID}` });
  assert.deepEqual(await findMountedVolume(tools, read, (s) => mountAt(s, "/run/x")), { mountPoint: "/run/x", volumeId: null, description: "a tmpfs filesystem (tmpfs)" });
  assert.equal(await findMountedVolume(tools, read, (s) => mountAt(s, "/nowhere")), null);
});

test("tools that tell a mount's disk: only that disk is read; a mount on no disk reads none", async () => {
  const { tools, read, reads } = setup();
  const withDisk = Object.assign(Object.create(tools) as FakeBlockTools, { diskOfDevice: (dev: DevNumber) => (dev.major === 259 ? { major: 7, minor: 3 } : null) });
  await findMountedVolume(withDisk, read, (s) => mountAt(s, "/var/lib/kubelet/stage"));
  assert.deepEqual(reads, [{ major: 7, minor: 3 }]);
  reads.length = 0;
  assert.equal((await findMountedVolume(withDisk, read, (s) => mountAt(s, "/run/x")))?.volumeId, null);
  assert.deepEqual(reads, []);
});
