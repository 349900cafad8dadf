import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, CsiProxyError } from "../../../errors.ts";
import { findVolume, takeSnapshot } from "./block-snapshot.ts";
import { growOnTemporaryMount, supportedPartitionSize } from "./partition-growth.ts";
import { FakeBlockWorld } from "../../../../test/doubles/fake-block-world.ts";
import { FakeBlockTools } from "../../../../test/doubles/fake-block-tools.ts";
import { rejectsWithCode } from "../../../../test/helpers/assert-coded.ts";

const MiB = 1024n * 1024n;
const gptId = (n: number) => `\\\\?\\Volume{00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}}\\`;

async function volumeOf(world: FakeBlockWorld, id: string) {
  return findVolume(await takeSnapshot(new FakeBlockTools(world)), id);
}

test("supportedPartitionSize: up to the next partition; the last one up to the GPT backup area; whole logical blocks", async () => {
  const world = new FakeBlockWorld();
  world.addLoop(3, "/images/a.img"); // 1 GiB
  world.partition("loop3", [100, 200]);
  const first = await volumeOf(world, gptId(1));
  const second = await volumeOf(world, gptId(2));
  const a = supportedPartitionSize(first);
  assert.equal(a.maxBytes, (second.partition!.startSectors - first.partition!.startSectors) * 512n);
  assert.equal(a.alignBytes, 512n);
  const b = supportedPartitionSize(second);
  assert.ok(b.maxBytes > 200n * MiB && b.maxBytes <= world.sizeOf("/dev/loop3") - second.partition!.startSectors * 512n - 33n * 512n, String(b.maxBytes));
});

test("supportedPartitionSize: a whole-disk filesystem has no partition to grow", async () => {
  const world = new FakeBlockWorld();
  world.addLoop(4, "/images/b.img");
  world.putFilesystem("/dev/loop4", "xfs");
  const snap = await takeSnapshot(new FakeBlockTools(world));
  const whole = snap.disks.find((d) => d.devPath === "/dev/loop4")!;
  assert.throws(() => supportedPartitionSize({ id: "x", dev: whole, disk: whole, partition: null, devPath: whole.devPath } as never), { code: Code.FailedPrecondition, message: /\/dev\/loop4 is a whole-disk filesystem, not a partition/ });
});

test("growOnTemporaryMount: mounted on a private directory, grown there, unmounted, the directory removed", async () => {
  const world = new FakeBlockWorld();
  world.addLoop(3, "/images/a.img");
  world.partition("loop3", [100]);
  world.putFilesystem("/dev/loop3p1", "xfs");
  await growOnTemporaryMount(new FakeBlockTools(world), "/dev/loop3p1", "xfs", undefined);
  const [mk, mount, grow, unmount, rm] = world.calls;
  assert.match(mk, /^makeTempDir/);
  const dir = mount.split(" ")[2];
  assert.deepEqual([mount, grow, unmount, rm].map((c) => c.replace(dir, "<dir>")), ["mount /dev/loop3p1 <dir> xfs", "growFilesystem /dev/loop3p1 xfs <dir>", "unmount <dir>", "removeTempDir <dir>"]);
});

test("growOnTemporaryMount: a temporary mount that cannot be unmounted stays, and the answer says where", async () => {
  const world = new FakeBlockWorld();
  world.addLoop(3, "/images/a.img");
  world.partition("loop3", [100]);
  world.putFilesystem("/dev/loop3p1", "xfs");
  world.failNext("unmount", new CsiProxyError(Code.Unavailable, "target is busy"));
  const log: string[] = [];
  await rejectsWithCode(growOnTemporaryMount(new FakeBlockTools(world), "/dev/loop3p1", "xfs", { info: (m) => void log.push(m), warning: (m) => void log.push(m) }), Code.Unavailable, /^target is busy; \/dev\/loop3p1 stays mounted at \S+ \(the temporary mount for growing it\); csi-proxy retries unmounting it/);
  assert.ok(!world.calls.some((c) => c.startsWith("removeTempDir")), "the directory of a mount that stays is not removed");
});
