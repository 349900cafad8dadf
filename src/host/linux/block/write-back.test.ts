// syncfs/fsync through write-back.ts: what is flushed must be what was looked up.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createWriteBack } from "./write-back.ts";
import { loopDeviceSkipReason, withLoopDevice } from "../../../../test/helpers/loop-device.ts";
import { Code } from "../../../errors.ts";

const MiB = 1024 * 1024;
const dir = mkdtempSync(path.join(tmpdir(), "csi-wb-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The mount id /proc/self/mountinfo gives the mount at `mountPoint` (the last one listed there). */
function mountIdAt(mountPoint: string): number {
  const line = readFileSync("/proc/self/mountinfo", "utf8").split("\n").filter((l) => l.split(" ")[4] === mountPoint).at(-1);
  return Number(line!.split(" ")[0]);
}

it("syncfs of the filesystem at /: OK; with another mount id: FailedPrecondition; through a link: refused", async () => {
  const wb = createWriteBack();
  await wb.flushFilesystem("/");
  await wb.flushFilesystem("/", mountIdAt("/"));
  await assert.rejects(wb.flushFilesystem("/", mountIdAt("/") + 1_000_000), { code: Code.FailedPrecondition, message: /no longer the mount/ });
  symlinkSync("/", path.join(dir, "root-link"));
  await assert.rejects(wb.flushFilesystem(path.join(dir, "root-link")));
});

it("fsync of a node that is no block device: FailedPrecondition, nothing flushed as if it were", async () => {
  const file = path.join(dir, "plain");
  writeFileSync(file, "x");
  await assert.rejects(createWriteBack().flushDevice(file, { major: 7, minor: 0 }), { code: Code.FailedPrecondition, message: /is now device/ });
});

describe("fsync of a loop device of this test's own", { skip: loopDeviceSkipReason() ?? false }, () => {
  it("its own number: OK; another: FailedPrecondition", () =>
    withLoopDevice(4 * MiB, "wb", async (loop) => {
      const wb = createWriteBack();
      await wb.flushDevice(loop.device, { major: loop.major, minor: loop.minor });
      await assert.rejects(wb.flushDevice(loop.device, { major: loop.major, minor: loop.minor + 1 }), { code: Code.FailedPrecondition });
    }));
});
