/**
 * LinuxIscsiHost against a recording `iscsiadm`, a temporary node database and a fake sysfs tree:
 * the exact argv of every operation (never a secret on it), the node record rewrite (content,
 * mode 0600, other lines kept), the mutual CHAP secret file, sessions and disks from sysfs, and the
 * mapping of iscsiadm's exit codes. The same host against the real iscsiadm and a real target is
 * in test/integration/iscsi.test.ts.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { spawnSync } from "node:child_process";
import { Code, CsiProxyError } from "../../errors.ts";
import { LinuxIscsiHost } from "./iscsi.ts";
import { writeIscsiSession } from "../../../test/doubles/fake-iscsi-sysfs.ts";
import { recordingProgram, type RecordingProgram } from "../../../test/integration/smb-iscsi-system-fixtures.ts";
import { diskNumberOf } from "./block/disk-numbers.ts";

const P = { targetAddress: "10.0.0.5", targetPort: 3260 };
const IQN = "iqn.2024-01.com.example:storage.lun1";
const CHAP_SECRET = "chap-S3cret;$(reboot)`id`";
const MUTUAL_SECRET = "mutual-S3cret|&%PATH%";
const RECORD = `# BEGIN RECORD 2.1.8
node.name = ${IQN}
node.tpgt = 1
node.startup = manual
node.session.auth.authmethod = None
node.session.auth.chap_algs = MD5
node.conn[0].address = 10.0.0.5
node.conn[0].port = 3260
# END RECORD
`;

let dir: string;
let iscsiadm: RecordingProgram;
let host: LinuxIscsiHost;
let nodesDir: string;
let sysDir: string;
let stateDir: string;

before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "linux-iscsi-"));
  iscsiadm = await recordingProgram(dir, "iscsiadm");
  nodesDir = path.join(dir, "iscsi", "nodes");
  sysDir = path.join(dir, "sys");
  stateDir = path.join(dir, "state");
  host = new LinuxIscsiHost({ stateDir, iscsiadm: iscsiadm.path, nodesDir, sysDir });
});
after(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const lastArgv = async () => (await iscsiadm.invocations()).at(-1)!.argv;

describe("LinuxIscsiHost argv", () => {
  it("portal operations", async () => {
    await iscsiadm.behave({ stdout: "10.0.0.5:3260 via sendtargets\n" });
    assert.deepEqual(await host.listTargetPortals(), [P]);
    assert.deepEqual(await lastArgv(), ["-m", "discoverydb"]);
    await iscsiadm.behave({ stderr: "iscsiadm: No discovery found.\n", exitCode: 21 });
    assert.deepEqual(await host.listTargetPortals(), []);
    await iscsiadm.behave({});
    await host.addTargetPortal(P);
    assert.deepEqual(await lastArgv(), ["-m", "discoverydb", "-t", "sendtargets", "-p", "10.0.0.5:3260", "-o", "new"]);
    await host.removeTargetPortal({ targetAddress: "fd00::5", targetPort: 3261 });
    assert.deepEqual(await lastArgv(), ["-m", "discoverydb", "-t", "sendtargets", "-p", "[fd00::5]:3261", "-o", "delete"]);
    await iscsiadm.behave({ stdout: `10.0.0.5:3260,1 ${IQN}\n` });
    assert.deepEqual(await host.discoverTargets(P), [IQN]);
    assert.deepEqual(await lastArgv(), ["-m", "discoverydb", "-t", "sendtargets", "-p", "10.0.0.5:3260", "--discover"]);
  });

  it("target lookup: unknown → null, known and not logged in → connected false", async () => {
    await iscsiadm.behave({ stderr: "iscsiadm: No records found\n", exitCode: 21 });
    assert.equal(await host.getTarget(P, IQN), null);
    assert.deepEqual(await lastArgv(), ["-m", "node", "-T", IQN, "-p", "10.0.0.5:3260"]);
    await iscsiadm.behave({});
    assert.deepEqual(await host.getTarget(P, IQN), { connected: false });
  });

  it("connect writes CHAP into the node record (0600) and logs in with no secret on argv", async () => {
    const recordDir = path.join(nodesDir, IQN, "10.0.0.5,3260,1");
    await fs.mkdir(recordDir, { recursive: true });
    await fs.writeFile(path.join(recordDir, "default"), RECORD, { mode: 0o600 });
    await fs.writeFile(path.join(nodesDir, IQN, "10.0.0.6,3260,1"), RECORD); // another portal: untouched
    await host.setMutualChapSecret(MUTUAL_SECRET);
    const secretFile = path.join(stateDir, "iscsi", "mutual-chap-secret");
    assert.equal(await fs.readFile(secretFile, "utf8"), MUTUAL_SECRET);
    assert.equal((await fs.stat(secretFile)).mode & 0o777, 0o600);

    await iscsiadm.behave({});
    await host.connectTarget(P, IQN, { type: "MUTUAL_CHAP", chapUsername: "chapuser", chapSecret: CHAP_SECRET });
    const record = await fs.readFile(path.join(recordDir, "default"), "utf8");
    assert.match(record, /^node\.session\.auth\.authmethod = CHAP$/m);
    assert.match(record, /^node\.session\.auth\.username = chapuser$/m);
    assert.ok(record.includes(`node.session.auth.password = ${CHAP_SECRET}\n`));
    assert.match(record, new RegExp(`^node\\.session\\.auth\\.username_in = ${IQN.replaceAll(".", "\\.")}$`, "m"));
    assert.ok(record.includes(`node.session.auth.password_in = ${MUTUAL_SECRET}\n`));
    assert.ok(record.includes("node.startup = manual"), "not made persistent");
    assert.equal((await fs.stat(path.join(recordDir, "default"))).mode & 0o777, 0o600);
    assert.equal(await fs.readFile(path.join(nodesDir, IQN, "10.0.0.6,3260,1"), "utf8"), RECORD);
    assert.deepEqual(await fs.readdir(recordDir), ["default"], "no temporary file left beside the record");
    assert.deepEqual(await lastArgv(), ["-m", "node", "-T", IQN, "-p", "10.0.0.5:3260", "--login"]);

    await host.connectTarget(P, IQN, { type: "NONE", chapUsername: "", chapSecret: "" });
    const cleared = await fs.readFile(path.join(recordDir, "default"), "utf8");
    assert.ok(!cleared.includes("S3cret"), "switching to NONE removes the secrets from the record");
    assert.match(cleared, /^node\.session\.auth\.authmethod = None$/m);

    for (const inv of await iscsiadm.invocations()) {
      for (const arg of inv.argv) assert.ok(!arg.includes("S3cret"), `secret on argv: ${arg}`);
      assert.ok(!JSON.stringify(inv.env).includes("S3cret"));
      assert.equal(inv.stdin, "");
    }
  });

  it("mutual CHAP without a secret is FailedPrecondition; a missing record NotFound", async () => {
    await host.setMutualChapSecret("");
    await assert.rejects(fs.stat(path.join(stateDir, "iscsi", "mutual-chap-secret")), { code: "ENOENT" });
    await assert.rejects(host.connectTarget(P, IQN, { type: "MUTUAL_CHAP", chapUsername: "u", chapSecret: "s" }), (e: CsiProxyError) => e.code === Code.FailedPrecondition && /SetMutualChapSecret/.test(e.message));
    await assert.rejects(host.connectTarget({ targetAddress: "10.9.9.9", targetPort: 3260 }, IQN, { type: "NONE", chapUsername: "", chapSecret: "" }), (e: CsiProxyError) => e.code === Code.NotFound);
  });

  it("maps iscsiadm exit codes", async () => {
    const cases: [number, Code, RegExp][] = [
      [12, Code.FailedPrecondition, /load the iscsi_tcp kernel module/],
      [20, Code.FailedPrecondition, /iscsid is not reachable.*iscsi_tcp kernel module, which is not loaded/],
      [24, Code.PermissionDenied, /rejected the CHAP credentials/],
      [8, Code.FailedPrecondition, /could not be reached/],
      [5, Code.FailedPrecondition, /refused the login/],
      [6, Code.FailedPrecondition, /exit status 6/],
    ];
    for (const [exitCode, code, message] of cases) {
      await iscsiadm.behave({ stderr: `iscsiadm: failure ${exitCode}\n`, exitCode });
      await assert.rejects(host.discoverTargets(P), (e: CsiProxyError) => {
        assert.equal(e.code, code, `exit ${exitCode}: ${e.message}`);
        assert.match(e.message, message);
        return true;
      });
    }
    const missing = new LinuxIscsiHost({ stateDir, iscsiadm: path.join(dir, "no-iscsiadm"), nodesDir, sysDir });
    await assert.rejects(missing.listTargetPortals(), (e: CsiProxyError) => e.code === Code.FailedPrecondition && /install open-iscsi/.test(e.message));
  });
});

describe("LinuxIscsiHost sessions and disks from sysfs", () => {
  it("finds the session of the target at the portal and its disks, in the disk group's numbering", async () => {
    await writeIscsiSession(sysDir, {
      session: "session3",
      iqn: IQN,
      connection: "connection3:0",
      address: "10.0.0.5",
      port: 3260,
      target: "target4:0:0",
      luns: [["4:0:0:1", "sdb", "8:16"], ["4:0:0:2", "sdc", "8:32"]],
    });
    await iscsiadm.behave({});
    assert.deepEqual(await host.getTarget(P, IQN), { connected: true });
    assert.deepEqual(await host.getTarget({ targetAddress: "10.0.0.6", targetPort: 3260 }, IQN), { connected: false });
    assert.deepEqual(await host.getTargetDisks(P, IQN), [String(diskNumberOf({ major: 8, minor: 16 })), String(diskNumberOf({ major: 8, minor: 32 }))]);
    assert.deepEqual(await host.getTargetDisks(P, "iqn.2024-01.com.example:other"), []);
  });
});

describe("start-up sweep of node record copies a killed daemon left", () => {
  it("a killed connect's copy is removed by the next start's sweep", async () => {
    // What a kill -9 between the temporary copy's creation and its rename leaves: the copy, named by the dead pid.
    const recordDir = path.join(nodesDir, IQN, "10.0.0.7,3260,1");
    await fs.mkdir(recordDir, { recursive: true });
    await fs.writeFile(path.join(recordDir, "default"), RECORD, { mode: 0o600 });
    const script = [
      `import { writeFileAtomic } from ${JSON.stringify(path.resolve("src/state/atomic-file.ts"))};`,
      `import * as fs from "node:fs";`,
      `import { syncBuiltinESMExports } from "node:module";`,
      `const real = fs.promises.rename;`,
      `fs.promises.rename = async () => { process.kill(process.pid, "SIGKILL"); await new Promise(() => {}); };`,
      `syncBuiltinESMExports();`,
      `await writeFileAtomic(${JSON.stringify(path.join(recordDir, "default"))}, "node.session.auth.password = ${CHAP_SECRET.replace(/[`$\\"]/g, "")}\\n", { mode: 0o600, tmpDir: ${JSON.stringify(path.dirname(nodesDir))} });`,
      `void real;`,
    ].join("\n");
    const killed = spawnSync(process.execPath, ["--input-type=module", "-e", script]);
    assert.equal(killed.signal, "SIGKILL", killed.stderr.toString());
    const before = (await fs.readdir(path.dirname(nodesDir))).filter((n) => n.startsWith(".default.tmp-"));
    assert.equal(before.length, 1, "the killed write left its copy");
    const { removed } = await host.removeLeftoverRecordCopies();
    assert.deepEqual(removed, before);
    assert.equal(await fs.readFile(path.join(recordDir, "default"), "utf8"), RECORD, "the record itself untouched");
  });
});
