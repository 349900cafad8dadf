/**
 * secureLinuxStateDir() on real directories in a temporary tree. The foreign-owner cases chown to
 * `nobody` (uid 65534), which needs root; they are skipped otherwise.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { Code, CsiProxyError } from "../errors.ts";
import { createJsonStateFile } from "./atomic-file.ts";
import { describeUid, guardStateFile, secureLinuxStateDir, secureStateDir } from "./state-dir.ts";
import { StateDirRefusal } from "./state-dir-trust.ts";

const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;
const rootOnly = { skip: !isRoot && "needs root (chown to nobody)" };

let base: string;
let n = 0;
before(async () => {
  base = await fs.mkdtemp(path.join(os.tmpdir(), "state-dir-"));
});
after(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

function recorder() {
  const lines: { level: "info" | "warning"; msg: string }[] = [];
  return {
    lines,
    warnings: () => lines.filter((l) => l.level === "warning").map((l) => l.msg),
    log: { info: (msg: string) => lines.push({ level: "info", msg }), warning: (msg: string) => lines.push({ level: "warning", msg }) },
  };
}
const mode = async (p: string) => (await fs.stat(p)).mode & 0o7777;
const fresh = () => path.join(base, `s${++n}`);

describe("secureLinuxStateDir(): the directory", () => {
  it("creates a missing directory 0700 (missing parents 0755) whatever the umask, and trusts it", async () => {
    const dir = path.join(fresh(), "parent", "state");
    const rec = recorder();
    const old = process.umask(0);
    try {
      const trust = await secureLinuxStateDir(dir, { log: rec.log });
      assert.deepEqual(trust, { dir, smb: null, iscsi: null });
    } finally {
      process.umask(old);
    }
    assert.equal(await mode(dir), 0o700);
    assert.equal(await mode(path.dirname(dir)), 0o755);
    assert.deepEqual(rec.warnings(), []);
  });

  it("secureStateDir(dir, 'linux') is the same step", async () => {
    const dir = fresh();
    assert.deepEqual(await secureStateDir(dir, "linux"), { dir, smb: null, iscsi: null });
    assert.equal(await mode(dir), 0o700);
  });

  it("an existing 0700 or 0711 directory is used as is, silently", async () => {
    for (const m of [0o700, 0o711, 0o755]) {
      const dir = fresh();
      await fs.mkdir(dir);
      await fs.chmod(dir, m);
      const rec = recorder();
      assert.deepEqual(await secureLinuxStateDir(dir, { log: rec.log }), { dir, smb: null, iscsi: null });
      assert.equal(await mode(dir), m);
      assert.deepEqual(rec.warnings(), []);
    }
  });

  it("a directory writable by group or others is tightened to 0700 (keeping the traverse bits the SMB host sets), with a warning", async () => {
    for (const [before, after] of [
      [0o777, 0o711],
      [0o770, 0o710],
      [0o1733, 0o711],
      [0o720, 0o700],
    ]) {
      const dir = fresh();
      await fs.mkdir(dir);
      await fs.chmod(dir, before);
      const rec = recorder();
      assert.deepEqual(await secureLinuxStateDir(dir, { log: rec.log }), { dir, smb: null, iscsi: null });
      assert.equal(await mode(dir), after, `${before.toString(8)} → ${after.toString(8)}`);
      assert.equal(rec.warnings().length, 1);
      assert.match(rec.warnings()[0], new RegExp(`state directory ${dir} was writable by group or others \\(mode 0${before.toString(8)}\\): tightened to 0${after.toString(8)}`));
    }
  });

  it("a directory owned by another user is refused for SMB and iSCSI, left untouched, and named with its owner", rootOnly, async () => {
    const dir = fresh();
    await fs.mkdir(dir);
    await fs.chmod(dir, 0o777);
    await fs.chown(dir, NOBODY, NOBODY);
    await fs.writeFile(path.join(dir, "smb-mappings.json"), '{"version":1,"roots":{}}');
    await fs.chown(path.join(dir, "smb-mappings.json"), NOBODY, NOBODY);
    const rec = recorder();
    const trust = await secureLinuxStateDir(dir, { log: rec.log });
    for (const area of ["smb", "iscsi"] as const) {
      const err = trust[area];
      assert.ok(err instanceof CsiProxyError, area);
      assert.equal(err.code, Code.FailedPrecondition);
      assert.match(err.message, new RegExp(`state directory ${dir} is owned by uid 65534 \\(nobody\\), not by the user csi-proxy runs as \\(uid 0 \\(root\\)\\)`));
      assert.match(err.message, /chown 0 /);
    }
    assert.match(trust.smb!.message, /SMB calls are refused/);
    assert.match(trust.iscsi!.message, /iSCSI mutual CHAP .* is refused/);
    assert.ok(trust.smb instanceof StateDirRefusal && trust.iscsi instanceof StateDirRefusal);
    assert.equal(rec.warnings().length, 1, "the problem is logged once at start-up");
    assert.match(rec.warnings()[0], /; SMB calls are refused and iSCSI mutual CHAP \(SetMutualChapSecret, MUTUAL_CHAP logins\) is refused until this is fixed$/);
    assert.equal(await mode(dir), 0o777, "a foreign directory is not modified");
    assert.equal((await fs.stat(dir)).uid, NOBODY);
  });

  it("the uid to check against can be given (what a non-root daemon sees for a root-owned directory)", async () => {
    const dir = fresh();
    await fs.mkdir(dir);
    const trust = await secureLinuxStateDir(dir, { uid: 4242 });
    assert.match(trust.smb!.message, new RegExp(`is owned by uid ${process.getuid!()}.*not by the user csi-proxy runs as \\(uid 4242\\)`));
  });

  it("a file where the directory should be, or an uncreatable directory, is refused", async () => {
    const file = fresh();
    await fs.writeFile(file, "x");
    const a = await secureLinuxStateDir(file);
    assert.match(a.smb!.message, /is not a directory/);
    assert.match(a.iscsi!.message, /is not a directory/);
    const b = await secureLinuxStateDir(path.join(file, "below"));
    assert.equal(b.smb!.code, Code.FailedPrecondition);
    assert.match(b.smb!.message, /cannot be created/);
  });

  it("a symbolic link given as -state-dir is followed (an operator's choice): the directory it names is checked", async () => {
    const real = fresh();
    await fs.mkdir(real);
    await fs.chmod(real, 0o777);
    const link = fresh();
    await fs.symlink(real, link);
    assert.deepEqual(await secureLinuxStateDir(link), { dir: link, smb: null, iscsi: null });
    assert.equal(await mode(real), 0o711);
  });
});

describe("secureLinuxStateDir(): sub-directories and state files", () => {
  it("sub-directories writable by others are tightened; their own modes (0755 mounts, 0700 credentials) are kept otherwise", async () => {
    const dir = fresh();
    for (const [rel, m] of [
      ["smb", 0o777],
      ["smb/mounts", 0o755],
      ["smb/credentials", 0o733],
      ["iscsi", 0o770],
    ] as const) {
      await fs.mkdir(path.join(dir, rel), { recursive: true });
      await fs.chmod(path.join(dir, rel), m);
    }
    const rec = recorder();
    assert.deepEqual(await secureLinuxStateDir(dir, { log: rec.log }), { dir, smb: null, iscsi: null });
    assert.equal(await mode(path.join(dir, "smb")), 0o755);
    assert.equal(await mode(path.join(dir, "smb/mounts")), 0o755);
    assert.equal(await mode(path.join(dir, "smb/credentials")), 0o711);
    assert.equal(await mode(path.join(dir, "iscsi")), 0o750);
    assert.equal(rec.warnings().length, 3);
  });

  it("a symbolic link in place of smb/ refuses SMB only; iSCSI stays usable", async () => {
    const dir = fresh();
    await fs.mkdir(dir);
    const elsewhere = fresh();
    await fs.mkdir(elsewhere);
    await fs.symlink(elsewhere, path.join(dir, "smb"));
    const trust = await secureLinuxStateDir(dir);
    assert.match(trust.smb!.message, new RegExp(`${dir}/smb is a symbolic link`));
    assert.equal(trust.iscsi, null);
  });

  it("an iscsi/ directory owned by another user refuses iSCSI mutual CHAP only", rootOnly, async () => {
    const dir = fresh();
    await fs.mkdir(path.join(dir, "iscsi"), { recursive: true });
    await fs.chown(path.join(dir, "iscsi"), NOBODY, NOBODY);
    const trust = await secureLinuxStateDir(dir);
    assert.equal(trust.smb, null);
    assert.match(trust.iscsi!.message, /state directory .*\/iscsi is owned by uid 65534 \(nobody\)/);
  });

  it("a symbolic link as smb-mappings.json is refused (and its target neither read nor changed)", async () => {
    const dir = fresh();
    await fs.mkdir(dir);
    const planted = path.join(fresh());
    await fs.writeFile(planted, '{"version":1,"roots":{"\\\\\\\\other\\\\share":{"users":[]}}}');
    await fs.chmod(planted, 0o644);
    await fs.symlink(planted, path.join(dir, "smb-mappings.json"));
    const trust = await secureLinuxStateDir(dir);
    assert.equal(trust.smb!.code, Code.FailedPrecondition);
    assert.match(trust.smb!.message, new RegExp(`state file ${dir}/smb-mappings.json is a symbolic link; csi-proxy reads state only from regular files it owns`));
    assert.equal(trust.iscsi, null);
    assert.equal(await mode(planted), 0o644, "the link's target is not chmod'ed");
  });

  it("a state file owned by another user is refused; one readable by others is tightened to 0600", rootOnly, async () => {
    const dir = fresh();
    await fs.mkdir(path.join(dir, "iscsi"), { recursive: true });
    await fs.writeFile(path.join(dir, "iscsi", "mutual-chap-secret"), "planted-secret");
    await fs.chown(path.join(dir, "iscsi", "mutual-chap-secret"), NOBODY, NOBODY);
    await fs.writeFile(path.join(dir, "smb-mappings.json"), '{"version":1,"roots":{}}');
    await fs.chmod(path.join(dir, "smb-mappings.json"), 0o666);
    const rec = recorder();
    const trust = await secureLinuxStateDir(dir, { log: rec.log });
    assert.equal(trust.smb, null);
    assert.match(trust.iscsi!.message, /state file .*\/iscsi\/mutual-chap-secret is owned by uid 65534 \(nobody\)/);
    assert.equal(await mode(path.join(dir, "smb-mappings.json")), 0o600);
    assert.ok(rec.warnings().some((w) => /smb-mappings\.json was accessible to group or others \(mode 0666\): tightened to 0600/.test(w)));
  });

  it("a FIFO as a state file is refused without blocking", async () => {
    const dir = fresh();
    await fs.mkdir(dir);
    execFileSync("mkfifo", [path.join(dir, "smb-mappings.json")]);
    const trust = await secureLinuxStateDir(dir);
    assert.match(trust.smb!.message, /is not a regular file/);
  });
});

describe("guardStateFile() / describeUid()", () => {
  it("passes the file through when trusted; refuses every load and save with the error otherwise", async () => {
    const file = createJsonStateFile(path.join(fresh(), "x.json"), (raw) => raw as { n: number });
    assert.equal(guardStateFile(file, null), file);
    const error = new CsiProxyError(Code.FailedPrecondition, "state directory /x is owned by uid 65534 (nobody)");
    const guarded = guardStateFile(file, error);
    assert.equal(guarded.path, file.path);
    await assert.rejects(guarded.load(), (e) => e === error);
    await assert.rejects(guarded.save({ n: 1 }), (e) => e === error);
  });

  it("names uids from /etc/passwd", async () => {
    assert.equal(await describeUid(0), "uid 0 (root)");
    assert.equal(await describeUid(65534), "uid 65534 (nobody)");
    assert.equal(await describeUid(987654), "uid 987654");
  });
});
