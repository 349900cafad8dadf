// The filesystem group's host steps are system calls (no tools): their faults are a full
// filesystem and a read-only one under the kubelet directory. Each answer is a fitting code
// (FailedPrecondition — never Internal, never an in-progress code), and nothing else changes: the files
// already there keep their bytes, and a call that failed left no half-made directory tree.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { createFaultRig, codeOf, sha256, type FaultRig } from "../helpers/fault-rig.ts";
import { isRoot } from "../integration/smb-iscsi-system-fixtures.ts";

const canRun = isRoot && existsSync("/usr/bin/unshare");
const Code = { FailedPrecondition: 9 };

describe("filesystem group: full and read-only filesystems", { skip: !canRun && "needs root and unshare(1)" }, () => {
  let rig: FaultRig;
  let full: string, ro: string;
  before(async () => {
    rig = await createFaultRig("fs-faults");
    full = rig.target("full");
    ro = rig.target("ro");
    rig.exec("mount", ["-t", "tmpfs", "-o", "size=64k,nr_inodes=64", "csi-test-full", full]);
    rig.exec("sh", ["-c", `mkdir ${ro}/keep && head -c 4096 /dev/urandom > ${ro}/keep/data && mkdir ${full}/keep && head -c 4096 /dev/urandom > ${full}/keep/data && (head -c 1048576 /dev/zero > ${full}/filler || true) && (for i in $(seq 1 80); do touch ${full}/inode-$i 2>/dev/null; done; true)`]);
    rig.exec("mount", ["--bind", ro, ro]);
    rig.exec("mount", ["-o", "remount,ro,bind", ro]);
    await rig.start();
  });
  after(async () => {
    await rig?.close();
  });

  it("Mkdir of a nested path on a full filesystem: FailedPrecondition, no partial tree, existing data intact", async () => {
    const c = await rig.clients();
    const before = sha256(rig.inNs(`${full}/keep/data`));
    const e = await c.filesystem.mkdir({ path: path.join(full, "a", "b", "c") }).then(() => null, (err: unknown) => err);
    // tmpfs charges a directory only an inode: the inode limit (nr_inodes) is the one hit
    assert.equal(codeOf(e), Code.FailedPrecondition, String(e));
    assert.equal(existsSync(rig.inNs(`${full}/a`)), false, "no partial tree");
    assert.equal(sha256(rig.inNs(`${full}/keep/data`)), before);
  });

  it("Mkdir, Rmdir(force) and CreateSymlink on a read-only filesystem: FailedPrecondition, nothing removed", async () => {
    const c = await rig.clients();
    const before = sha256(rig.inNs(`${ro}/keep/data`));
    const answers = [
      await c.filesystem.mkdir({ path: path.join(ro, "new") }).then(() => 0, (e: unknown) => codeOf(e)),
      await c.filesystem.rmdir({ path: path.join(ro, "keep"), force: true }).then(() => 0, (e: unknown) => codeOf(e)),
      await c.filesystem.createSymlink({ sourcePath: path.join(ro, "keep"), targetPath: path.join(ro, "link") }).then(() => 0, (e: unknown) => codeOf(e)),
    ];
    assert.deepEqual(answers, [Code.FailedPrecondition, Code.FailedPrecondition, Code.FailedPrecondition]);
    assert.equal(sha256(rig.inNs(`${ro}/keep/data`)), before);
    assert.deepEqual(readdirSync(rig.inNs(ro)).sort(), ["keep"]);
  });
});
