import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, CsiProxyError } from "../../../errors.ts";
import { findVolume, takeSnapshot } from "./block-snapshot.ts";
import { VolumeFlusher } from "./volume-flush.ts";
import { FakeBlockWorld } from "../../../../test/doubles/fake-block-world.ts";
import { FakeBlockTools } from "../../../../test/doubles/fake-block-tools.ts";
import { rejectsWithCode } from "../../../../test/helpers/assert-coded.ts";

const ID = "\\\\?\\Volume{00000000-0000-4000-8000-000000000001}\\";

function setup(mountAt?: string) {
  const world = new FakeBlockWorld();
  world.addLoop(3, "/images/a.img");
  world.partition("loop3", [512]);
  world.putFilesystem("/dev/loop3p1", "ext4");
  if (mountAt) world.mountDirect("/dev/loop3p1", mountAt);
  const tools = new FakeBlockTools(world);
  const warnings: string[] = [];
  const flusher = new VolumeFlusher(tools, { info: () => {}, warning: (m) => void warnings.push(m) });
  const flush = async () => {
    const snap = await takeSnapshot(tools);
    await flusher.flush(snap, findVolume(snap, ID));
  };
  return { world, flusher, flush, warnings };
}

const writeBack = () => new CsiProxyError(Code.DataLoss, "syncfs: Input/output error");

test("mounted nowhere: fsync of the device node; mounted: syncfs of its mount", async () => {
  const a = setup();
  await a.flush();
  assert.deepEqual(a.world.calls, ["fsync /dev/loop3p1"]);
  const b = setup("/mnt/v");
  await b.flush();
  assert.deepEqual(b.world.calls, ["syncfs /mnt/v"]);
});

test("a write-back failure is DataLoss once per mount; the next failing flush of that mount answers OK and warns", async () => {
  const s = setup("/mnt/v");
  s.world.failNext("syncfs", writeBack());
  await rejectsWithCode(s.flush(), Code.DataLoss, /\/dev\/loop3p1 mounted at \/mnt\/v: syncfs: Input\/output error; data written to the volume that was not yet on disk may be lost/);
  s.world.failNext("syncfs", writeBack());
  await s.flush();
  assert.match(s.warnings.join("\n"), /failed again .*answered DataLoss once already/);
});

test("unmounted here, or mounted anew: the report is forgotten and the next failure is DataLoss again", async () => {
  const s = setup("/mnt/v");
  s.world.failNext("syncfs", writeBack());
  await rejectsWithCode(s.flush(), Code.DataLoss);
  s.flusher.unmounted(s.world.mounts[0]);
  s.world.failNext("syncfs", writeBack());
  await rejectsWithCode(s.flush(), Code.DataLoss);
  s.flusher.mounted(s.world.mounts[0]);
  s.world.failNext("syncfs", writeBack());
  await rejectsWithCode(s.flush(), Code.DataLoss);
});

test("other failures are passed on unchanged and not remembered", async () => {
  const s = setup("/mnt/v");
  s.world.failNext("syncfs", new CsiProxyError(Code.FailedPrecondition, "not that mount"));
  await rejectsWithCode(s.flush(), Code.FailedPrecondition, /^not that mount$/);
  s.world.failNext("syncfs", writeBack());
  await rejectsWithCode(s.flush(), Code.DataLoss);
});
