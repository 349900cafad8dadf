// Device state writes on a loop device of this test's own, and the offline marks file.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createDeviceState } from "./device-state.ts";
import { loopDeviceSkipReason, withLoopDevice } from "../../../../test/helpers/loop-device.ts";
import { Code } from "../../../errors.ts";

const MiB = 1024 * 1024;
const dir = mkdtempSync(path.join(tmpdir(), "csi-state-"));
after(() => rmSync(dir, { recursive: true, force: true }));

it("offline marks: none before any write, then what was written, replaced as a whole", async () => {
  const state = createDeviceState({ stateFile: path.join(dir, "marks.json") });
  assert.deepEqual(await state.readOfflineMarks(), []);
  const mark = { major: 7, minor: 3, diskSeq: "12", setReadOnly: true };
  await state.writeOfflineMarks([mark, { ...mark, minor: 4 }]);
  await state.writeOfflineMarks([mark]);
  assert.deepEqual(await createDeviceState({ stateFile: path.join(dir, "marks.json") }).readOfflineMarks(), [mark]);
});

it("SCSI hosts: the numbers of /sys/class/scsi_host; a write to a device that is not there: NotFound", async () => {
  const state = createDeviceState({ stateFile: path.join(dir, "unused.json") });
  const names = existsSync("/sys/class/scsi_host") ? readdirSync("/sys/class/scsi_host") : [];
  assert.deepEqual((await state.listScsiHosts()).sort((a, b) => a - b), names.map((n) => Number(n.slice(4))).sort((a, b) => a - b));
  await assert.rejects(state.setScsiState("csi-proxy-no-such-disk", "offline"), { code: Code.NotFound });
});

describe("a loop device of this test's own", { skip: loopDeviceSkipReason() ?? false }, () => {
  it("read-only flag set and cleared; a grown backing file seen after the capacity refresh", () =>
    withLoopDevice(4 * MiB, "state", async (loop) => {
      const state = createDeviceState({ stateFile: path.join(dir, "unused.json") });
      const sys = (f: string) => readFileSync(`/sys/block/${loop.name}/${f}`, "utf8").trim();
      await state.setReadOnly(loop.device, true);
      assert.equal(sys("ro"), "1");
      await state.setReadOnly(loop.device, false);
      assert.equal(sys("ro"), "0");
      loop.resize(8 * MiB);
      assert.equal(Number(sys("size")) * 512, 4 * MiB);
      await state.refreshLoopCapacity(loop.device);
      assert.equal(Number(sys("size")) * 512, 8 * MiB);
    }));
});
