/**
 * No secret in any log line or command line. One daemon at -v=10 (every request logged, secrets
 * redacted) runs SMB and iSCSI calls that succeed, fail in the host, and fail validation, with
 * distinctive secrets: SMB passwords, a CHAP secret, a mutual CHAP secret. Afterwards every line
 * the daemon wrote and every recorded invocation of `mount` and `iscsiadm` (argv, environment,
 * stdin; recorders in the namespace's /usr/local/sbin, see smb-iscsi-system-fixtures.ts) is
 * searched for each secret: none may appear. To show the search is not vacuous, the test also
 * checks that each secret did reach the one place it must: the mount credentials file, the
 * open-iscsi node record, the mutual CHAP secret file.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { connectGroup } from "../../src/client/connect-group.ts";
import { canRunIscsiTarget, iscsiTransportNamespace, kernelHasIscsiTcp, recordingMountAndIscsiadm, startDaemon, startTgt, type FakeIscsid, type MountNamespace, type RecordingProgram, type RunningDaemon, type TgtTarget } from "./smb-iscsi-system-fixtures.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";
import { findNodeDatabase } from "../../src/host/linux/block/iscsi-node-db.ts";

const canRun = canRunIscsiTarget() && !kernelHasIscsiTcp();

/** Secret → the fragment searched for (the part after a newline for secrets that contain one). */
const SECRETS = {
  smbPassword: "SmbPw-Secret-7d1c",
  smbPasswordFailedMount: "SmbPw-Failed-93ab",
  smbPasswordInvalid: "BadPw\nSecret-44aa",
  chapSecret: "ChapSecret-5e2f",
  chapSecretInvalid: "BadChap\nSecret-61bd",
  mutualSecret: "MutualSecret-8a4b",
  mutualSecretInvalid: "BadMutual\nSecret-0c3e",
};
const fragment = (s: string) => s.split("\n").at(-1)!;

describe("secrets never reach a log line or a command line", { skip: !canRun && "needs root, tgt, open-iscsi, unshare and a kernel without iscsi_tcp" }, () => {
  let dir: string;
  let ns: MountNamespace;
  let daemon: RunningDaemon;
  let mount: RecordingProgram;
  let iscsiadm: RecordingProgram;
  let tgt: TgtTarget;
  let iscsid: FakeIscsid;
  const clients: { close(): void }[] = [];
  const PORT = 13262;
  const IQN = "iqn.2024-01.io.csi-proxy.test:secrets";
  const portal = { targetAddress: "127.0.0.1", targetPort: PORT };
  let stateDir: string;
  let kubelet: string;
  const reached: Record<string, boolean> = {};

  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "secrets-int-"));
    stateDir = path.join(dir, "state");
    kubelet = path.join(dir, "kubelet");
    await fs.mkdir(kubelet);
    const bin = await recordingMountAndIscsiadm(dir);
    ({ mount, iscsiadm } = bin);
    await iscsiadm.behave({ exec: "/usr/sbin/iscsiadm" });
    tgt = await startTgt(dir, PORT, [IQN]);
    ({ iscsid, ns } = await iscsiTransportNamespace(dir, bin.fakeBin));
    const socketDir = path.join(dir, "sock");
    daemon = await startDaemon(["-socket-dir", socketDir, "-kubelet-path", kubelet, "-state-dir", stateDir, "-v=10"], { wrapper: ns.enter });
  });
  after(async () => {
    for (const c of clients) c.close();
    await daemon?.stop();
    await ns?.close();
    await iscsid?.stop();
    spawnSync("iscsiadm", ["-m", "discoverydb", "-t", "sendtargets", "-p", `127.0.0.1:${PORT}`, "-o", "delete"]);
    await fs.rm(path.join(findNodeDatabase().dir, IQN), { recursive: true, force: true });
    await tgt?.stop();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it("runs SMB calls that succeed, fail in the host and fail validation", async () => {
    const c = await connectGroup("smb", { socketDir: path.join(dir, "sock"), versions: ["v1"] });
    clients.push(c);
    const smb = c.client as unknown as {
      newSmbGlobalMapping(r: { remotePath: string; localPath: string; username: string; password: string }): Promise<unknown>;
      removeSmbGlobalMapping(r: { remotePath: string }): Promise<unknown>;
    };
    await smb.newSmbGlobalMapping({ remotePath: "\\\\files\\share\\a", localPath: path.join(kubelet, "a"), username: "svc", password: SECRETS.smbPassword });
    reached.smbPassword = (await mount.invocations()).some((i) => i.credentials?.content.includes(`password=${SECRETS.smbPassword}\n`));
    await smb.newSmbGlobalMapping({ remotePath: "\\\\files\\share\\b", localPath: path.join(kubelet, "b"), username: "svc", password: SECRETS.smbPassword });
    await smb.removeSmbGlobalMapping({ remotePath: "\\\\files\\share\\a" });
    await smb.removeSmbGlobalMapping({ remotePath: "\\\\files\\share\\b" });
    await mount.behave({ stderr: "mount error(13): Permission denied\n", exitCode: 32 });
    await rejectsWithCode(smb.newSmbGlobalMapping({ remotePath: "\\\\files\\other", localPath: "", username: "svc", password: SECRETS.smbPasswordFailedMount }), 7);
    reached.smbPasswordFailedMount = (await mount.invocations()).some((i) => i.credentials?.content.includes(SECRETS.smbPasswordFailedMount));
    await rejectsWithCode(smb.newSmbGlobalMapping({ remotePath: "\\\\files\\other", localPath: "", username: "svc", password: SECRETS.smbPasswordInvalid }), 3);
    await rejectsWithCode(smb.newSmbGlobalMapping({ remotePath: "\\\\files\\ot|her", localPath: "", username: "svc", password: SECRETS.smbPassword }), 3);
  });

  it("runs iSCSI calls with one-way and mutual CHAP, and invalid secrets", async () => {
    const c = await connectGroup("iscsi", { socketDir: path.join(dir, "sock"), versions: ["v1alpha2"] });
    clients.push(c);
    const iscsi = c.client as unknown as {
      addTargetPortal(r: object): Promise<unknown>;
      discoverTargetPortal(r: object): Promise<{ iqns: string[] }>;
      removeTargetPortal(r: object): Promise<unknown>;
      connectTarget(r: object): Promise<unknown>;
      setMutualChapSecret(r: { MutualChapSecret: string }): Promise<unknown>;
    };
    await iscsi.addTargetPortal({ targetPortal: portal });
    assert.deepEqual((await iscsi.discoverTargetPortal({ targetPortal: portal })).iqns, [IQN]);
    await rejectsWithCode(iscsi.connectTarget({ targetPortal: portal, iqn: IQN, authType: 1, chapUsername: "chap-user", chapSecret: SECRETS.chapSecret }), 9);
    await iscsi.setMutualChapSecret({ MutualChapSecret: SECRETS.mutualSecret });
    await rejectsWithCode(iscsi.connectTarget({ targetPortal: portal, iqn: IQN, authType: 2, chapUsername: "chap-user", chapSecret: SECRETS.chapSecret }), 9);
    const records = await fs.readdir(path.join(findNodeDatabase().dir, IQN), { recursive: true, withFileTypes: true });
    const texts = await Promise.all(records.filter((e) => e.isFile()).map((e) => fs.readFile(path.join(e.parentPath, e.name), "utf8")));
    reached.chapSecret = texts.some((t) => t.includes(`node.session.auth.password = ${SECRETS.chapSecret}`));
    reached.mutualSecret = (await fs.readFile(path.join(stateDir, "iscsi", "mutual-chap-secret"), "utf8")) === SECRETS.mutualSecret && texts.some((t) => t.includes(SECRETS.mutualSecret));
    await rejectsWithCode(iscsi.connectTarget({ targetPortal: portal, iqn: IQN, authType: 1, chapUsername: "u", chapSecret: SECRETS.chapSecretInvalid }), 3);
    await rejectsWithCode(iscsi.setMutualChapSecret({ MutualChapSecret: SECRETS.mutualSecretInvalid }), 3);
    await iscsi.removeTargetPortal({ targetPortal: portal });
  });

  it("finds no secret in any log line, argv, environment or stdin", async () => {
    for (const cl of clients.splice(0)) cl.close();
    await daemon.stop();
    const log = daemon.stderr();
    assert.match(log, /\/v1\.Smb\/NewSmbGlobalMapping request=.*"password":"\*\*\*REDACTED\*\*\*"/, "requests were logged (redacted) at -v=10");
    assert.match(log, /\/v1alpha2\.Iscsi\/ConnectTarget request=.*"chapSecret":"\*\*\*REDACTED\*\*\*"/);
    assert.match(log, /\/v1alpha2\.Iscsi\/SetMutualChapSecret request=.*"MutualChapSecret":"\*\*\*REDACTED\*\*\*"/);
    const lines = log.split("\n");
    const invocations = [...(await mount.invocations()), ...(await iscsiadm.invocations())];
    assert.ok(invocations.length > 5);
    for (const [name, secret] of Object.entries(SECRETS)) {
      const needle = fragment(secret);
      for (const line of lines) assert.ok(!line.includes(needle), `${name} in log line: ${line}`);
      for (const inv of invocations) {
        for (const arg of inv.argv) assert.ok(!arg.includes(needle), `${name} on argv: ${arg}`);
        for (const [k, v] of Object.entries(inv.env)) assert.ok(!v.includes(needle) && !k.includes(needle), `${name} in environment ${k}`);
        assert.ok(!inv.stdin.includes(needle), `${name} on stdin`);
      }
    }
    assert.deepEqual(reached, { smbPassword: true, smbPasswordFailedMount: true, chapSecret: true, mutualSecret: true }, "each secret reached its one legitimate place");
  });
});
