/**
 * SMB, iSCSI and System under Wine with the built csi-proxy.exe, through the typed client over the
 * named pipes:
 * - System GetService/StartService/StopService against real services registered in Wine's Service
 *   Control Manager with Wine's `sc create` (Wine's spoolsv.exe as the service program), reached
 *   in process through koffi (OpenSCManagerW, OpenServiceW, QueryServiceStatusEx,
 *   QueryServiceConfigW, StartServiceW, ControlService, EnumDependentServicesW) with
 *   -allowed-service; the resulting state cross-checked with Wine's sc.exe;
 * - SMB and iSCSI RPCs fail cleanly with a coded error (Wine has neither the SmbGlobalMapping nor
 *   the iSCSI CIM providers, and its powershell.exe is a stub), request validation still answers,
 *   and the daemon keeps serving;
 * - the SMB password and CHAP secrets sent appear nowhere in the daemon's output at -v=10.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { clientReport, runSc, startWine, wineSuite, type Background } from "./wine-harness.ts";

let server: Background | undefined;

const SERVICE = "csi-e2e-svc";
const DEPENDENT = "csi-e2e-dep";
const SECRETS = { password: "Wine-SMB-P4ss-4b1d", chapSecret: "WineChapSecret1", mutualSecret: "WineMutualSec2" };

const { w, skip } = await wineSuite("smb-iscsi-system", {
  keepAlive: true, // the sc calls below meet one running Service Control Manager
  async before(w) {
    for (const name of [SERVICE, DEPENDENT]) await runSc(w, ["delete", name]).catch(() => {});
    const program = "C:\\windows\\system32\\spoolsv.exe";
    const a = await runSc(w, ["create", SERVICE, "binPath=", program, "DisplayName=", "CSI e2e service"]);
    if (a.code !== 0) {
      const q = await Promise.all(["csiproxy", SERVICE].map(async (n) => `sc query ${n}: ${(await runSc(w, ["query", n])).stdout}`));
      assert.fail(`sc create exited ${a.code}: ${a.stdout}\n${q.join("\n")}`);
    }
    const b = await runSc(w, ["create", DEPENDENT, "binPath=", program, "depend=", SERVICE]);
    assert.equal(b.code, 0, `sc create: ${b.stdout}`);
    server = startWine(w, [
      w.exeWin,
      `-kubelet-path=${w.work.win}\\kubelet`,
      `-state-dir=${w.work.win}\\state`,
      `-allowed-service=${SERVICE}`,
      `-allowed-service=${DEPENDENT.toUpperCase()}`, // Windows service names are case-insensitive
      "-v=10",
    ]);
    await server.waitFor(/Serving 23 endpoints/, 90_000);
  },
  async after(w) {
    await server?.kill();
    for (const name of [SERVICE, DEPENDENT]) {
      await runSc(w, ["stop", name]).catch(() => {});
      await runSc(w, ["delete", name]).catch(() => {});
    }
  },
});

async function scState(name: string): Promise<string> {
  const r = await runSc(w, ["query", name]);
  return /STATE\s*:\s*\d+\s+(\w+)/.exec(r.stdout)?.[1] ?? `unknown: ${r.stdout}`;
}

test("System under Wine: GetService/StartService/StopService on real SCM services, allow-list, unknown and invalid names", { skip }, async () => {
  assert.equal(await scState(SERVICE), "STOPPED");
  const r = await clientReport(w, "system", { service: SERVICE, dependent: DEPENDENT, notAllowed: "Spooler" });
  const ok = (v: unknown) => ({ ok: v });
  // StartType MANUAL = 3 (sc create's demand start), ServiceStatus STOPPED = 1 / RUNNING = 4
  assert.deepEqual(r.getStopped, ok({ displayName: "CSI e2e service", startType: 3, status: 1 }));
  assert.deepEqual(r.getUpperCase, r.getStopped, "service names are case-insensitive");
  assert.deepEqual(r.start, ok({}));
  assert.deepEqual(r.getRunning, ok({ displayName: "CSI e2e service", startType: 3, status: 4 }));
  assert.deepEqual(r.startAgain, ok({}), "StartService on a running service is a no-op");
  assert.deepEqual(r.startDependent, ok({}));
  assert.deepEqual(r.stop, ok({}));
  assert.deepEqual(r.getStopped2, ok({ displayName: "CSI e2e service", startType: 3, status: 1 }));
  assert.deepEqual(r.stopAgain, ok({}), "StopService on a stopped service is a no-op");
  assert.deepEqual(r.stopDependent, ok({}));
  // no display name given to sc create: the name stands in (GetServiceDisplayName's behaviour)
  assert.deepEqual(r.getDependent, ok({ displayName: DEPENDENT, startType: 3, status: 1 }));
  for (const k of ["startNotAllowed", "stopNotAllowed"]) {
    assert.equal(r[k].code, 7, `${k}: PermissionDenied: ${JSON.stringify(r[k])}`);
    assert.match(r[k].message, /not listed in -allowed-service/);
  }
  assert.ok("ok" in r.getNotAllowed, `GetService is never restricted: ${JSON.stringify(r.getNotAllowed)}`);
  assert.equal(r.getNotAllowed.ok.displayName, "Print Spooler");
  assert.deepEqual(r.getUnknown, { code: 5, message: "failed to get service csi-e2e-no-such-service. error: failed to query service csi-e2e-no-such-service: not found" });
  assert.equal(r.getInvalid.code, 3, JSON.stringify(r.getInvalid));
  // CIM_BIOSElement goes through the SMB/iSCSI/System PowerShell worker; Wine's powershell.exe is a stub
  assert.equal(r.bios.code, 14, `GetBIOSSerialNumber is Unavailable without PowerShell: ${JSON.stringify(r.bios)}`);
  assert.match(r.bios.message, /PowerShell worker/);
  assert.deepEqual(r.afterwards, r.getStopped2, "the daemon keeps serving");
  // cross-check with Wine's own sc.exe
  assert.equal(await scState(SERVICE), "STOPPED");
  const started = await clientReport(w, "startService", { name: SERVICE });
  assert.deepEqual(started.start, ok({}));
  assert.equal(await scState(SERVICE), "RUNNING", "StartService through csi-proxy is what sc.exe sees");
});

test("SMB and iSCSI under Wine: coded errors without the CIM providers, validation answers, the daemon keeps serving, no secret in its output", { skip }, async () => {
  const r = await clientReport(w, "smbIscsi", { kubelet: `${w.work.win}\\kubelet`, ...SECRETS });
  for (const k of ["newMapping", "newMappingLegacy", "addPortal", "listPortals", "connect", "mutual"]) {
    assert.equal(r[k].code, 14, `${k} is Unavailable without PowerShell: ${JSON.stringify(r[k])}`);
    assert.match(r[k].message, /PowerShell worker/);
  }
  assert.deepEqual(r.newMappingBadPath, { code: 3, message: "remote path (\\\\only-server) is invalid" });
  assert.equal(r.newMappingOutside.code, 7, JSON.stringify(r.newMappingOutside));
  // upstream: a mapping query error means "not mapped", so Remove of an unknown root is NotFound
  assert.equal(r.removeMapping.code, 5, JSON.stringify(r.removeMapping));
  assert.equal(r.connectNoPortal.code, 3, JSON.stringify(r.connectNoPortal));
  assert.ok("ok" in r.afterwards, `the daemon keeps serving: ${JSON.stringify(r.afterwards)}`);
  assert.equal(server!.child.exitCode, null, "the daemon is alive");
  // no use was left behind by the failed NewSmbGlobalMapping calls
  const stateFile = path.join(w.work.linux, "state", "smb-mappings.json");
  if (fs.existsSync(stateFile)) assert.deepEqual(JSON.parse(fs.readFileSync(stateFile, "utf8")).roots, {});
  const out = server!.output();
  assert.match(out, /NewSmbGlobalMapping|newSmbGlobalMapping|SetMutualChapSecret/i, "the calls were logged at -v=10");
  for (const [name, secret] of Object.entries(SECRETS)) assert.ok(!out.includes(secret), `${name} does not appear in the daemon's output`);
  for (const [name, secret] of Object.entries(SECRETS)) assert.ok(!JSON.stringify(r).includes(secret), `${name} does not appear in any error returned`);
});
