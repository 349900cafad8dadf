/** iSCSI sessions and their disks read from a fake sysfs tree. */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { it } from "node:test";
import { iscsiSessions, readdirOrEmpty, sessionDisks } from "./iscsi-sysfs.ts";
import { diskNumberOf } from "./disk-numbers.ts";
import { writeIscsiSession } from "../../../../test/doubles/fake-iscsi-sysfs.ts";

const IQN = "iqn.2024-01.com.example:storage.lun1";

it("the session of a target at a portal, and its disks in the disk group's numbering", async (t) => {
  const sysDir = await fs.mkdtemp(path.join(os.tmpdir(), "iscsi-sysfs-"));
  t.after(() => fs.rm(sysDir, { recursive: true, force: true }));
  assert.deepEqual(await iscsiSessions(sysDir, { targetAddress: "10.0.0.5", targetPort: 3260 }, IQN), [], "no sysfs class: no session");
  await writeIscsiSession(sysDir, { session: "session3", iqn: IQN, connection: "connection3:0", address: "FD00::5", port: 3260, target: "target4:0:0", luns: [["4:0:0:1", "sdb", "8:16"], ["4:0:0:2", "sdc", "8:32"]] });
  await writeIscsiSession(sysDir, { session: "session4", iqn: "iqn.2024-01.x:other", connection: "connection4:0", address: "fd00::5", port: 3260, target: "target5:0:0", luns: [["5:0:0:1", "sdd", "8:48"]] });
  assert.deepEqual(await iscsiSessions(sysDir, { targetAddress: "Fd00::5", targetPort: 3260 }, IQN), ["session3"], "address compared case-insensitively");
  assert.deepEqual(await iscsiSessions(sysDir, { targetAddress: "fd00::5", targetPort: 3261 }, IQN), [], "another port");
  assert.deepEqual(await sessionDisks(sysDir, ["session3"]), [String(diskNumberOf({ major: 8, minor: 16 })), String(diskNumberOf({ major: 8, minor: 32 }))]);
  assert.deepEqual(await sessionDisks(sysDir, ["session9"]), []);
  assert.deepEqual(await readdirOrEmpty(path.join(sysDir, "class", "iscsi_session")), ["session3", "session4"]);
});
