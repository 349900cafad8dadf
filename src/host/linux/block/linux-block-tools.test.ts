// createLinuxBlockTools puts one room per concern together by spreading each room's methods into one
// object: a name two rooms share would silently lose one of them, so the rooms' names must not overlap.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createLinuxBlockTools } from "./linux-block-tools.ts";
import { createBlockReads } from "./block-reads.ts";
import { createSignatureProbe } from "./signature-probe.ts";
import { createDeviceClaims } from "./device-claims.ts";
import { createPartitioning } from "./partitioning.ts";
import { createFilesystemTools } from "./filesystem-tools.ts";
import { createMountTools } from "../mounts/mount-tools.ts";
import { createWriteBack } from "./write-back.ts";
import { createDeviceState } from "./device-state.ts";
import { createPrivileges } from "../kernel/privileges.ts";

test("every room's methods, each from exactly one room, and nothing else", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-lbt-"));
  try {
    const stateFile = path.join(dir, "marks.json");
    const rooms = [
      createBlockReads(), createSignatureProbe(), createDeviceClaims(), createPartitioning(), createFilesystemTools(),
      createMountTools(), createWriteBack(), createDeviceState({ stateFile }), createPrivileges(),
    ].map((room) => Object.keys(room));
    const names = rooms.flat();
    assert.deepEqual(names.filter((n, i) => names.indexOf(n) !== i), [], "a method name two rooms share");
    const tools = createLinuxBlockTools({ stateFile });
    assert.deepEqual(Object.keys(tools).sort(), [...names].sort());
    for (const n of names) assert.equal(typeof (tools as unknown as Record<string, unknown>)[n], "function", n);
    // The state each room keeps is its own: the offline marks go to the file given.
    await tools.writeOfflineMarks([{ major: 7, minor: 99, diskSeq: "5", setReadOnly: false }]);
    assert.deepEqual(await createDeviceState({ stateFile }).readOfflineMarks(), [{ major: 7, minor: 99, diskSeq: "5", setReadOnly: false }]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
