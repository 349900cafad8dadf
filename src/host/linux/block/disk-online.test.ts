/** Online state: SCSI device state, else csi-proxy's offline mark for the same medium with read-only set. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { isDiskOnline, liveMarks, markOf } from "./disk-online.ts";
import { disk, snap } from "../../../../test/doubles/block-disk-fixtures.ts";

const d = disk("loop0", 0, []);
const mark = (diskSeq: string, setReadOnly = true) => ({ major: 7, minor: 0, diskSeq, setReadOnly });

test("SCSI disks follow the device state, whatever the marks", () => {
  assert.ok(isDiskOnline(snap([d], [], [], { marks: [mark("1")] }), { ...d, scsiState: "running" }));
  assert.ok(!isDiskOnline(snap([d]), { ...d, scsiState: "offline" }));
});

test("other disks: offline while a mark for the same medium holds, unless its read-only flag is still to be set", () => {
  const ro = { ...d, readOnly: true };
  assert.ok(isDiskOnline(snap([ro]), ro));
  assert.ok(!isDiskOnline(snap([ro], [], [], { marks: [mark("1")] }), ro));
  assert.ok(!isDiskOnline(snap([ro], [], [], { marks: [mark("1", false)] }), ro), "a mark that did not need the flag set");
  assert.ok(isDiskOnline(snap([d], [], [], { marks: [mark("1")] }), d), "the flag was to be set but never was: not offline yet");
  assert.ok(isDiskOnline(snap([ro], [], [], { marks: [mark("2")] }), ro), "a mark of an earlier medium does not count");
});

test("markOf and liveMarks keep only marks of the same medium", () => {
  const s = snap([d], [], [], { marks: [mark("1"), mark("2"), { ...mark("1"), minor: 9 }] });
  assert.deepEqual(markOf(s, d), mark("1"));
  assert.deepEqual(liveMarks(s), [mark("1")]);
});
