/**
 * The decisions of secureWindowsStateDir() (src/state/state-dir-windows.ts) over a fake Win32
 * layer: a tiny in-memory file system with owners and DACLs, recording every call. Runs anywhere;
 * the real calls (CreateDirectoryW, SetFileSecurityW, GetNamedSecurityInfoW…) run in the Wine e2e
 * (wine-state-dir.test.ts).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, CsiProxyError } from "../../src/errors.ts";
import { Win32Error, WinError } from "../../src/win32/win32-errors.ts";
import {
  ADMINISTRATORS_SID,
  STATE_DIR_DACL,
  STATE_DIR_SDDL,
  STATE_FILE_DACL,
  SYSTEM_SID,
  secureWindowsStateDir,
  type StateDirSecurityApi,
} from "../../src/state/state-dir-windows.ts";

const DIR = "C:\\ProgramData\\csi-proxy";
const FILE = `${DIR}\\smb-mappings.json`;
const USER = "S-1-5-21-1111-2222-3333-1001"; // an ordinary user
const SELF = "S-1-5-21-0-0-0-1000"; // what Wine's token user looks like
const DIRECTORY = 0x10, REPARSE = 0x400, NORMAL = 0x80;

interface Entry {
  attrs: number;
  owner: string;
  dacl: string;
}

/** In-memory files with owners and DACLs; `fail` makes a named operation throw a Win32Error. */
function fakeApi(options: { entries?: Record<string, Entry>; self?: string; fail?: Partial<Record<string, number>>; ownerStays?: boolean } = {}) {
  const entries = new Map(Object.entries(options.entries ?? {}));
  const calls: string[] = [];
  const parents: string[] = [];
  const fail = (op: string, what: string) => {
    const errno = options.fail?.[op];
    if (errno !== undefined) throw new Win32Error(`${op} ${what}`, errno);
  };
  const api: StateDirSecurityApi = {
    getFileAttributes(p) {
      calls.push(`attrs ${p}`);
      return entries.get(p)?.attrs ?? null;
    },
    createDirectoryWithSecurity(p, sddl) {
      calls.push(`create ${p} ${sddl}`);
      fail("create", p);
      if (entries.has(p)) return false;
      entries.set(p, { attrs: DIRECTORY, owner: options.self ?? SYSTEM_SID, dacl: sddl });
      return true;
    },
    setFileSecurity(p, sddl, info) {
      calls.push(`set ${p} ${sddl} info=${info}`);
      if (info & 1) fail("setOwner", p);
      fail("setDacl", p);
      const e = entries.get(p)!;
      if (info & 1 && !options.ownerStays) e.owner = ADMINISTRATORS_SID;
      if (info & 4) e.dacl = sddl.slice(sddl.indexOf("D:"));
    },
    fileSecurity(p) {
      calls.push(`get ${p}`);
      fail("get", p);
      const e = entries.get(p)!;
      return { ownerSid: e.owner, sddl: `O:${e.owner === ADMINISTRATORS_SID ? "BA" : e.owner === SYSTEM_SID ? "SY" : e.owner}${e.dacl}` };
    },
    tokenUserSid() {
      return options.self ?? SYSTEM_SID;
    },
    accountName(sid) {
      return { [USER]: "HOST\\alice", [SYSTEM_SID]: "NT AUTHORITY\\SYSTEM", [ADMINISTRATORS_SID]: "BUILTIN\\Administrators" }[sid] ?? null;
    },
  };
  return { api, entries, calls, parents, mkdirParents: async (d: string) => void parents.push(d) };
}

function recorder() {
  const lines: string[] = [];
  const warnings: string[] = [];
  return { lines, warnings, log: { info: (m: string) => lines.push(m), warning: (m: string) => warnings.push(m) } };
}

const refusedWith = (err: CsiProxyError | null, re: RegExp) => {
  assert.ok(err instanceof CsiProxyError, "refused");
  assert.equal(err.code, Code.FailedPrecondition);
  assert.match(err.message, re);
  assert.match(err.message, /SMB calls are refused until this is fixed/);
};

describe("secureWindowsStateDir()", () => {
  it("creates a missing directory with the protected DACL from the start, then owner Administrators + protected DACL, read back and logged", async () => {
    const f = fakeApi();
    const rec = recorder();
    const trust = await secureWindowsStateDir(DIR, f.api, { log: rec.log, mkdirParents: f.mkdirParents });
    assert.deepEqual(trust, { dir: DIR, smb: null, iscsi: null });
    assert.deepEqual(f.parents, ["C:\\ProgramData"]);
    assert.ok(f.calls.includes(`create ${DIR} ${STATE_DIR_DACL}`));
    assert.ok(f.calls.includes(`set ${DIR} ${STATE_DIR_SDDL} info=5`), "owner (1) and DACL (4) in one call");
    assert.equal(STATE_DIR_SDDL, "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)");
    assert.deepEqual(f.entries.get(DIR), { attrs: DIRECTORY, owner: ADMINISTRATORS_SID, dacl: STATE_DIR_DACL });
    assert.ok(rec.lines.includes(`state directory ${DIR}: O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)`), rec.lines.join("\n"));
    assert.deepEqual(rec.warnings, []);
  });

  it("takes ownership of a directory an ordinary user created first (ProgramData lets users create folders) and replaces its DACL", async () => {
    const f = fakeApi({ entries: { [DIR]: { attrs: DIRECTORY, owner: USER, dacl: "D:AI(A;OICIID;FA;;;CO)(A;OICIID;0x1200a9;;;BU)" } } });
    const trust = await secureWindowsStateDir(DIR, f.api, { mkdirParents: f.mkdirParents });
    assert.deepEqual(trust, { dir: DIR, smb: null, iscsi: null });
    assert.ok(!f.calls.some((c) => c.startsWith("create")), "an existing directory is not re-created");
    assert.deepEqual(f.entries.get(DIR), { attrs: DIRECTORY, owner: ADMINISTRATORS_SID, dacl: STATE_DIR_DACL });
  });

  it("refuses a directory whose untrusted owner cannot be replaced (it could rewrite the DACL), naming the owner", async () => {
    const f = fakeApi({ entries: { [DIR]: { attrs: DIRECTORY, owner: USER, dacl: "D:" } }, fail: { setOwner: WinError.INVALID_OWNER } });
    const rec = recorder();
    const trust = await secureWindowsStateDir(DIR, f.api, { log: rec.log });
    refusedWith(trust.smb, /state directory C:\\ProgramData\\csi-proxy is owned by HOST\\alice \(S-1-5-21-1111-2222-3333-1001\) and Administrators cannot be made its owner/);
    assert.match(trust.smb!.message, /icacls "C:\\ProgramData\\csi-proxy" \/setowner Administrators/);
    assert.equal(trust.iscsi, null, "iSCSI does not use the state directory on Windows");
    assert.deepEqual(rec.warnings, [trust.smb!.message]);
    assert.equal(f.entries.get(DIR)!.dacl, STATE_DIR_DACL, "the DACL is still made protected");
  });

  it("keeps a trusted owner with a warning when Administrators cannot be made the owner", async () => {
    const f = fakeApi({ entries: { [DIR]: { attrs: DIRECTORY, owner: SYSTEM_SID, dacl: "D:" } }, fail: { setOwner: WinError.INVALID_OWNER } });
    const rec = recorder();
    const trust = await secureWindowsStateDir(DIR, f.api, { log: rec.log });
    assert.equal(trust.smb, null);
    assert.equal(rec.warnings.length, 1);
    assert.match(rec.warnings[0], /Administrators cannot be made its owner .*win32 error 1307.*stays owned by NT AUTHORITY\\SYSTEM \(S-1-5-18\)/);
    assert.equal(f.entries.get(DIR)!.dacl, STATE_DIR_DACL);
  });

  it("refuses when even the DACL cannot be set", async () => {
    const f = fakeApi({ entries: { [DIR]: { attrs: DIRECTORY, owner: SYSTEM_SID, dacl: "D:" } }, fail: { setDacl: WinError.ACCESS_DENIED } });
    const trust = await secureWindowsStateDir(DIR, f.api);
    refusedWith(trust.smb, /its DACL cannot be set to D:P\(A;OICI;FA;;;SY\)\(A;OICI;FA;;;BA\): .*Access is denied/);
  });

  it("refuses when the owner read back is still untrusted (what Wine shows for a directory another Unix user owns)", async () => {
    const f = fakeApi({ entries: { [DIR]: { attrs: DIRECTORY, owner: "S-1-5-7", dacl: "D:" } }, ownerStays: true, self: SELF });
    const trust = await secureWindowsStateDir(DIR, f.api);
    refusedWith(trust.smb, /state directory C:\\ProgramData\\csi-proxy is owned by S-1-5-7, not by SYSTEM, Administrators or csi-proxy's own account S-1-5-21-0-0-0-1000, even after setting the owner/);
  });

  it("refuses a junction or symbolic link in place of the directory, and a file, without touching their security", async () => {
    for (const [attrs, re] of [
      [DIRECTORY | REPARSE, /is a junction or symbolic link/],
      [NORMAL, /is not a directory/],
    ] as const) {
      const f = fakeApi({ entries: { [DIR]: { attrs, owner: USER, dacl: "D:" } } });
      const trust = await secureWindowsStateDir(DIR, f.api);
      refusedWith(trust.smb, re);
      assert.ok(!f.calls.some((c) => c.startsWith("set")), f.calls.join("\n"));
    }
  });

  it("refuses when the directory cannot be created", async () => {
    const f = fakeApi({ fail: { create: WinError.ACCESS_DENIED } });
    const trust = await secureWindowsStateDir(DIR, f.api, { mkdirParents: f.mkdirParents });
    refusedWith(trust.smb, /state directory C:\\ProgramData\\csi-proxy cannot be examined or created: .*Access is denied/);
  });

  describe("smb-mappings.json", () => {
    const dir = { attrs: DIRECTORY, owner: ADMINISTRATORS_SID, dacl: STATE_DIR_DACL };

    it("a file planted by an ordinary user is refused, naming the file and its owner, and left as is", async () => {
      const f = fakeApi({ entries: { [DIR]: dir, [FILE]: { attrs: NORMAL, owner: USER, dacl: "D:(A;;FA;;;WD)" } } });
      const trust = await secureWindowsStateDir(DIR, f.api);
      refusedWith(trust.smb, /state file C:\\ProgramData\\csi-proxy\\smb-mappings\.json is owned by HOST\\alice \(S-1-5-21-1111-2222-3333-1001\), not by SYSTEM or Administrators: csi-proxy did not write it/);
      assert.equal(f.entries.get(FILE)!.dacl, "D:(A;;FA;;;WD)");
    });

    it("a file owned by SYSTEM, Administrators or csi-proxy's own account is trusted and gets the protected file DACL", async () => {
      for (const owner of [SYSTEM_SID, ADMINISTRATORS_SID, SELF]) {
        const f = fakeApi({ entries: { [DIR]: dir, [FILE]: { attrs: NORMAL, owner, dacl: "D:AI(A;ID;FA;;;SY)(A;ID;0x1200a9;;;BU)" } }, self: SELF });
        const trust = await secureWindowsStateDir(DIR, f.api);
        assert.equal(trust.smb, null, owner);
        assert.ok(f.calls.includes(`set ${FILE} ${STATE_FILE_DACL} info=4`));
        assert.equal(f.entries.get(FILE)!.dacl, STATE_FILE_DACL);
      }
    });

    it("a symbolic link or a directory named smb-mappings.json is refused", async () => {
      for (const [attrs, re] of [
        [NORMAL | REPARSE, /smb-mappings\.json is a symbolic link or junction/],
        [DIRECTORY, /smb-mappings\.json is a directory/],
      ] as const) {
        const f = fakeApi({ entries: { [DIR]: dir, [FILE]: { attrs, owner: SYSTEM_SID, dacl: "D:" } } });
        refusedWith((await secureWindowsStateDir(DIR, f.api)).smb, re);
      }
    });

    it("an unreadable owner refuses the file (fail closed)", async () => {
      const f = fakeApi({ entries: { [DIR]: dir, [FILE]: { attrs: NORMAL, owner: SYSTEM_SID, dacl: "D:" } } });
      const api = { ...f.api, fileSecurity: (p: string) => (p === FILE ? (() => { throw new Win32Error(`GetNamedSecurityInfo ${p}`, WinError.ACCESS_DENIED); })() : f.api.fileSecurity(p)) };
      refusedWith((await secureWindowsStateDir(DIR, api)).smb, /smb-mappings\.json cannot be examined: GetNamedSecurityInfo .*Access is denied/);
    });

    it("an absent file is fine", async () => {
      const f = fakeApi({ entries: { [DIR]: dir } });
      assert.deepEqual(await secureWindowsStateDir(DIR, f.api), { dir: DIR, smb: null, iscsi: null });
    });
  });
});
