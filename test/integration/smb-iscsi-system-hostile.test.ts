/**
 * Hostile input in every string field of every RPC of the SMB, iSCSI and System groups, through
 * the real daemon. Each call must end with a clear status — InvalidArgument, or a safe result
 * (OK, NotFound, AlreadyExists, PermissionDenied, FailedPrecondition) — never Unknown/Internal, never
 * a crash; nothing reaches a shell (the `$(touch …)` marker file never appears); and no payload
 * reaches any command line or environment: the daemon runs in a private mount namespace whose
 * /usr/local/sbin holds recording `mount`, `iscsiadm` and `systemctl` programs (mount mounts a
 * tmpfs in place of CIFS; iscsiadm passes through to the real one; systemctl is a stand-in).
 */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { connectGroup } from "../../src/client/connect-group.ts";
import { fakeSystemctl, isRoot, mountNamespace, recordingMountAndIscsiadm, startDaemon, type MountNamespace, type RecordingProgram, type RunningDaemon } from "./smb-iscsi-system-fixtures.ts";

const MARKER = path.join(os.tmpdir(), `csi-proxy-pwned-${process.pid}`);
const PAYLOADS: string[] = [
  `'; touch ${MARKER}; '`,
  `"; touch ${MARKER}; "`,
  `$(touch ${MARKER})`,
  `\`touch ${MARKER}\``,
  `x;touch ${MARKER}`,
  `x|touch ${MARKER}`,
  `x&&touch ${MARKER}&`,
  "line1\nline2",
  "cr\rlf",
  "nul\0byte",
  "%PATH%%SystemRoot%",
  "${IFS}ifs",
  "../../../../etc/passwd",
  "\\\\?\\C:\\Windows",
  "ｅｔｃ／ｐａｓｓｗｄ", // fullwidth look-alikes
  "a\u2215b\u2044c", // division slash, fraction slash
  "\u202Eevil\u200B", // RTL override, zero-width space
  "-o",
  "--help",
  "ü€😀",
  "A".repeat(100_000),
];
/** Payloads distinctive enough that finding them in an argv would mean they got there. */
const DISTINCTIVE = PAYLOADS.filter((p) => !["-o", "--help"].includes(p));
const ALLOWED = new Set([0, 3, 5, 6, 7, 9]);

type Call = (payload: string) => Promise<unknown>;

const hasIscsiadm = await fs.stat("/usr/sbin/iscsiadm").then(() => true, () => false);

describe("hostile input through the daemon", { skip: !isRoot && "needs root for the mount namespace" }, () => {
  let dir: string;
  let ns: MountNamespace;
  let daemon: RunningDaemon;
  let mount: RecordingProgram;
  let iscsiadm: RecordingProgram;
  let ctl: Awaited<ReturnType<typeof fakeSystemctl>>;
  const clients: { close(): void }[] = [];
  let smb: any, iscsi: any, system: any;
  let kubelet: string;

  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "hostile-int-"));
    kubelet = path.join(dir, "kubelet");
    await fs.mkdir(kubelet);
    const bin = await recordingMountAndIscsiadm(dir);
    ({ mount, iscsiadm } = bin);
    // The real iscsiadm when installed; otherwise answer like it does for an unknown record.
    await iscsiadm.behave(hasIscsiadm ? { exec: "/usr/sbin/iscsiadm" } : { stderr: "iscsiadm: No records found\n", exitCode: 21 });
    ctl = await fakeSystemctl(bin.fakeBin, { ssh: { active: "active", file: "enabled", desc: "ssh" } });
    ns = await mountNamespace(`mount -t tmpfs tmpfs /run\nmkdir -p /run/systemd/system /run/lock\nmount --bind ${bin.fakeBin} /usr/local/sbin`);
    const socketDir = path.join(dir, "sock");
    daemon = await startDaemon(["-socket-dir", socketDir, "-kubelet-path", kubelet, "-state-dir", path.join(dir, "state"), "-allowed-service", "*", "-v=10"], { wrapper: ns.enter });
    for (const [group, version] of [["smb", "v1"], ["iscsi", "v1alpha2"], ["system", "v1alpha1"]] as const) {
      const c = await connectGroup(group, { socketDir, versions: [version] as never });
      clients.push(c);
      if (group === "smb") smb = c.client;
      else if (group === "iscsi") iscsi = c.client;
      else system = c.client;
    }
  });
  after(async () => {
    for (const c of clients) c.close();
    await daemon?.stop();
    await ns?.close();
    await fs.rm(dir, { recursive: true, force: true });
    await fs.rm(MARKER, { force: true });
  });

  const portal = { targetAddress: "127.0.0.1", targetPort: 3260 };
  const iqn = "iqn.2024-01.io.csi-proxy.test:hostile";
  const fields: Record<string, Call> = {
    "smb.NewSmbGlobalMapping.remote_path": (p) => smb.newSmbGlobalMapping({ remotePath: p, localPath: "", username: "u", password: "p" }),
    "smb.NewSmbGlobalMapping.remote_path (below the share)": (p) => smb.newSmbGlobalMapping({ remotePath: `\\\\server\\share\\${p}`, localPath: "", username: "u", password: "p" }),
    "smb.NewSmbGlobalMapping.local_path": (p) => smb.newSmbGlobalMapping({ remotePath: "\\\\server\\share", localPath: p, username: "u", password: "p" }),
    "smb.NewSmbGlobalMapping.local_path (inside kubelet)": (p) => smb.newSmbGlobalMapping({ remotePath: "\\\\server\\share", localPath: `${kubelet}/${p}`, username: "u", password: "p" }),
    "smb.NewSmbGlobalMapping.username": (p) => smb.newSmbGlobalMapping({ remotePath: "\\\\server\\share", localPath: "", username: p, password: "p" }),
    "smb.NewSmbGlobalMapping.password": (p) => smb.newSmbGlobalMapping({ remotePath: "\\\\server\\share", localPath: "", username: "u", password: p }),
    "smb.RemoveSmbGlobalMapping.remote_path": (p) => smb.removeSmbGlobalMapping({ remotePath: p }),
    "iscsi.AddTargetPortal.target_address": (p) => iscsi.addTargetPortal({ targetPortal: { targetAddress: p, targetPort: 3260 } }),
    "iscsi.DiscoverTargetPortal.target_address": (p) => iscsi.discoverTargetPortal({ targetPortal: { targetAddress: p, targetPort: 3260 } }),
    "iscsi.RemoveTargetPortal.target_address": (p) => iscsi.removeTargetPortal({ targetPortal: { targetAddress: p, targetPort: 3260 } }),
    "iscsi.ConnectTarget.target_address": (p) => iscsi.connectTarget({ targetPortal: { targetAddress: p, targetPort: 3260 }, iqn, authType: 0, chapUsername: "", chapSecret: "" }),
    "iscsi.ConnectTarget.iqn": (p) => iscsi.connectTarget({ targetPortal: portal, iqn: p, authType: 0, chapUsername: "", chapSecret: "" }),
    "iscsi.ConnectTarget.chap_username": (p) => iscsi.connectTarget({ targetPortal: portal, iqn, authType: 1, chapUsername: p, chapSecret: "secret-123456" }),
    "iscsi.ConnectTarget.chap_secret": (p) => iscsi.connectTarget({ targetPortal: portal, iqn, authType: 2, chapUsername: "u", chapSecret: p }),
    "iscsi.DisconnectTarget.target_address": (p) => iscsi.disconnectTarget({ targetPortal: { targetAddress: p, targetPort: 3260 }, iqn }),
    "iscsi.DisconnectTarget.iqn": (p) => iscsi.disconnectTarget({ targetPortal: portal, iqn: p }),
    "iscsi.GetTargetDisks.target_address": (p) => iscsi.getTargetDisks({ targetPortal: { targetAddress: p, targetPort: 3260 }, iqn }),
    "iscsi.GetTargetDisks.iqn": (p) => iscsi.getTargetDisks({ targetPortal: portal, iqn: p }),
    "iscsi.SetMutualChapSecret.MutualChapSecret": (p) => iscsi.setMutualChapSecret({ MutualChapSecret: p }),
    "system.GetService.name": (p) => system.getService({ name: p }),
    "system.StartService.name": (p) => system.startService({ name: p }),
    "system.StopService.name": (p) => system.stopService({ name: p, force: true }),
  };

  for (const [field, call] of Object.entries(fields)) {
    it(field, async () => {
      const outcomes: string[] = [];
      for (const payload of PAYLOADS) {
        let code = 0;
        let message = "";
        try {
          await call(payload);
        } catch (err) {
          const e = err as { code?: number; rawMessage?: string };
          code = e.code ?? -1;
          message = e.rawMessage ?? String(err);
        }
        if (!ALLOWED.has(code)) outcomes.push(`${JSON.stringify(payload.slice(0, 40))} → code ${code}: ${message.slice(0, 300)}`);
        assert.ok(message.length < 4096, `error message of ${message.length} characters echoes the input unbounded`);
      }
      assert.deepEqual(outcomes, [], "every call ends with a clear status");
      assert.equal(daemon.child.exitCode, null, "the daemon is still running");
    });
  }

  it("nothing reached a shell, a command line or an environment", async () => {
    await assert.rejects(fs.stat(MARKER), { code: "ENOENT" });
    const seen = [
      ...(await mount.invocations()).map((i) => JSON.stringify([i.argv, i.env])),
      ...(await iscsiadm.invocations()).map((i) => JSON.stringify([i.argv, i.env])),
      ...(await ctl.argv()).map((a) => JSON.stringify(a)),
    ];
    assert.ok(seen.length > 0, "the recorders saw the calls that got through");
    for (const payload of DISTINCTIVE) {
      const needle = JSON.stringify(payload).slice(1, -1); // as it would appear inside the JSON records
      for (const line of seen) assert.ok(!line.includes(needle), `payload ${JSON.stringify(payload.slice(0, 40))} reached ${line.slice(0, 200)}`);
    }
    // The daemon still serves normally.
    const list = await iscsi.listTargetPortals({});
    assert.ok(Array.isArray(list.targetPortals));
  });
});
