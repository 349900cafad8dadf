/**
 * The Windows leg of the driver-fragment table (src/compat/driver-fragments.ts): csi-proxy.exe under
 * Wine answers the filesystem, path-validation, SMB and volume situations over the pipes with the
 * same texts as the Linux daemon (test/integration/driver-fragments.test.ts), in upstream's
 * validation order, with precise codes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { fragmentRow } from "../../src/compat/driver-fragments.ts";
import { clientReport, startWine, wineSuite, type Background } from "./wine-harness.ts";

let server: Background | undefined;
const { w, skip } = await wineSuite("driver-fragments", {
  async before(w) {
    server = startWine(w, [w.exeWin, `-kubelet-path=${w.work.win}\\kubelet`, `-state-dir=${w.work.win}\\state`, "-v=1"]);
    await server.waitFor(/Serving 23 endpoints/, 90_000);
  },
  after: () => server?.kill(),
});

type Answer = { ok?: unknown; code?: number; message?: string };
const carries = (a: Answer, situation: Parameters<typeof fragmentRow>[0], code = fragmentRow(situation).code) => {
  assert.equal(a.code, code, `${situation}: ${JSON.stringify(a)}`);
  assert.ok(a.message?.includes(fragmentRow(situation).fragment), `${situation}: ${JSON.stringify(a)}`);
};

test("csi-proxy.exe: the fragment rows over the pipes", { skip }, async () => {
  const k = `${w.work.win}\\kubelet`;
  const r = (await clientReport(w, "fragments", { kubelet: k })) as Record<string, Answer>;
  // path validation: upstream's exact texts and order
  assert.deepEqual(r.existsRelative, { code: 3, message: "not an absolute Windows path: var\\lib\\kubelet\\x" });
  assert.deepEqual(r.existsEmpty, { code: 3, message: "not an absolute Windows path: " });
  assert.deepEqual(r.existsRooted, { code: 3, message: "invalid character \\ at beginning of path: \\var\\lib\\kubelet\\x" });
  assert.deepEqual(r.existsMissing, { ok: { exists: false } });
  assert.equal(r.isSymlinkRelative.code, 3);
  assert.ok(!r.isSymlinkRelative.message?.includes("not an absolute Windows path"), JSON.stringify(r.isSymlinkRelative));
  // Rmdir
  assert.deepEqual(r.mkdirBase, { ok: {} });
  assert.deepEqual(r.rmdirMissing, { code: 5, message: `remove ${k}\\frag\\gone: The system cannot find the file specified.` });
  assert.deepEqual(r.rmdirParentMissing, { code: 5, message: `remove ${k}\\frag\\gone\\deeper: The system cannot find the path specified.` });
  assert.deepEqual(r.rmdirForceMissing, { ok: {} });
  // SMB
  assert.deepEqual(r.mkdirOccupied, { ok: {} });
  carries(r.smbLocalExists, "smb-local-path-exists");
  carries(r.smbNoMapping, "smb-no-mapping");
  // volume: both carry aws-ebs's "not mounted" text
  carries(r.volumeMissing, "volume-target-path-missing");
  carries(r.volumePlain, "volume-target-path-not-mounted");
  for (const a of [r.volumeMissing, r.volumePlain]) assert.match(a.message!, /(Get-Item -Path \S+).Target, output: , error: <nil>|because it does not exist/);
});
