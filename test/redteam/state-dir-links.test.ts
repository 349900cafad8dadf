/**
 * Red team: links planted in the state directory while the daemon runs. The
 * start-up check (state-dir.ts) saw a clean tree; afterwards each state sub-directory — `smb`,
 * `smb/mounts`, `smb/credentials`, `iscsi` — is replaced by a symbolic link to a directory outside,
 * holding files of its own, and the calls that use it run: NewSmbGlobalMapping with a password
 * (credentials file, mount directory, the state dir's o+x), RemoveSmbGlobalMapping, SetMutualChapSecret
 * (set and clear). Each must fail FailedPrecondition naming the planted path, and every file and
 * directory outside keeps its checksum, mode, owner and (directories) mtime: nothing created,
 * written, chmod'ed or deleted there, and nothing mounted there. Also a sub-directory made
 * group-writable or given to another user while running is refused. Then the link is replaced by
 * the real directory again and the same call works (the test would otherwise pass on a broken host).
 *
 * Each case plants ROUNDS times (a fresh outside directory each time).
 *
 * Through the real daemon, as root, in a private mount namespace whose /usr/local/sbin holds a
 * recording `mount` that mounts a tmpfs in place of CIFS (this kernel has no cifs; see smb.test.ts).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { connectGroup } from "../../src/client/connect-group.ts";
import { parseMountInfo } from "../../src/host/linux/kernel/mountinfo.ts";
import {
  isRoot, mountNamespace, recordingMount, startDaemon, type MountNamespace, type RunningDaemon,
} from "../integration/smb-iscsi-system-fixtures.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";

const FAILED_PRECONDITION = 9;
const NOBODY = 65534;
const canRun = isRoot && (await fs.stat("/usr/bin/unshare").then(() => true, () => false));
const PASSWORD = "St4te-D1r-P@ss";
/** Plants per case (STATE_LINK_ROUNDS; the soak in docs/reliability.md ran 200). */
const ROUNDS = Number(process.env.STATE_LINK_ROUNDS ?? 3);

interface Clients {
  smb: {
    newSmbGlobalMapping(r: { remotePath: string; localPath: string; username: string; password: string }): Promise<unknown>;
    removeSmbGlobalMapping(r: { remotePath: string }): Promise<unknown>;
  };
  iscsi: { setMutualChapSecret(r: { MutualChapSecret: string }): Promise<unknown> };
}

/** Every entry below `dir` (itself included): path, type, mode, owner, content checksum; directories' mtime. */
async function fingerprint(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (p: string) => {
    const st = await fs.lstat(p, { bigint: true });
    let what = `mode ${st.mode.toString(8)} uid ${st.uid}`;
    if (st.isDirectory()) {
      what += ` dir mtime ${st.mtimeNs}`;
      for (const e of (await fs.readdir(p)).sort()) await walk(path.join(p, e));
    } else if (st.isFile()) what += ` sha256 ${createHash("sha256").update(await fs.readFile(p)).digest("hex")}`;
    out.set(p, what);
  };
  await walk(dir);
  return out;
}

async function assertSame(dir: string, before: Map<string, string>, what: string) {
  const now = await fingerprint(dir);
  const changed = [...new Set([...before.keys(), ...now.keys()])].filter((k) => before.get(k) !== now.get(k));
  assert.deepEqual(changed.map((k) => `${k}: ${before.get(k) ?? "absent"} -> ${now.get(k) ?? "absent"}`), [], `${what}: outside entries changed`);
}

describe("links planted in the state directory after start-up", { skip: !canRun && "needs root and unshare(1)" }, () => {
  let dir: string, kubelet: string, stateDir: string, socketDir: string, outside: string;
  let ns: MountNamespace;
  let daemon: RunningDaemon;
  let c: Clients;
  const closers: { close(): void }[] = [];
  let n = 0;

  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "state-links-"));
    kubelet = path.join(dir, "kubelet");
    stateDir = path.join(dir, "state");
    socketDir = path.join(dir, "sock");
    outside = path.join(dir, "outside");
    await fs.mkdir(path.join(kubelet, "plugins"), { recursive: true });
    const { fakeBin } = await recordingMount(dir);
    ns = await mountNamespace(`mount --bind ${fakeBin} /usr/local/sbin`);
    daemon = await startDaemon(["-socket-dir", socketDir, "-kubelet-path", kubelet, "-state-dir", stateDir, "-v=2"], { wrapper: ns.enter });
    const smb = await connectGroup("smb", { socketDir, versions: ["v1"] });
    const iscsi = await connectGroup("iscsi", { socketDir, versions: ["v1alpha2"] });
    closers.push(smb, iscsi);
    c = { smb: smb.client as unknown as Clients["smb"], iscsi: iscsi.client as unknown as Clients["iscsi"] };
    // A clean tree, made by the daemon itself: every sub-directory exists before any link is planted.
    await c.smb.newSmbGlobalMapping(req("warm"));
    await c.iscsi.setMutualChapSecret({ MutualChapSecret: "mutual-1" });
    for (const sub of ["smb", "smb/mounts", "smb/credentials", "iscsi"]) assert.ok((await fs.lstat(path.join(stateDir, sub))).isDirectory(), sub);
  });
  after(async () => {
    for (const x of closers) x.close();
    await daemon?.stop();
    assert.ok(!daemon.stderr().includes(PASSWORD), "the password appeared in a daemon log line");
    await ns?.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  function req(share: string, local = true) {
    return {
      remotePath: `\\\\fileserver\\${share}\\pv`,
      localPath: local ? path.join(kubelet, "plugins", `${share}-${++n}`) : "",
      username: "CORP\\svc",
      password: PASSWORD,
    };
  }

  /** An outside directory with files and a sub-directory of its own, mode 0755. */
  async function outsideDir(name: string): Promise<string> {
    const d = path.join(outside, name);
    await fs.mkdir(path.join(d, "mounts"), { recursive: true });
    await fs.mkdir(path.join(d, "credentials"), { recursive: true });
    for (const sub of ["", "mounts", "credentials"]) {
      await fs.chmod(path.join(d, sub), 0o755);
      for (let i = 0; i < 5; i++) await fs.writeFile(path.join(d, sub, `file-${i}`), `outside ${name} ${sub} ${i}\n`, { mode: 0o644 });
    }
    return d;
  }

  /** Mounts the daemon sees below `dir` (its namespace). */
  async function daemonMountsBelow(d: string) {
    const text = await fs.readFile(`/proc/${daemon.child.pid}/mountinfo`, "utf8");
    return parseMountInfo(text).filter((m) => m.mountPoint === d || m.mountPoint.startsWith(d + "/"));
  }

  /**
   * Replaces `<state>/<sub>` by a link to a fresh outside directory, runs `attack` (which asserts the
   * refusals), checks the outside directory entry by entry, then puts the real directory back.
   */
  async function planted(sub: string, attack: (p: string) => Promise<void>) {
    for (let round = 0; round < ROUNDS; round++) await plantedOnce(sub, round, attack);
  }
  async function plantedOnce(sub: string, round: number, attack: (p: string) => Promise<void>) {
    const p = path.join(stateDir, sub);
    const target = await outsideDir(`${sub.replaceAll("/", "-")}-${round}`);
    const clean = await fingerprint(target);
    await fs.rename(p, `${p}.real`);
    await fs.symlink(target, p);
    try {
      await attack(p);
      await assertSame(target, clean, sub);
      assert.deepEqual(await daemonMountsBelow(target), [], `${sub}: nothing mounted outside`);
    } finally {
      await fs.unlink(p);
      await fs.rename(`${p}.real`, p);
    }
  }

  const namesIt = (p: string) => new RegExp(`${p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is a symbolic link or not a directory`);

  it("smb/credentials → outside: NewSmbGlobalMapping refused naming it; no credentials file, no chmod outside", async () => {
    await planted("smb/credentials", async (p) => {
      await rejectsWithCode(c.smb.newSmbGlobalMapping(req("creds")), FAILED_PRECONDITION, namesIt(p));
      await rejectsWithCode(c.smb.newSmbGlobalMapping(req("creds", false)), FAILED_PRECONDITION, namesIt(p));
    });
    await c.smb.newSmbGlobalMapping(req("creds")); // the real directory back: works
  });

  it("smb/mounts → outside: NewSmbGlobalMapping and RemoveSmbGlobalMapping refused naming it; no mount directory outside", async () => {
    await planted("smb/mounts", async (p) => {
      await rejectsWithCode(c.smb.newSmbGlobalMapping(req("mounts")), FAILED_PRECONDITION, namesIt(p));
      await rejectsWithCode(c.smb.removeSmbGlobalMapping({ remotePath: "\\\\fileserver\\warm" }), FAILED_PRECONDITION, namesIt(p));
    });
    await c.smb.newSmbGlobalMapping(req("mounts"));
  });

  it("smb → outside: NewSmbGlobalMapping refused naming it; nothing created below the outside directory", async () => {
    await planted("smb", async (p) => {
      await rejectsWithCode(c.smb.newSmbGlobalMapping(req("smbdir")), FAILED_PRECONDITION, namesIt(p));
      await rejectsWithCode(c.smb.newSmbGlobalMapping(req("smbdir", false)), FAILED_PRECONDITION, namesIt(p));
    });
    await c.smb.newSmbGlobalMapping(req("smbdir"));
  });

  it("iscsi → outside: SetMutualChapSecret (set and clear) refused naming it; no secret written outside", async () => {
    await planted("iscsi", async (p) => {
      await rejectsWithCode(c.iscsi.setMutualChapSecret({ MutualChapSecret: "mutual-2" }), FAILED_PRECONDITION, namesIt(p));
      await rejectsWithCode(c.iscsi.setMutualChapSecret({ MutualChapSecret: "" }), FAILED_PRECONDITION, namesIt(p));
    });
    assert.equal(await fs.readFile(path.join(stateDir, "iscsi", "mutual-chap-secret"), "utf8"), "mutual-1", "the real secret untouched");
    await c.iscsi.setMutualChapSecret({ MutualChapSecret: "mutual-3" });
    assert.equal(await fs.readFile(path.join(stateDir, "iscsi", "mutual-chap-secret"), "utf8"), "mutual-3");
  });

  it("a sub-directory made group-writable or given to another user while running is refused, and left as it is", async () => {
    const creds = path.join(stateDir, "smb", "credentials");
    await fs.chmod(creds, 0o777);
    await rejectsWithCode(c.smb.newSmbGlobalMapping(req("lax")), FAILED_PRECONDITION, new RegExp(`state directory ${creds} is writable by group or others \\(mode 0777\\)`));
    assert.equal((await fs.stat(creds)).mode & 0o777, 0o777, "not chmod'ed");
    await fs.chmod(creds, 0o700);
    const iscsi = path.join(stateDir, "iscsi");
    await fs.chown(iscsi, NOBODY, NOBODY);
    await rejectsWithCode(c.iscsi.setMutualChapSecret({ MutualChapSecret: "mutual-4" }), FAILED_PRECONDITION, new RegExp(`state directory ${iscsi} is owned by uid ${NOBODY}`));
    await fs.chown(iscsi, 0, 0);
    assert.equal(await fs.readFile(path.join(iscsi, "mutual-chap-secret"), "utf8"), "mutual-3");
  });
});
