/**
 * The SMB group through the real daemon (gRPC over its Unix sockets), as root, in a private mount
 * namespace whose /usr/local/sbin (first on the daemon's fixed PATH) holds a recording `mount`.
 *
 * What runs for real: the daemon, the SMB service with reference counting, the state file in a
 * temporary -state-dir, the path policy, the Linux SMB host, the credentials file, real mounts and
 * unmounts at the mapping directory, symlinks in the kubelet directory, daemon restarts.
 * What is stood in for: the CIFS protocol. This kernel has no cifs module, so the recorder
 * records mount's argv/env/stdin and the credentials file it is handed, then mounts a tmpfs with
 * the same source at the same directory (`mount -t tmpfs -o size=1m //server/share <dir>`).
 * The CIFS mount itself (mount.cifs reading the credentials file, the `seal` option, the kernel
 * talking SMB3) is not exercised here.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { connectGroup } from "../../src/client/connect-group.ts";
import {
  isRoot,
  MOUNT_TMPFS_INSTEAD,
  mountNamespace,
  recordingMount,
  startDaemon,
  type MountNamespace,
  type RecordingProgram,
  type RunningDaemon,
} from "./smb-iscsi-system-fixtures.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";
import { parseMountInfo } from "../../src/host/linux/kernel/mountinfo.ts";

const PASSWORD = "Sm8-P@ss;$(touch /tmp/pwned)`id`|&%PATH%";
const canRun = isRoot && (await fs.stat("/usr/bin/unshare").then(() => true, () => false));

interface SmbClient {
  newSmbGlobalMapping(req: { remotePath: string; localPath: string; username: string; password: string }): Promise<unknown>;
  removeSmbGlobalMapping(req: { remotePath: string }): Promise<unknown>;
}

describe("SMB group through the daemon", { skip: !canRun && "needs root and unshare(1)" }, () => {
  let dir: string, kubelet: string, stateDir: string, socketDir: string, fakeBin: string;
  let mount: RecordingProgram;
  let ns: MountNamespace;
  let daemon: RunningDaemon | undefined;
  const stderrs: string[] = [];

  const args = () => ["-socket-dir", socketDir, "-kubelet-path", kubelet, "-state-dir", stateDir, "-v=10"];
  async function start(): Promise<void> {
    daemon = await startDaemon(args(), { wrapper: ns.enter });
  }
  const open: { close(): void }[] = [];
  async function stop(): Promise<void> {
    for (const c of open.splice(0)) c.close(); // the daemon waits for open connections when stopping
    if (!daemon) return;
    await daemon.stop();
    stderrs.push(daemon.stderr());
    daemon = undefined;
  }
  async function client(version: "v1" | "v1alpha1" = "v1"): Promise<SmbClient> {
    const c = await connectGroup("smb", { socketDir, versions: [version] });
    open.push(c);
    return c.client as unknown as SmbClient;
  }
  /** Mounts the daemon sees (its namespace), under the state dir. */
  async function smbMounts() {
    const text = await fs.readFile(`/proc/${daemon!.child.pid}/mountinfo`, "utf8");
    return parseMountInfo(text).filter((m) => m.mountPoint.startsWith(stateDir));
  }
  const state = async () => JSON.parse(await fs.readFile(path.join(stateDir, "smb-mappings.json"), "utf8"));
  const uses = async (root = "\\\\fileserver\\vols") => (await state()).roots[root]?.users.length ?? 0;
  const req = (sub: string, local: string, password = PASSWORD) => ({ remotePath: `\\\\FileServer\\Vols\\${sub}`, localPath: local, username: "CORP\\svc-smb", password });

  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "smb-int-"));
    kubelet = path.join(dir, "kubelet");
    stateDir = path.join(dir, "state");
    socketDir = path.join(dir, "sock");
    await fs.mkdir(path.join(kubelet, "plugins"), { recursive: true });
    ({ fakeBin, mount } = await recordingMount(dir));
    ns = await mountNamespace(`mount --bind ${fakeBin} /usr/local/sbin`);
    await start();
  });
  after(async () => {
    await stop();
    await ns?.close();
    await fs.rm(dir, { recursive: true, force: true });
    const leaked = stderrs.join("\n").includes("Sm8-P@ss");
    assert.ok(!leaked, "the password appeared in a daemon log line");
  });

  it("maps once per share root, links each local path into it, and counts uses", async () => {
    const smb = await client();
    const a = path.join(kubelet, "plugins", "a");
    const b = path.join(kubelet, "plugins", "b");
    await smb.newSmbGlobalMapping(req("pvc-1", a));
    const mounts = await smbMounts();
    assert.equal(mounts.length, 1);
    assert.equal(mounts[0].source, "//fileserver/vols");
    // The link points into the mount, at the full remote path (case kept).
    assert.equal(await fs.readlink(a), path.join(mounts[0].mountPoint, "pvc-1"));

    const [inv] = await mount.invocations();
    assert.deepEqual(inv.argv.slice(0, 4), ["-t", "cifs", "//fileserver/vols", mounts[0].mountPoint]);
    assert.match(inv.argv[5], /^credentials=\/.+,seal$/);
    assert.equal(inv.credentials?.mode, 0o600);
    assert.equal(inv.credentials?.dirMode, 0o700);
    assert.equal(inv.credentials?.content, `username=svc-smb\npassword=${PASSWORD}\ndomain=CORP\n`);
    await assert.rejects(fs.stat(inv.credentials!.path), { code: "ENOENT" }, "credentials file deleted after mount");
    for (const i of await mount.invocations()) for (const arg of [...i.argv, ...Object.values(i.env)]) assert.ok(!arg.includes("Sm8-P@ss"));

    await smb.newSmbGlobalMapping(req("pvc-2", b, "another-password"));
    await smb.newSmbGlobalMapping(req("pvc-1", a)); // a retry of the first call
    assert.equal((await mount.invocations()).length, 1, "healthy mapping reused");
    assert.equal(await uses(), 2);
    const stateText = await fs.readFile(path.join(stateDir, "smb-mappings.json"), "utf8");
    assert.ok(!stateText.includes("Sm8-P@ss") && !stateText.includes("svc-smb"), "no credentials in the state file");
    assert.equal((await fs.stat(path.join(stateDir, "smb-mappings.json"))).mode & 0o777, 0o600);
  });

  it("keeps the counts across a daemon restart and unmounts only after the last release", async () => {
    await stop();
    await start();
    assert.match(daemon!.stderr(), /SMB \\\\fileserver\\vols: 2 use\(s\) recovered, mapping present \(OK\)/);
    const smb = await client();
    await smb.removeSmbGlobalMapping({ remotePath: "\\\\fileserver\\vols\\pvc-1" });
    assert.equal((await smbMounts()).length, 1, "still used by pvc-2");
    assert.equal(await uses(), 1);
    await stop();
    await start();
    const smb2 = await client();
    await smb2.removeSmbGlobalMapping({ remotePath: "//FILESERVER/vols/pvc-2" });
    assert.equal((await smbMounts()).length, 0);
    assert.deepEqual((await state()).roots, {});
    await rejectsWithCode(smb2.removeSmbGlobalMapping({ remotePath: "\\\\fileserver\\vols\\pvc-2" }), 5, /no SMB global mapping for remote path \\\\fileserver\\vols/);
    await fs.rm(path.join(kubelet, "plugins", "a"));
    await fs.rm(path.join(kubelet, "plugins", "b"));
  });

  it("after a reboot (mounts gone, links and counts kept) the next call re-mounts without counting twice", async () => {
    const smb = await client();
    const a = path.join(kubelet, "plugins", "r");
    await smb.newSmbGlobalMapping(req("pvc-r", a));
    await stop();
    await ns.close(); // the namespace and its mounts vanish, as at a reboot
    ns = await mountNamespace(`mount --bind ${fakeBin} /usr/local/sbin`);
    await start();
    assert.match(daemon!.stderr(), /1 use\(s\) recovered, mapping absent until the next NewSmbGlobalMapping/);
    assert.equal((await smbMounts()).length, 0);
    const smb2 = await client();
    await smb2.newSmbGlobalMapping(req("pvc-r", a)); // kubelet re-stages the volume
    assert.equal((await smbMounts()).length, 1);
    assert.equal(await uses(), 1);
    await smb2.removeSmbGlobalMapping({ remotePath: "\\\\fileserver\\vols\\pvc-r" });
    assert.equal((await smbMounts()).length, 0);
    await fs.rm(a);
  });

  it("refuses with clear codes and leaves no trace", async () => {
    const smb = await client();
    const before = (await mount.invocations()).length;
    await rejectsWithCode(smb.newSmbGlobalMapping(req("x", "/etc/evil")), 7, /not within the allowed directories/);
    await rejectsWithCode(smb.newSmbGlobalMapping(req("x", path.join(kubelet, "..", "escape"))), 7);
    await rejectsWithCode(smb.newSmbGlobalMapping(req("..\\..\\etc", path.join(kubelet, "plugins", "t"))), 3, /invalid path component/);
    await rejectsWithCode(smb.newSmbGlobalMapping({ ...req("x", ""), remotePath: "\\\\server" }), 3, /remote path \(\\\\server\) is invalid/);
    await rejectsWithCode(smb.newSmbGlobalMapping({ ...req("x", ""), remotePath: "" }), 3, /remote path is empty/);
    await rejectsWithCode(smb.newSmbGlobalMapping(req("x", "", "pass\nword")), 3, /password contains/);
    await fs.mkdir(path.join(kubelet, "plugins", "occupied"));
    await rejectsWithCode(smb.newSmbGlobalMapping(req("x", path.join(kubelet, "plugins", "occupied"))), 6, /already exists/);
    assert.equal((await mount.invocations()).length, before, "mount never ran");
    assert.equal(await uses(), 0);

    await mount.behave({ stderr: "mount error(13): Permission denied\n", exitCode: 32 });
    try {
      await rejectsWithCode(smb.newSmbGlobalMapping(req("x", path.join(kubelet, "plugins", "denied"))), 7, /mounting \/\/fileserver\/vols failed/);
    } finally {
      await mount.behave(MOUNT_TMPFS_INSTEAD);
    }
    const [failed] = (await mount.invocations()).slice(-1);
    await assert.rejects(fs.stat(failed.credentials!.path), { code: "ENOENT" }, "credentials file deleted after a failed mount");
    assert.equal(await uses(), 0, "a failed call is not counted");
    await assert.rejects(fs.lstat(path.join(kubelet, "plugins", "denied")), { code: "ENOENT" });
  });

  it("serves the oldest version (v1alpha1) with the same semantics", async () => {
    const smb = await client("v1alpha1");
    await smb.newSmbGlobalMapping(req("old", path.join(kubelet, "plugins", "old")));
    assert.equal(await uses(), 1);
    await smb.removeSmbGlobalMapping({ remotePath: "\\\\fileserver\\vols\\old" });
    assert.equal((await smbMounts()).length, 0);
  });

  it("an unreadable state file stops SMB (FailedPrecondition) but not the other groups", async () => {
    await stop();
    await fs.writeFile(path.join(stateDir, "smb-mappings.json"), "{truncated");
    await start();
    const smb = await client();
    await rejectsWithCode(smb.newSmbGlobalMapping(req("x", "")), 9, /SMB state file .* is unreadable/);
    await rejectsWithCode(smb.removeSmbGlobalMapping({ remotePath: "\\\\fileserver\\vols" }), 9);
    const fsConn = await connectGroup("filesystem", { socketDir, versions: ["v1"] });
    open.push(fsConn);
    const fsClient = fsConn.client as unknown as { pathExists(r: { path: string }): Promise<{ exists: boolean }> };
    assert.equal((await fsClient.pathExists({ path: kubelet })).exists, true);
    assert.equal(await fs.readFile(path.join(stateDir, "smb-mappings.json"), "utf8"), "{truncated", "left for the operator");
    await fs.rm(path.join(stateDir, "smb-mappings.json"));
  });
});
