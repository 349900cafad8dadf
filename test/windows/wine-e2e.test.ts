/**
 * End to end under Wine: the built csi-proxy.exe (Node 22 SEA + koffi beside it) serves all 23
 * pipes; the typed client, bundled and run by node.exe 22 under Wine, calls filesystem RPCs over
 * the pipes; raw-HTTP/2 clients send the raw and the percent-encoded pipe path as `:authority`;
 * -pipe-sddl sets a DACL that reads back from every pipe.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { allEndpoints } from "../../src/api/catalog.ts";
import { pipePath } from "../../src/api/endpoint.ts";
import { clientReport, startWine, wineSuite, type Background } from "./wine-harness.ts";

let server: Background | undefined;
const { w, skip } = await wineSuite("e2e", {
  async before(w) {
    server = startWine(w, [w.exeWin, `-kubelet-path=${w.work.win}\\kubelet`, "-v=2"]);
    await server.waitFor(/Serving 23 endpoints/, 90_000);
  },
  after: () => server?.kill(),
});

test("csi-proxy.exe serves all 23 group/version pipes", { skip }, async () => {
  const report = await clientReport(w, "pipes");
  const expected = allEndpoints().map(({ group, version }) => pipePath(group, version));
  assert.equal(expected.length, 23);
  assert.deepEqual(Object.keys(report.results).sort(), [...expected].sort());
  for (const pipe of expected) assert.equal(report.results[pipe], true, `${pipe} is served`);
  for (const pipe of expected) assert.match(server!.output(), new RegExp(`Serving ${pipe.replace(/\\/g, "\\\\")}\\n`));
});

test("csi-proxy.exe settles its start-up memory once serving (compilers released, full GC); the calls below run after it", { skip }, async () => {
  const line = await server!.waitFor(/After start: .*/, 30_000);
  assert.match(line, /After start: RSS [\d.]+ → [\d.]+ MB in [\d.]+ ms \(compilers resumed, full GC done\)/);
});

test("typed client under Wine: filesystem RPCs over the pipes", { skip }, async () => {
  const kubelet = `${w.work.win}\\kubelet`;
  const r = await clientReport(w, "filesystem", { kubelet, outside: "C:\\windows\\system32" });
  const klinux = path.join(w.work.linux, "kubelet");
  const ok = (v: unknown) => ({ ok: v });
  assert.deepEqual(r.addresses, [pipePath("filesystem", "v1"), pipePath("filesystem", "v2alpha1"), pipePath("filesystem", "v1beta1")]);
  assert.deepEqual(r.mkdir, ok({}));
  assert.deepEqual(r.mkdirAgain, ok({}), "Mkdir is idempotent");
  assert.deepEqual(r.existsDir, ok({ exists: true }));
  assert.deepEqual(r.existsUpperCase, ok({ exists: true }), "case-insensitive on directory boundaries");
  assert.deepEqual(r.existsMissing, ok({ exists: false }));
  assert.equal(r.existsOutside.code, 7, `outside the kubelet dir is PermissionDenied: ${JSON.stringify(r.existsOutside)}`);
  assert.match(r.existsOutside.message, /is not within the working directories/);
  assert.equal(r.existsUnc.code, 3);
  assert.match(r.existsUnc.message, /invalid character \\ at beginning of path/);
  assert.equal(r.existsRelative.code, 3);
  assert.match(r.existsRelative.message, /not an absolute Windows path/);
  assert.equal(r.existsDotDot.code, 3, JSON.stringify(r.existsDotDot));
  assert.match(r.existsDotDot.message, /path contains invalid characters/);
  assert.equal(r.existsTooLong.code, 3);
  assert.match(r.existsTooLong.message, /exceeds maximum characters: 260/);
  assert.deepEqual(r.isSymlinkPlainDir, ok({ isSymlink: false }));
  assert.equal(r.isSymlinkMissing.code, 5, "IsSymlink of a missing path is NotFound");
  assert.deepEqual(r.legacyIsMountPoint, ok({ isMountPoint: false, error: "" }));
  // CreateSymlink reaches CreateSymbolicLinkW (Node's fs.symlink). Wine 8's CreateSymbolicLinkW is a
  // stub that reports success without creating anything, so under Wine the link is then missing;
  // on Windows it exists and IsSymlink is true (docs/windows.md: "by construction").
  assert.deepEqual(r.createSymlink, ok({}));
  if ("ok" in r.isSymlinkLink) assert.deepEqual(r.isSymlinkLink, ok({ isSymlink: true }));
  else assert.equal(r.isSymlinkLink.code, 5, JSON.stringify(r.isSymlinkLink));
  assert.deepEqual(r.mkdirForContents, ok({}));
  assert.equal(r.rmdirNotEmpty.code, 9, `non-empty rmdir is FailedPrecondition: ${JSON.stringify(r.rmdirNotEmpty)}`);
  assert.deepEqual(r.rmdirContents, ok({}));
  assert.deepEqual(r.existsAfterContents, ok({ exists: true }), "RmdirContents keeps the directory");
  assert.deepEqual(r.existsChildAfterContents, ok({ exists: false }));
  assert.deepEqual(r.rmdirEmpty, ok({}));
  assert.deepEqual(r.rmdirForce, ok({}));
  assert.deepEqual(r.rmdirForceMissing, ok({}), "forced Rmdir of a missing dir succeeds");
  assert.deepEqual(r.existsAfterForce, ok({ exists: false }));
  assert.equal(r.rmdirMissing.code, 5);
  assert.equal(r.rmdirKubeletRoot.code, 7, "the kubelet dir itself cannot be removed");
  // what the RPCs did is visible on the Linux side of the prefix's C: drive
  assert.ok(fs.statSync(path.join(klinux, "pods")).isDirectory());
  assert.ok(!fs.existsSync(path.join(klinux, "pods", "a")));
  assert.ok(!fs.existsSync(path.join(klinux, "pods", "c")));
});

test("old grpc-go raw `:authority` and the percent-encoded form both succeed over the pipe", { skip }, async () => {
  fs.mkdirSync(path.join(w.work.linux, "kubelet", "auth"), { recursive: true });
  const r = await clientReport(w, "authority", { path: `${w.work.win}\\kubelet\\auth` });
  assert.equal(r.encodedForm, "%5C%5C.%5Cpipe%5Ccsi-proxy-filesystem-v1");
  assert.deepEqual(r.raw, { rstCode: 0, grpcStatus: "0", message: "OK", exists: true }, `raw authority: ${JSON.stringify(r.raw)}`);
  assert.deepEqual(r.encoded, { rstCode: 0, grpcStatus: "0", message: "OK", exists: true }, `encoded authority: ${JSON.stringify(r.encoded)}`);
});

test("disk and volume RPCs under Wine: Win32 paths answer for real, CIM paths fail cleanly without PowerShell", { skip }, async () => {
  const r = await clientReport(w, "block", { kubelet: `${w.work.win}\\kubelet` });
  // GetVolumeNameForVolumeMountPointW("C:\\") through koffi, after walking up from the kubelet dir
  assert.match(r.closest.ok?.volumeId ?? "", /^\\\\\?\\Volume\{[0-9a-f-]+\}\\$/i, JSON.stringify(r.closest));
  assert.equal(r.fromPlainDir.code, 5, `a plain directory is not a mount point: ${JSON.stringify(r.fromPlainDir)}`);
  assert.deepEqual(r.emptyId, { code: 3, message: "volume id empty" });
  // Wine's powershell.exe is a stub that exits without speaking the worker protocol
  assert.equal(r.diskStats.code, 14, `CIM calls are Unavailable without PowerShell: ${JSON.stringify(r.diskStats)}`);
  assert.match(r.diskStats.message, /PowerShell worker/);
  assert.equal(r.volumeStats.code, 14, JSON.stringify(r.volumeStats));
  assert.deepEqual(r.afterwards, r.closest, "the daemon keeps serving");
  // the largest uint32 passes validation and reaches the CIM worker, which Wine's stub cannot run
  assert.equal(r.badDiskNumber.code, 14, JSON.stringify(r.badDiskNumber));
  assert.match(r.badDiskNumber.message, /PowerShell worker/);
});
