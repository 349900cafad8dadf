/**
 * The iSCSI group through the real daemon against a real target: tgtd (Debian package `tgt`) on
 * 127.0.0.1:13260 with two file-backed LUNs, and the real open-iscsi `iscsiadm` with the real
 * node database (found as the daemon finds it: iscsi-node-db.ts; entries made here are removed again).
 *
 * This kernel has neither iscsi_tcp nor scsi_transport_iscsi, so two things cannot happen here:
 * iscsid cannot start (it needs NETLINK_ISCSI), and no session can be logged in. Hence:
 * 1. "as is": portal add/list/remove work; discovery and login fail with FailedPrecondition
 *    messages naming the missing iscsi_tcp module / iscsid — the documented platform limit.
 * 2. "with the transport registered": in a private mount namespace, a `tcp` entry is added to
 *    /sys/class/iscsi_transport (overlay) and a stand-in answers iscsiadm's iscsid queries for the
 *    initiator name; iscsiadm then performs SendTargets discovery itself, over TCP, against tgtd —
 *    the discovered IQNs are real. Login requests are answered with the error a real iscsid gives
 *    without iscsi_tcp. This proves the node-record CHAP handling with the records iscsiadm
 *    created, and that no secret reaches argv (a recording `iscsiadm` in the namespace's
 *    /usr/local/sbin passes every call through to /usr/sbin/iscsiadm).
 * Not exercised here: a logged-in session, hence disks of a connected target (GetTargetDisks with
 * a session is covered by the sysfs test in src/host/linux/iscsi.test.ts) and CHAP accepted or
 * rejected by a target.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { connectGroup } from "../../src/client/connect-group.ts";
import { canRunIscsiTarget, iscsiTransportNamespace, kernelHasIscsiTcp, recordingProgram, startDaemon, startTgt, type FakeIscsid, type MountNamespace, type RecordingProgram, type RunningDaemon, type TgtTarget } from "./smb-iscsi-system-fixtures.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";
import { findNodeDatabase } from "../../src/host/linux/block/iscsi-node-db.ts";

const skip = !canRunIscsiTarget() ? "needs root, tgt (tgtd), open-iscsi (iscsiadm) and unshare: run scripts/install-test-tools.sh" : kernelHasIscsiTcp() ? "this kernel has iscsi_tcp: the no-module expectations do not apply" : false;

const PORT = 13260;
const IQN1 = "iqn.2024-01.io.csi-proxy.test:disk1";
const IQN2 = "iqn.2024-01.io.csi-proxy.test:disk2";
const CHAP_SECRET = "Chap-S3cret;$(id)`x`";
const MUTUAL_SECRET = "Mutual-S3cret|&%PATH%";
const portal = { targetAddress: "127.0.0.1", targetPort: PORT };

type Portal = { targetAddress: string; targetPort: number };
interface IscsiClient {
  addTargetPortal(r: { targetPortal?: Portal }): Promise<unknown>;
  discoverTargetPortal(r: { targetPortal?: Portal }): Promise<{ iqns: string[] }>;
  removeTargetPortal(r: { targetPortal?: Portal }): Promise<unknown>;
  listTargetPortals(r: object): Promise<{ targetPortals: Portal[] }>;
  connectTarget(r: { targetPortal?: Portal; iqn: string; authType: number; chapUsername: string; chapSecret: string }): Promise<unknown>;
  disconnectTarget(r: { targetPortal?: Portal; iqn: string }): Promise<unknown>;
  getTargetDisks(r: { targetPortal?: Portal; iqn: string }): Promise<{ diskIDs: string[] }>;
  setMutualChapSecret(r: { MutualChapSecret: string }): Promise<unknown>;
}

const ours = (list: Portal[]) =>
  list.filter((p) => p.targetAddress === "127.0.0.1" && (p.targetPort === PORT || p.targetPort === 3260)).map((p) => ({ targetAddress: p.targetAddress, targetPort: p.targetPort }));
const nodeRecordFiles = async (iqn: string): Promise<string[]> => {
  const dir = path.join(findNodeDatabase().dir, iqn);
  const out: string[] = [];
  for (const e of await fs.readdir(dir).catch(() => [] as string[])) {
    const full = path.join(dir, e);
    if ((await fs.stat(full)).isDirectory()) for (const f of await fs.readdir(full)) out.push(path.join(full, f));
    else out.push(full);
  }
  return out;
};
const iscsiadm = (...args: string[]) => spawnSync("iscsiadm", args, { encoding: "utf8" });

describe("iSCSI group through the daemon, against tgt on 127.0.0.1", { skip }, () => {
  let dir: string;
  let tgt: TgtTarget;
  const daemons: RunningDaemon[] = [];
  const clients: { close(): void }[] = [];

  async function client(socketDir: string, version: "v1alpha2" | "v1alpha1" = "v1alpha2"): Promise<IscsiClient> {
    const c = await connectGroup("iscsi", { socketDir, versions: [version] });
    clients.push(c);
    return c.client as unknown as IscsiClient;
  }

  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "iscsi-int-"));
    const before = ours((await Promise.resolve(iscsiadm("-m", "discoverydb").stdout)).split("\n").map((l) => /^(\S+):(\d+) via/.exec(l)).filter(Boolean).map((m) => ({ targetAddress: m![1], targetPort: Number(m![2]) })));
    assert.deepEqual(before, [], "leftover discovery records for 127.0.0.1 from an earlier run; remove them with iscsiadm -m discoverydb -o delete");
    tgt = await startTgt(dir, PORT, [IQN1, IQN2]);
  });
  after(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const d of daemons) await d.stop();
    for (const p of [portal, { targetAddress: "127.0.0.1", targetPort: 3260 }]) iscsiadm("-m", "discoverydb", "-t", "sendtargets", "-p", `127.0.0.1:${p.targetPort}`, "-o", "delete");
    for (const iqn of [IQN1, IQN2]) await fs.rm(path.join(findNodeDatabase().dir, iqn), { recursive: true, force: true });
    await tgt?.stop();
    await fs.rm(dir, { recursive: true, force: true });
    for (const d of daemons) for (const s of [CHAP_SECRET, MUTUAL_SECRET]) assert.ok(!d.stderr().includes(s), "a CHAP secret appeared in a daemon log line");
  });

  describe("as is: no iscsi_tcp module, no iscsid", () => {
    let iscsi: IscsiClient;
    before(async () => {
      const socketDir = path.join(dir, "sock-a");
      daemons.push(await startDaemon(["-socket-dir", socketDir, "-kubelet-path", dir, "-state-dir", path.join(dir, "state-a"), "-v=10"]));
      iscsi = await client(socketDir);
    });

    it("adds (idempotently), lists and removes portals; port 0 means 3260", async () => {
      await iscsi.addTargetPortal({ targetPortal: portal });
      await iscsi.addTargetPortal({ targetPortal: portal });
      await iscsi.addTargetPortal({ targetPortal: { targetAddress: "127.0.0.1", targetPort: 0 } });
      assert.deepEqual(ours((await iscsi.listTargetPortals({})).targetPortals).sort((a, b) => a.targetPort - b.targetPort), [
        { targetAddress: "127.0.0.1", targetPort: 3260 },
        portal,
      ]);
      assert.match(iscsiadm("-m", "discoverydb").stdout, /^127\.0\.0\.1:13260 via sendtargets$/m, "a real open-iscsi discovery record");
      await iscsi.removeTargetPortal({ targetPortal: { targetAddress: "127.0.0.1", targetPort: 0 } });
      assert.deepEqual(ours((await iscsi.listTargetPortals({})).targetPortals), [portal]);
    });

    it("discovery fails with FailedPrecondition naming the missing iscsi_tcp module", async () => {
      await rejectsWithCode(iscsi.discoverTargetPortal({ targetPortal: portal }), 9, /load the iscsi_tcp kernel module/);
    });

    it("login fails with FailedPrecondition naming iscsid and the module; the not-connected cases succeed", async () => {
      assert.equal(iscsiadm("-m", "node", "-o", "new", "-T", IQN1, "-p", `127.0.0.1:${PORT}`).status, 0); // a static node record
      assert.deepEqual((await iscsi.getTargetDisks({ targetPortal: portal, iqn: IQN1 })).diskIDs, []);
      await iscsi.disconnectTarget({ targetPortal: portal, iqn: IQN1 });
      await rejectsWithCode(
        iscsi.connectTarget({ targetPortal: portal, iqn: IQN1, authType: 0, chapUsername: "", chapSecret: "" }),
        9,
        /iscsid is not reachable: start iscsid \(it needs the iscsi_tcp kernel module, which is not loaded\)/,
      );
      await rejectsWithCode(iscsi.connectTarget({ targetPortal: portal, iqn: IQN2, authType: 0, chapUsername: "", chapSecret: "" }), 5, /not found/);
      iscsiadm("-m", "node", "-o", "delete", "-T", IQN1, "-p", `127.0.0.1:${PORT}`);
    });

    it("a missing target_portal is InvalidArgument (upstream crashes)", async () => {
      await rejectsWithCode(iscsi.addTargetPortal({}), 3, /target_portal is required/);
      await rejectsWithCode(iscsi.connectTarget({ iqn: IQN1, authType: 0, chapUsername: "", chapSecret: "" }), 3, /target_portal is required/);
      await rejectsWithCode(iscsi.getTargetDisks({ iqn: IQN1 }), 3);
    });

    it("removal makes the portal unknown", async () => {
      await iscsi.removeTargetPortal({ targetPortal: portal });
      assert.deepEqual(ours((await iscsi.listTargetPortals({})).targetPortals), []);
      await rejectsWithCode(iscsi.removeTargetPortal({ targetPortal: portal }), 5, /target portal 127.0.0.1:13260 not found/);
      await rejectsWithCode(iscsi.discoverTargetPortal({ targetPortal: portal }), 5);
    });
  });

  describe("with the tcp transport registered (namespace) and an iscsid stand-in", () => {
    let ns: MountNamespace;
    let iscsid: FakeIscsid;
    let recorder: RecordingProgram;
    let iscsi: IscsiClient;
    let stateDir: string;

    before(async () => {
      for (const c of clients.splice(0)) c.close();
      for (const d of daemons) await d.stop();
      const fakeBin = path.join(dir, "fakebin");
      await fs.mkdir(fakeBin);
      recorder = await recordingProgram(fakeBin, "iscsiadm");
      await recorder.behave({ exec: "/usr/sbin/iscsiadm" });
      ({ iscsid, ns } = await iscsiTransportNamespace(dir, fakeBin));
      const socketDir = path.join(dir, "sock-b");
      stateDir = path.join(dir, "state-b");
      daemons.push(await startDaemon(["-socket-dir", socketDir, "-kubelet-path", dir, "-state-dir", stateDir, "-v=10"], { wrapper: ns.enter }));
      iscsi = await client(socketDir);
    });
    after(async () => {
      for (const c of clients.splice(0)) c.close();
      for (const d of daemons) await d.stop();
      await ns?.close();
      await iscsid?.stop();
    });

    it("discovers the target's IQNs over a real SendTargets exchange with tgtd", async () => {
      await iscsi.addTargetPortal({ targetPortal: portal });
      assert.deepEqual((await iscsi.discoverTargetPortal({ targetPortal: portal })).iqns.sort(), [IQN1, IQN2]);
      assert.ok((await nodeRecordFiles(IQN1)).length > 0, "iscsiadm created the node records");
      assert.ok(iscsid.requests().includes(8), "the stand-in only supplied the initiator name");
    });

    it("one-way CHAP: secret written to the 0600 node record, never on argv; login fails with the module's error", async () => {
      await rejectsWithCode(
        iscsi.connectTarget({ targetPortal: portal, iqn: IQN1, authType: 1, chapUsername: "chap-user", chapSecret: CHAP_SECRET }),
        9,
        /load the iscsi_tcp kernel module/,
      );
      const [record] = await nodeRecordFiles(IQN1);
      const text = await fs.readFile(record, "utf8");
      assert.match(text, /^node\.session\.auth\.authmethod = CHAP$/m);
      assert.match(text, /^node\.session\.auth\.username = chap-user$/m);
      assert.ok(text.includes(`node.session.auth.password = ${CHAP_SECRET}\n`));
      assert.equal((await fs.stat(record)).mode & 0o777, 0o600);
      const shown = iscsiadm("-m", "node", "-T", IQN1, "-p", `127.0.0.1:${PORT}`).stdout;
      assert.match(shown, /^node\.session\.auth\.username = chap-user$/m, "iscsiadm reads the rewritten record");
      assert.match(shown, /^node\.session\.auth\.password = \*+$/m);
    });

    it("mutual CHAP: the node-global secret lives in the state dir (0600) and goes into the record as password_in", async () => {
      await iscsi.setMutualChapSecret({ MutualChapSecret: MUTUAL_SECRET });
      const secretFile = path.join(stateDir, "iscsi", "mutual-chap-secret");
      assert.equal((await fs.stat(secretFile)).mode & 0o777, 0o600);
      await rejectsWithCode(
        iscsi.connectTarget({ targetPortal: portal, iqn: IQN2, authType: 2, chapUsername: "chap-user", chapSecret: CHAP_SECRET }),
        9,
        /iscsi_tcp/,
      );
      const [record] = await nodeRecordFiles(IQN2);
      const text = await fs.readFile(record, "utf8");
      assert.ok(text.includes(`node.session.auth.password_in = ${MUTUAL_SECRET}\n`));
      assert.ok(text.includes(`node.session.auth.username_in = ${IQN2}\n`));
    });

    it("not connected: GetTargetDisks is empty and DisconnectTarget succeeds", async () => {
      assert.deepEqual((await iscsi.getTargetDisks({ targetPortal: { targetAddress: "127.0.0.1", targetPort: PORT }, iqn: IQN1 })).diskIDs, []);
      await iscsi.disconnectTarget({ targetPortal: portal, iqn: IQN2 });
    });

    it("no secret ever appeared on an iscsiadm command line or in its environment", async () => {
      const invocations = await recorder.invocations();
      assert.ok(invocations.some((i) => i.argv.includes("--login")), "logins went through the recorder");
      for (const inv of invocations) {
        const seen = JSON.stringify([inv.argv, inv.env, inv.stdin]);
        assert.ok(!seen.includes("S3cret"), `secret in ${seen}`);
      }
    });

    it("v1alpha1 serves the same portals; removal deletes the node records", async () => {
      const old = await client(path.join(dir, "sock-b"), "v1alpha1");
      assert.deepEqual(ours((await old.listTargetPortals({})).targetPortals), [portal]);
      await old.removeTargetPortal({ targetPortal: portal });
      assert.deepEqual(await nodeRecordFiles(IQN1), []);
      assert.deepEqual(await nodeRecordFiles(IQN2), []);
    });
  });
});
