/**
 * -state-dir under Wine with the built csi-proxy.exe (src/state/state-dir-windows.ts for real:
 * CreateDirectoryW with security attributes, SetFileSecurityW, GetNamedSecurityInfoW, the token's
 * user, LookupAccountSidW), checked from outside by a node.exe fixture reading the security back
 * with its own GetNamedSecurityInfoW + ConvertSecurityDescriptorToStringSecurityDescriptorW, and by
 * the Unix permissions Wine derives from a DACL.
 *
 * What Wine 8 can show: Wine keeps no Windows security descriptor for files. It turns a DACL that
 * is set into Unix permission bits (ACEs for Everyone → "other" bits) and reads one back from those
 * bits: always a SYSTEM ACE, an ACE for Wine's user, and an Everyone ACE when "other" has access.
 * It drops the protected flag (as for pipes) and cannot change an owner; a file another Unix user
 * owns reads back as owned by ANONYMOUS LOGON (S-1-5-7). So the tests check that the exe really
 * applied a DACL without Everyone (before: Everyone ACE and o+rwx; after: neither), that a state
 * file an untrusted account owns is refused end to end, and that the applied security is logged.
 * The exact ACEs, the protected flag and the owner Administrators: unit tests with a fake Win32
 * layer (state-dir-security.test.ts) and, for real, a Windows host (docs/windows.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { clientReport, startWine, wineSuite } from "./wine-harness.ts";

const { w, skip } = await wineSuite("state-dir");
const kubelet = () => `${w.work.win}\\kubelet`;
const NOBODY = 65534;
const canChown = process.getuid?.() === 0;
const FAILED_PRECONDITION = 9, NOT_FOUND = 5;

const security = async (paths: string[]) => (await clientReport(w, "fileSecurity", { koffiDir: w.koffiDirWin, paths })).results as Record<string, string>;
const otherBits = (linux: string) => fs.statSync(linux).mode & 0o007;

async function serve(stateDirWin: string) {
  const server = startWine(w, [w.exeWin, `-kubelet-path=${kubelet()}`, `-state-dir=${stateDirWin}`, "-v=2"]);
  await server.waitFor(/Serving 23 endpoints/, 90_000);
  return server;
}

test("an existing state directory open to Everyone gets the protected SYSTEM/Administrators DACL (read back by GetNamedSecurityInfoW)", { skip }, async () => {
  const linux = path.join(w.work.linux, "state-open");
  const win = `${w.work.win}\\state-open`;
  fs.mkdirSync(linux);
  fs.chmodSync(linux, 0o777);
  const file = path.join(linux, "smb-mappings.json"), fileWin = `${win}\\smb-mappings.json`;
  fs.writeFileSync(file, JSON.stringify({ version: 1, roots: {} })); // written earlier by csi-proxy (same owner), before the DACL existed
  fs.chmodSync(file, 0o666);
  const before = await security([win, fileWin]);
  assert.match(before[win], /\(A;OICI;[^;]*;;;WD\)/, `Everyone has access before: ${before[win]}`);
  assert.match(before[fileWin], /\(A;;[^;]*;;;WD\)/, before[fileWin]);
  const server = await serve(win);
  try {
    const afterSd = await security([win, fileWin]);
    assert.match(afterSd[win], /^O:[^D]+D:P?\(A;OICI;FA;;;SY\)/, afterSd[win]);
    assert.doesNotMatch(afterSd[win], /;;;(WD|BU|AU|AN)\)/, `no ACE for Everyone, Users or Authenticated Users: ${afterSd[win]}`);
    assert.equal(otherBits(linux), 0, "Wine turned the DACL into Unix permissions without 'other' access");
    assert.match(afterSd[fileWin], /D:P?\(A;;FA;;;SY\)/, afterSd[fileWin]);
    assert.doesNotMatch(afterSd[fileWin], /;;;(WD|BU|AU|AN)\)/, `the trusted state file got the protected file DACL: ${afterSd[fileWin]}`);
    assert.equal(otherBits(file), 0);
    const logged = new RegExp(`state directory ${win.replace(/\\/g, "\\\\")}: O:\\S+D:P?\\(A;OICI;FA;;;SY\\)`);
    assert.match(server.output(), logged, "the security read back is logged");
    const smb = await clientReport(w, "smbRefusal", { kubelet: kubelet(), root: "\\\\fileserver\\vols" });
    assert.equal(smb.remove.code, NOT_FOUND, `SMB is usable (the trusted file was loaded): ${JSON.stringify(smb.remove)}`);
  } finally {
    await server.kill();
  }
});

test("a missing state directory (and parent) is created with the protected DACL from the start", { skip }, async () => {
  const linux = path.join(w.work.linux, "new", "state");
  const win = `${w.work.win}\\new\\state`;
  assert.equal(fs.existsSync(linux), false);
  const server = await serve(win);
  try {
    assert.ok(fs.statSync(linux).isDirectory());
    const sd = (await security([win]))[win];
    assert.match(sd, /D:P?\(A;OICI;FA;;;SY\)/, sd);
    assert.doesNotMatch(sd, /;;;(WD|BU|AU|AN)\)/, sd);
    assert.equal(otherBits(linux), 0);
    assert.match(server.output(), /state directory .*\\new\\state created with DACL D:P\(A;OICI;FA;;;SY\)\(A;OICI;FA;;;BA\)/);
  } finally {
    await server.kill();
  }
});

test("a planted smb-mappings.json owned by an untrusted account is refused: SMB answers FailedPrecondition naming the file and owner, other groups serve", { skip: skip || (!canChown && "needs root (chown)") }, async () => {
  const linux = path.join(w.work.linux, "state-planted");
  const win = `${w.work.win}\\state-planted`;
  fs.mkdirSync(linux);
  const planted = path.join(linux, "smb-mappings.json");
  const content = JSON.stringify({ version: 1, roots: { "\\\\fileserver\\vols": { users: [] } } });
  fs.writeFileSync(planted, content);
  fs.chownSync(planted, NOBODY, NOBODY); // Wine shows this file as owned by ANONYMOUS LOGON (S-1-5-7)
  const fileWin = `${win}\\smb-mappings.json`;
  assert.match((await security([fileWin]))[fileWin], /^O:AN/);
  const server = await serve(win);
  try {
    const refused = /state file .*\\state-planted\\smb-mappings\.json is owned by .*S-1-5-7.*, not by SYSTEM, Administrators or csi-proxy's own account .*: csi-proxy did not write it and does not trust it/;
    assert.match(server.output(), refused, "logged at start-up");
    const r = await clientReport(w, "smbRefusal", { kubelet: kubelet(), root: "\\\\fileserver\\vols" });
    assert.equal(r.remove.code, FAILED_PRECONDITION, JSON.stringify(r.remove));
    assert.match(r.remove.message, refused);
    assert.equal(r.create.code, FAILED_PRECONDITION, JSON.stringify(r.create));
    assert.deepEqual(r.pathExists, { ok: { exists: true } }, "the filesystem group is unaffected");
    assert.equal(fs.readFileSync(planted, "utf8"), content, "the planted file is left for the operator");
  } finally {
    await server.kill();
  }
});

test("a state directory whose untrusted owner cannot be replaced is refused (Wine cannot change owners: another Unix user's directory)", { skip: skip || (!canChown && "needs root (chown)") }, async () => {
  const linux = path.join(w.work.linux, "state-foreign");
  const win = `${w.work.win}\\state-foreign`;
  fs.mkdirSync(linux);
  fs.chmodSync(linux, 0o777);
  fs.chownSync(linux, NOBODY, NOBODY);
  const server = await serve(win);
  try {
    const refused = /state directory .*\\state-foreign is owned by .*S-1-5-7.*, not by SYSTEM, Administrators or csi-proxy's own account .*even after setting the owner/;
    assert.match(server.output(), refused);
    const r = await clientReport(w, "smbRefusal", { kubelet: kubelet(), root: "\\\\fileserver\\vols" });
    assert.equal(r.remove.code, FAILED_PRECONDITION, JSON.stringify(r.remove));
    assert.match(r.remove.message, refused);
    assert.deepEqual(r.pathExists, { ok: { exists: true } });
  } finally {
    await server.kill();
  }
});
