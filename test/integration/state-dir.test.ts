/**
 * The start-up check of -state-dir through the real daemon (src/main.ts over its Unix sockets), as
 * root: a state directory owned by another user (nobody), one writable by others, a symbolic link
 * planted as smb-mappings.json, a foreign mutual CHAP secret file. In every case the daemon starts
 * and serves all 23 endpoints; only the state's users refuse (SMB: every call; iSCSI: mutual CHAP)
 * with FailedPrecondition naming the directory or file and its owner, and unrelated groups answer.
 * No SMB call here reaches mount(8): RemoveSmbGlobalMapping of an unknown root answers from the
 * state and the (empty) mount directory.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { connectGroup } from "../../src/client/connect-group.ts";
import { isRoot, startDaemon, type RunningDaemon } from "./smb-iscsi-system-fixtures.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";

const FAILED_PRECONDITION = 9, NOT_FOUND = 5;
const NOBODY = 65534;
const ROOT = "\\\\fileserver\\vols";

interface Clients {
  smb: {
    newSmbGlobalMapping(r: { remotePath: string; localPath: string; username: string; password: string }): Promise<unknown>;
    removeSmbGlobalMapping(r: { remotePath: string }): Promise<unknown>;
  };
  iscsi: { setMutualChapSecret(r: { MutualChapSecret: string }): Promise<unknown> };
  filesystem: { pathExists(r: { path: string }): Promise<{ exists: boolean }> };
}

describe("-state-dir start-up check through the daemon", { skip: !isRoot && "needs root (chown to nobody)" }, () => {
  let dir: string;
  let n = 0;
  const running: { daemon: RunningDaemon; close: () => void }[] = [];

  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "state-dir-it-"));
  });
  after(async () => {
    for (const r of running.splice(0)) {
      r.close();
      await r.daemon.stop();
    }
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** Starts a daemon on `stateDir`; returns typed clients and the daemon. */
  async function start(stateDir: string): Promise<Clients & { daemon: RunningDaemon; kubelet: string }> {
    const base = path.join(dir, `d${++n}`);
    const kubelet = path.join(base, "kubelet");
    const socketDir = path.join(base, "sock");
    await fs.mkdir(kubelet, { recursive: true });
    const daemon = await startDaemon(["-socket-dir", socketDir, "-kubelet-path", kubelet, "-state-dir", stateDir, "-v=2"]);
    const smb = await connectGroup("smb", { socketDir, versions: ["v1"] });
    const iscsi = await connectGroup("iscsi", { socketDir, versions: ["v1alpha2"] });
    const filesystem = await connectGroup("filesystem", { socketDir, versions: ["v1"] });
    running.push({ daemon, close: () => [smb, iscsi, filesystem].forEach((c) => c.close()) });
    return {
      daemon,
      kubelet,
      smb: smb.client as unknown as Clients["smb"],
      iscsi: iscsi.client as unknown as Clients["iscsi"],
      filesystem: filesystem.client as unknown as Clients["filesystem"],
    };
  }
  const newReq = { remotePath: `${ROOT}\\pv1`, localPath: "", username: "CORP\\svc", password: "Pa55-word" };

  it("a state directory owned by nobody: serves, refuses SMB and mutual CHAP naming the directory and owner, other groups answer, nothing written there", async () => {
    const stateDir = path.join(dir, "foreign");
    await fs.mkdir(stateDir);
    await fs.chmod(stateDir, 0o777);
    await fs.chown(stateDir, NOBODY, NOBODY);
    const c = await start(stateDir);
    const owned = new RegExp(`state directory ${stateDir} is owned by uid 65534 \\(nobody\\), not by the user csi-proxy runs as \\(uid 0 \\(root\\)\\)`);
    assert.match(c.daemon.stderr(), owned, "logged at start-up");
    await rejectsWithCode(c.smb.newSmbGlobalMapping(newReq), FAILED_PRECONDITION, owned);
    await rejectsWithCode(c.smb.removeSmbGlobalMapping({ remotePath: ROOT }), FAILED_PRECONDITION, /SMB calls are refused/);
    await rejectsWithCode(c.iscsi.setMutualChapSecret({ MutualChapSecret: "mutual-secret-1" }), FAILED_PRECONDITION, owned);
    assert.equal((await c.filesystem.pathExists({ path: c.kubelet })).exists, true, "the filesystem group is unaffected");
    assert.deepEqual(await fs.readdir(stateDir), [], "nothing was written into the foreign directory");
    const st = await fs.stat(stateDir);
    assert.equal(st.uid, NOBODY);
    assert.equal(st.mode & 0o777, 0o777, "a foreign directory is not modified");
  });

  it("a state directory writable by others: tightened with a warning, SMB and mutual CHAP work", async () => {
    const stateDir = path.join(dir, "lax");
    await fs.mkdir(stateDir);
    await fs.chmod(stateDir, 0o777);
    const c = await start(stateDir);
    assert.match(c.daemon.stderr(), new RegExp(`state directory ${stateDir} was writable by group or others \\(mode 0777\\): tightened to 0711`));
    assert.equal((await fs.stat(stateDir)).mode & 0o777, 0o711);
    await rejectsWithCode(c.smb.removeSmbGlobalMapping({ remotePath: ROOT }), NOT_FOUND); // answered, not refused
    await c.iscsi.setMutualChapSecret({ MutualChapSecret: "mutual-secret-2" });
    const secret = path.join(stateDir, "iscsi", "mutual-chap-secret");
    assert.equal(await fs.readFile(secret, "utf8"), "mutual-secret-2");
    assert.equal((await fs.stat(secret)).mode & 0o777, 0o600);
  });

  it("a symbolic link planted as smb-mappings.json: SMB refused naming the file, the link's target untouched; mutual CHAP works", async () => {
    const stateDir = path.join(dir, "linked");
    await fs.mkdir(stateDir, { mode: 0o700 });
    const planted = path.join(dir, "planted.json");
    const content = JSON.stringify({ version: 1, roots: { [ROOT]: { users: [] } } });
    await fs.writeFile(planted, content);
    await fs.symlink(planted, path.join(stateDir, "smb-mappings.json"));
    const c = await start(stateDir);
    const linked = new RegExp(`state file ${stateDir}/smb-mappings.json is a symbolic link`);
    assert.match(c.daemon.stderr(), linked);
    await rejectsWithCode(c.smb.removeSmbGlobalMapping({ remotePath: ROOT }), FAILED_PRECONDITION, linked);
    await rejectsWithCode(c.smb.newSmbGlobalMapping(newReq), FAILED_PRECONDITION, linked);
    await c.iscsi.setMutualChapSecret({ MutualChapSecret: "mutual-secret-3" });
    assert.equal(await fs.readFile(planted, "utf8"), content);
    assert.ok((await fs.lstat(path.join(stateDir, "smb-mappings.json"))).isSymbolicLink(), "the link is left for the operator");
  });

  it("a mutual CHAP secret file owned by nobody: mutual CHAP refused naming the file, SMB answers", async () => {
    const stateDir = path.join(dir, "foreign-secret");
    await fs.mkdir(path.join(stateDir, "iscsi"), { recursive: true, mode: 0o700 });
    const secret = path.join(stateDir, "iscsi", "mutual-chap-secret");
    await fs.writeFile(secret, "planted", { mode: 0o600 });
    await fs.chown(secret, NOBODY, NOBODY);
    const c = await start(stateDir);
    const owned = new RegExp(`state file ${secret} is owned by uid 65534 \\(nobody\\)`);
    await rejectsWithCode(c.iscsi.setMutualChapSecret({ MutualChapSecret: "mutual-secret-4" }), FAILED_PRECONDITION, owned);
    await rejectsWithCode(c.iscsi.setMutualChapSecret({ MutualChapSecret: "" }), FAILED_PRECONDITION, owned);
    await rejectsWithCode(c.smb.removeSmbGlobalMapping({ remotePath: ROOT }), NOT_FOUND);
    assert.equal(await fs.readFile(secret, "utf8"), "planted", "neither replaced nor deleted");
  });
});
