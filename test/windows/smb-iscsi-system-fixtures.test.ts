/**
 * The Windows SMB, iSCSI and System hosts against output shaped like real Windows output:
 * ConvertTo-Json of Get-SmbGlobalMapping / MSFT_iSCSI* / CIM_BIOSElement instances (PowerShell 5.1
 * quirks: a one-element array unwrapped, null for none), the errors the worker reports for SMB
 * cmdlets (`Windows System Error <n>`), iSCSI CIM methods (`HRESULT 0xefff…`, ReturnValue), and the
 * Service Control Manager's answers (Win32 errors, QUERY_SERVICE_CONFIGW / ENUM_SERVICE_STATUSW
 * buffers) — and the group services' decisions over them, down to the gRPC code.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Code, CsiProxyError } from "../../src/errors.ts";
import { SMB_ISCSI_SYSTEM_OPS, SMB_ISCSI_SYSTEM_SCRIPT } from "../../src/host/windows/powershell/scripts/worker-ops-smb-iscsi-system.ts";
import { WindowsSmbHost, mappingStatus, smbCodeFor, type SmbWin32 } from "../../src/host/windows/smb.ts";
import { WindowsIscsiHost } from "../../src/host/windows/iscsi.ts";
import { WindowsSystemHost } from "../../src/host/windows/system.ts";
import { windowsErrorOf } from "../../src/host/windows/powershell/worker-errors.ts";
import { parseEnumServiceStatus, parseServiceConfig, type ScmServiceInfo, type ServiceControlManager } from "../../src/win32-service/scm.ts";
import { Win32Error } from "../../src/win32/win32-errors.ts";
import { SYMBOLIC_LINK_FLAG_DIRECTORY } from "../../src/win32/win32-constants.ts";
import { createRefCountedSmb } from "../helpers/ref-counted-smb.ts";
import { createIscsiService } from "../../src/groups/iscsi/iscsi-service.ts";
import { createSystemService } from "../../src/groups/system/system-service.ts";
import { ServiceStatus, StartType } from "../../src/groups/system/types.ts";
import type { JsonStateFile } from "../../src/state/atomic-file.ts";
import type { SmbState } from "../../src/groups/smb/smb-state.ts";
import type { PathPolicy } from "../../src/policy/path-policy.ts";
import { fakePoolsClosedAfter } from "./fake-pool.ts";

const pool = fakePoolsClosedAfter({ script: SMB_ISCSI_SYSTEM_SCRIPT, ops: SMB_ISCSI_SYSTEM_OPS });
const reject = (p: Promise<unknown>) => p.then(() => assert.fail("expected a rejection"), (e) => e as CsiProxyError);

// ---- fixtures shaped like the worker's output on Windows -------------------------------------

/** ConvertTo-Json of the smb.getMapping projection of Get-SmbGlobalMapping rows. */
const MAPPING_OK = { remotePath: "\\\\fs1.contoso.com\\public", localPath: "", status: 0 };
const MAPPING_DISCONNECTED = { ...MAPPING_OK, status: 2 };
const MAPPING_UNAVAILABLE = { ...MAPPING_OK, status: 6 };

/** ErrorInfo of a failed SMB cmdlet, as the worker's ErrorInfo() reports a CimException. */
const smbCmdletError = (n: number, message: string, cmdlet = "New-SmbGlobalMapping") => ({
  message,
  type: "Microsoft.Management.Infrastructure.CimException",
  category: "NotSpecified",
  fqid: `Windows System Error ${n},${cmdlet}`,
  native: "Failed",
  statusCode: 1,
  hresult: -2146233088,
});
/** ErrorInfo of a failed iSCSI CIM method (Invoke-CimMethod → CimException with the initiator's HRESULT). */
const iscsiError = (hresult: string, message: string) => ({
  message,
  type: "Microsoft.Management.Infrastructure.CimException",
  category: "NotSpecified",
  fqid: `HRESULT 0x${hresult},Microsoft.Management.Infrastructure.CimCmdlets.InvokeCimMethodCommand`,
  native: "Failed",
  statusCode: 1,
  hresult: -2146233088,
});
const methodError = (what: string, rv: number) => ({ message: `${what} failed: code=${rv}`, type: "System.Exception", category: "OperationStopped", kind: "method", returnValue: rv });
const notFoundKind = (message: string) => ({ message, type: "System.Exception", category: "OperationStopped", kind: "NotFound" });

function memoryState(): JsonStateFile<SmbState> {
  let v: SmbState | null = null;
  return { path: "mem", load: async () => v, save: async (x) => void (v = structuredClone(x)) };
}
const policy: PathPolicy = { check: async (p: string) => p } as unknown as PathPolicy;
const recordingWin32 = () => {
  const links: [string, string, number][] = [];
  const w: SmbWin32 = { createSymbolicLink: (l, t, f) => void links.push([l, t, f]) };
  return { w, links };
};

// ---- SMB ------------------------------------------------------------------------------------

test("Get-SmbGlobalMapping output: Status numbers and names, PS 5.1 array quirks, several rows", async () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6].map(mappingStatus), ["OK", "Paused", "Disconnected", "NetworkError", "Connecting", "Reconnecting", "Unavailable"]);
  assert.equal(mappingStatus("OK"), "OK", "a cmdlet that reports the enum name");
  assert.equal(mappingStatus(9), "Status9");
  assert.equal(mappingStatus(null), "Unknown");
  const p = pool({
    "smb.getMapping": [
      { result: [MAPPING_OK] },
      { result: MAPPING_DISCONNECTED },
      { result: null },
      { result: [] },
      { result: [MAPPING_UNAVAILABLE, MAPPING_OK] },
      { result: [MAPPING_UNAVAILABLE, MAPPING_DISCONNECTED] },
      { result: [42] },
    ],
  });
  const host = new WindowsSmbHost(p.pool, recordingWin32().w);
  assert.deepEqual(await host.getMapping("\\\\fs1.contoso.com\\public"), { status: "OK" });
  assert.deepEqual(await host.getMapping("\\\\fs1.contoso.com\\public"), { status: "Disconnected" }, "one row unwrapped by ConvertTo-Json");
  assert.equal(await host.getMapping("\\\\x\\y"), null, "null for no mapping");
  assert.equal(await host.getMapping("\\\\x\\y"), null);
  assert.deepEqual(await host.getMapping("\\\\fs1.contoso.com\\public"), { status: "OK" }, "a usable row wins");
  assert.deepEqual(await host.getMapping("\\\\fs1.contoso.com\\public"), { status: "Unavailable" });
  assert.equal((await reject(host.getMapping("\\\\x\\y"))).code, Code.Internal);
});

test("one Get-SmbGlobalMapping listing answers for every root: case-insensitive, a usable row wins, one row unwrapped, malformed → Internal", async () => {
  const OTHER = { remotePath: "\\\\FS2\\Data", localPath: "", status: 2 };
  const p = pool({
    "smb.listMappings": [
      { result: [MAPPING_UNAVAILABLE, OTHER, MAPPING_OK] },
      { result: OTHER },
      { result: null },
      { result: ["x"] },
    ],
  });
  const host = new WindowsSmbHost(p.pool, recordingWin32().w);
  const roots = ["\\\\fs1.contoso.com\\public", "\\\\fs2\\data", "\\\\gone\\x"];
  assert.deepEqual(await host.getMappings(roots), new Map([[roots[0], { status: "OK" }], [roots[1], { status: "Disconnected" }]]));
  assert.deepEqual(await host.getMappings(roots), new Map([[roots[1], { status: "Disconnected" }]]));
  assert.deepEqual(await host.getMappings(roots), new Map());
  assert.deepEqual(await host.getMappings([]), new Map(), "no roots: no round trip");
  assert.equal((await reject(host.getMappings(roots))).code, Code.Internal);
  assert.equal(p.recorded().requests.filter((r) => r.op === "smb.listMappings").length, 4);
});

test("SMB errors: Windows System Error numbers of the SMB cmdlets become gRPC codes", async () => {
  assert.equal(windowsErrorOf(smbCmdletError(53, "The network path was not found.")), 53);
  assert.equal(windowsErrorOf({ fqid: "HRESULT 0x80070035,New-SmbGlobalMapping" }), 53);
  assert.equal(windowsErrorOf(methodError("MSFT_SmbGlobalMapping.Create", 1326)), 1326);
  assert.equal(windowsErrorOf({ hresult: 0x8007052e | 0 }), 1326);
  assert.equal(windowsErrorOf({ error_Code: "1219" }), 1219);
  assert.equal(windowsErrorOf({ message: "x" }), undefined);
  const cases: [number, number][] = [
    [53, Code.FailedPrecondition],
    [67, Code.NotFound],
    [1326, Code.PermissionDenied],
    [1312, Code.PermissionDenied],
    [86, Code.PermissionDenied],
    [1219, Code.FailedPrecondition],
    [85, Code.AlreadyExists],
    [1231, Code.FailedPrecondition],
  ];
  for (const [n, code] of cases) assert.equal(smbCodeFor(n), code, String(n));
  assert.equal(smbCodeFor(1), undefined);

  const p = pool({
    "smb.newMapping": [
      { error: smbCmdletError(53, "The network path was not found. ") },
      { error: smbCmdletError(1326, "The user name or password is incorrect. ") },
      { error: smbCmdletError(67, "The network name cannot be found. ") },
      { error: methodError("MSFT_SmbGlobalMapping.Create", 1219) },
      { error: { message: "Generic failure ", type: "Microsoft.Management.Infrastructure.CimException", category: "NotSpecified", fqid: "HRESULT 0x80041001,New-SmbGlobalMapping", native: "Failed" } },
    ],
    "smb.removeMapping": { error: notFoundKind("no SMB global mapping for remote path \\\\srv\\gone") },
    "smb.testPath": [{ result: true }, { result: false }, { error: { message: "The user name or password is incorrect.", type: "System.IO.IOException", category: "NotSpecified", fqid: "IOException", hresult: 0x8007052e | 0 } }, { result: "yes" }],
  });
  const host = new WindowsSmbHost(p.pool, recordingWin32().w);
  const e1 = await reject(host.createMapping("\\\\srv\\share", "u", "pw-secret", true));
  assert.equal(e1.code, Code.FailedPrecondition);
  assert.equal(e1.message, "smb.newMapping: The network path was not found.");
  assert.equal((await reject(host.createMapping("\\\\srv\\share", "u", "pw-secret", true))).code, Code.PermissionDenied);
  assert.equal((await reject(host.createMapping("\\\\srv\\share", "u", "pw-secret", true))).code, Code.NotFound);
  assert.equal((await reject(host.createMapping("\\\\srv\\share", "", "", true))).code, Code.FailedPrecondition);
  assert.equal((await reject(host.createMapping("\\\\srv\\share", "u", "pw-secret", true))).code, Code.FailedPrecondition, "a WMI generic failure is the host's, not csi-proxy's bug");
  assert.equal((await reject(host.removeMapping("\\\\srv\\gone"))).code, Code.NotFound);
  assert.equal(await host.isPathValid("\\\\srv\\share"), true);
  assert.equal(await host.isPathValid("\\\\srv\\share"), false);
  assert.equal((await reject(host.isPathValid("\\\\srv\\share"))).code, Code.PermissionDenied, "a broken session after a password change throws (the service re-creates)");
  assert.equal((await reject(host.isPathValid("\\\\srv\\share"))).code, Code.Internal);
});

test("SMB host: links are upstream's directory symlinks `\\\\?\\<local>` → `\\\\?\\<remote>\\`; readDirLink reports them in that form", async () => {
  const { w, links } = recordingWin32();
  const host = new WindowsSmbHost(pool({}).pool, w);
  await host.createDirLink("C:\\var\\lib\\kubelet\\plugins\\smb\\pv1\\globalmount", "\\\\Server\\Share\\sub\\dir");
  assert.deepEqual(links, [["\\\\?\\C:\\var\\lib\\kubelet\\plugins\\smb\\pv1\\globalmount", "\\\\?\\\\\\Server\\Share\\sub\\dir\\", SYMBOLIC_LINK_FLAG_DIRECTORY]]);
  assert.equal(host.linkTargetFor("\\\\Server\\Share"), "\\\\?\\\\\\Server\\Share\\");
  // libuv's readlink leaves an NT-namespace target it cannot map (`\??\\\server\…`) as is
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "csi-smb-link-"));
  try {
    fs.symlinkSync("\\??\\\\\\Server\\Share\\sub\\dir\\", path.join(dir, "nt"));
    fs.symlinkSync("\\\\Server\\Share\\sub\\dir\\", path.join(dir, "unc"));
    fs.mkdirSync(path.join(dir, "plain"));
    assert.deepEqual(await host.readDirLink(path.join(dir, "nt")), { target: "\\\\?\\\\\\Server\\Share\\sub\\dir\\" });
    assert.deepEqual(await host.readDirLink(path.join(dir, "unc")), { target: "\\\\Server\\Share\\sub\\dir\\" });
    assert.deepEqual(await host.readDirLink(path.join(dir, "plain")), { target: null });
    assert.equal(await host.readDirLink(path.join(dir, "missing")), null);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const failing: SmbWin32 = {
    createSymbolicLink: (l) => {
      throw new Win32Error(`CreateSymbolicLink ${l}`, 1314);
    },
  };
  const err = await reject(new WindowsSmbHost(pool({}).pool, failing).createDirLink("C:\\k\\x", "\\\\s\\t"));
  assert.equal(err.code, Code.PermissionDenied, "ERROR_PRIVILEGE_NOT_HELD");
});

test("SMB service over the Windows host: map once per root, reuse a healthy mapping, re-create a disconnected one, link as upstream", async () => {
  const p = pool({
    "smb.getMapping": [{ result: [] }, { result: [MAPPING_OK] }, { result: [MAPPING_DISCONNECTED] }, { result: [MAPPING_OK] }],
    "smb.testPath": { result: true },
  });
  const { w, links } = recordingWin32();
  const host = new WindowsSmbHost(p.pool, w);
  // the links CreateSymbolicLinkW made, as readlink shows them
  host.readDirLink = async (link) => {
    const made = links.find((l) => l[0] === `\\\\?\\${link}`);
    return made ? { target: made[1] } : null;
  };
  const svc = await createRefCountedSmb({ host, policy, state: memoryState(), requirePrivacy: true, platform: "win32", sweepIntervalMs: 0 });
  await svc.newSmbGlobalMapping({ remotePath: "\\\\FS1.contoso.com\\Public\\pv1", localPath: "C:\\k\\pv1", username: "CONTOSO\\svc", password: "s3cr3t" });
  await svc.newSmbGlobalMapping({ remotePath: "//fs1.contoso.com/public/pv2", localPath: "C:\\k\\pv2", username: "CONTOSO\\svc", password: "other" });
  await svc.newSmbGlobalMapping({ remotePath: "\\\\fs1.contoso.com\\public\\pv3", localPath: "C:\\k\\pv3", username: "CONTOSO\\svc", password: "again" });
  assert.deepEqual(
    p.recorded().requests.map((r) => [r.op, r.args]),
    [
      ["smb.getMapping", { remotePath: "\\\\fs1.contoso.com\\public" }],
      ["smb.newMapping", { remotePath: "\\\\fs1.contoso.com\\public", username: "CONTOSO\\svc", password: "s3cr3t", requirePrivacy: true }],
      ["smb.getMapping", { remotePath: "\\\\fs1.contoso.com\\public" }],
      ["smb.testPath", { path: "\\\\fs1.contoso.com\\public" }],
      ["smb.getMapping", { remotePath: "\\\\fs1.contoso.com\\public" }],
      ["smb.removeMapping", { remotePath: "\\\\fs1.contoso.com\\public" }],
      ["smb.newMapping", { remotePath: "\\\\fs1.contoso.com\\public", username: "CONTOSO\\svc", password: "again", requirePrivacy: true }],
    ],
  );
  assert.deepEqual(
    links.map((l) => [l[0], l[1]]),
    [
      ["\\\\?\\C:\\k\\pv1", "\\\\?\\\\\\FS1.contoso.com\\Public\\pv1\\"],
      ["\\\\?\\C:\\k\\pv2", "\\\\?\\\\\\fs1.contoso.com\\public\\pv2\\"],
      ["\\\\?\\C:\\k\\pv3", "\\\\?\\\\\\fs1.contoso.com\\public\\pv3\\"],
    ],
  );
  assert.deepEqual(svc.references(), { "\\\\fs1.contoso.com\\public": 3 });
  svc.close();
});

test("SMB service over the Windows host: a failed New-SmbGlobalMapping is coded and leaves no use behind", async () => {
  const p = pool({ "smb.getMapping": { result: null }, "smb.newMapping": { error: smbCmdletError(1326, "The user name or password is incorrect. ") } });
  const host = new WindowsSmbHost(p.pool, recordingWin32().w);
  host.readDirLink = async () => null;
  const svc = await createRefCountedSmb({ host, policy, state: memoryState(), requirePrivacy: false, platform: "win32", sweepIntervalMs: 0 });
  const err = await reject(svc.newSmbGlobalMapping({ remotePath: "\\\\srv\\share", localPath: "C:\\k\\a", username: "u", password: "wrong-password" }));
  assert.equal(err.code, Code.PermissionDenied);
  assert.ok(!err.message.includes("wrong-password"));
  assert.deepEqual(svc.references(), {});
  assert.equal(p.recorded().requests.find((r) => r.op === "smb.newMapping")?.args.requirePrivacy, false, "-require-privacy=false reaches -RequirePrivacy");
  const gone = await reject(svc.removeSmbGlobalMapping({ remotePath: "\\\\srv\\share" }));
  assert.equal(gone.code, Code.NotFound, "no recorded use and no mapping: NotFound (upstream's text)");
  svc.close();
});

// ---- iSCSI ----------------------------------------------------------------------------------

const PORTALS = [
  { address: "10.0.0.5", port: 3260 },
  { address: "san.example.com", port: 13260 },
];
const IQN = "iqn.1991-05.com.microsoft:target1";

test("MSFT_iSCSITargetPortal / MSFT_iSCSITarget / MSFT_Disk output: portals, targets, disks of any PS shape", async () => {
  const p = pool({
    "iscsi.listPortals": [{ result: PORTALS }, { result: PORTALS[0] }, { result: null }, { result: [{ address: "x", port: "3260" }] }],
    "iscsi.discover": [{ result: [IQN, "iqn.1991-05.com.microsoft:target2"] }, { result: IQN }, { result: null }],
    "iscsi.getTarget": [{ result: null }, { result: { nodeAddress: IQN, connected: true } }, { result: { nodeAddress: IQN, connected: "True" } }],
    "iscsi.disks": [{ result: [2, 3] }, { result: 4 }, { result: null }, { result: [-1] }],
  });
  const host = new WindowsIscsiHost(p.pool);
  assert.deepEqual(await host.listTargetPortals(), [
    { targetAddress: "10.0.0.5", targetPort: 3260 },
    { targetAddress: "san.example.com", targetPort: 13260 },
  ]);
  assert.deepEqual(await host.listTargetPortals(), [{ targetAddress: "10.0.0.5", targetPort: 3260 }], "one portal unwrapped");
  assert.deepEqual(await host.listTargetPortals(), [], "none: null");
  assert.equal((await reject(host.listTargetPortals())).code, Code.Internal, "a port that is not a number");
  const portal = { targetAddress: "10.0.0.5", targetPort: 3260 };
  assert.deepEqual(await host.discoverTargets(portal), [IQN, "iqn.1991-05.com.microsoft:target2"]);
  assert.deepEqual(await host.discoverTargets(portal), [IQN]);
  assert.deepEqual(await host.discoverTargets(portal), []);
  assert.equal(await host.getTarget(portal, IQN), null);
  assert.deepEqual(await host.getTarget(portal, IQN), { connected: true });
  assert.equal((await reject(host.getTarget(portal, IQN))).code, Code.Internal);
  assert.deepEqual(await host.getTargetDisks(portal, IQN), ["2", "3"], "disk numbers as decimal strings");
  assert.deepEqual(await host.getTargetDisks(portal, IQN), ["4"]);
  assert.deepEqual(await host.getTargetDisks(portal, IQN), []);
  assert.equal((await reject(host.getTargetDisks(portal, IQN))).code, Code.Internal);
});

test("iSCSI errors: initiator HRESULTs and method return values become gRPC codes, CHAP secrets never in messages", async () => {
  const p = pool({
    "iscsi.addPortal": [{ error: iscsiError("efff0003", "Connection Failed. ") }, { error: methodError("MSFT_iSCSITargetPortal.New", 0xefff0003) }],
    "iscsi.connect": [{ error: iscsiError("efff0009", "Authentication Failure. ") }, { error: iscsiError("efff0002", "Login Failed. ") }],
    "iscsi.removePortal": { error: notFoundKind("target portal 10.0.0.9:3260 not found") },
    "iscsi.disconnect": { error: notFoundKind(`target ${IQN} behind portal 10.0.0.5:3260 not found`) },
    "iscsi.setMutualChapSecret": { error: { message: "Invalid parameter ", type: "Microsoft.Management.Infrastructure.CimException", category: "InvalidArgument", fqid: "HRESULT 0x80041008,Microsoft.Management.Infrastructure.CimCmdlets.InvokeCimMethodCommand", native: "InvalidParameter" } },
  });
  const host = new WindowsIscsiHost(p.pool);
  const portal = { targetAddress: "10.0.0.5", targetPort: 3260 };
  const e1 = await reject(host.addTargetPortal(portal));
  assert.equal(e1.code, Code.FailedPrecondition);
  assert.equal(e1.message, "iscsi.addPortal: Connection Failed.");
  assert.equal((await reject(host.addTargetPortal(portal))).code, Code.FailedPrecondition, "the same HRESULT as a ReturnValue");
  const auth = { type: "ONE_WAY_CHAP" as const, chapUsername: "initiator", chapSecret: "TheChapSecret1" };
  assert.equal((await reject(host.connectTarget(portal, IQN, auth))).code, Code.PermissionDenied);
  assert.equal((await reject(host.connectTarget(portal, IQN, auth))).code, Code.FailedPrecondition);
  assert.equal((await reject(host.removeTargetPortal({ targetAddress: "10.0.0.9", targetPort: 3260 }))).code, Code.NotFound);
  assert.equal((await reject(host.disconnectTarget(portal, IQN))).code, Code.NotFound);
  assert.equal((await reject(host.setMutualChapSecret("short"))).code, Code.InvalidArgument);
  assert.deepEqual(
    p.recorded().requests.filter((r) => r.op === "iscsi.connect").map((r) => r.args),
    [0, 1].map(() => ({ address: "10.0.0.5", port: 3260, iqn: IQN, authType: "ONEWAYCHAP", chapUsername: "initiator", chapSecret: "TheChapSecret1" })),
  );
});

test("iSCSI service over the Windows host: upstream's idempotency (connect when connected, disconnect when not, disks when not connected)", async () => {
  const p = pool({
    "iscsi.listPortals": [{ result: [] }, { result: PORTALS }],
    "iscsi.getTarget": [
      { result: { nodeAddress: IQN, connected: false } },
      { result: { nodeAddress: IQN, connected: true } },
      { result: { nodeAddress: IQN, connected: true } },
      { result: { nodeAddress: IQN, connected: false } },
      { result: { nodeAddress: IQN, connected: false } },
      { result: null },
    ],
  });
  const svc = createIscsiService({ host: new WindowsIscsiHost(p.pool) });
  const targetPortal = { targetAddress: "10.0.0.5", targetPort: 0 };
  await svc.addTargetPortal({ targetPortal });
  await svc.addTargetPortal({ targetPortal }); // registered now: no second New
  await svc.connectTarget({ targetPortal, iqn: IQN, authType: "NONE", chapUsername: "ignored", chapSecret: "ignored-secret" });
  await svc.connectTarget({ targetPortal, iqn: IQN, authType: "MUTUAL_CHAP", chapUsername: "", chapSecret: "TheChapSecret1" });
  await svc.disconnectTarget({ targetPortal, iqn: IQN });
  await svc.disconnectTarget({ targetPortal, iqn: IQN });
  assert.deepEqual(await svc.getTargetDisks({ targetPortal, iqn: IQN }), { diskIds: [] });
  assert.equal((await reject(svc.connectTarget({ targetPortal, iqn: IQN, authType: "NONE", chapUsername: "", chapSecret: "" }))).code, Code.NotFound);
  assert.equal((await reject(svc.addTargetPortal({}))).code, Code.InvalidArgument, "a missing portal is InvalidArgument (upstream crashes)");
  const reqs = p.recorded().requests;
  assert.deepEqual(reqs.filter((r) => r.op === "iscsi.addPortal").map((r) => r.args), [{ address: "10.0.0.5", port: 3260 }], "port 0 means 3260; added once");
  assert.deepEqual(reqs.filter((r) => r.op === "iscsi.connect").map((r) => r.args), [{ address: "10.0.0.5", port: 3260, iqn: IQN, authType: "NONE", chapUsername: "", chapSecret: "" }], "NONE drops the CHAP fields; connected → no second Connect");
  assert.deepEqual(reqs.filter((r) => r.op === "iscsi.disconnect").length, 1);
  assert.ok(!reqs.some((r) => r.op === "iscsi.disks"), "not connected: no disk query");
});

// ---- System ---------------------------------------------------------------------------------

test("CIM_BIOSElement output → GetBIOSSerialNumber: trimmed value, empty → NotFound, no BIOS row → FailedPrecondition", async () => {
  const p = pool({
    "system.biosSerial": [
      { result: { serialNumber: "VMware-42 1a 2b 3c 4d 5e 6f 70-81 92 a3 b4 c5 d6 e7 f8  " } },
      { result: { serialNumber: "" } },
      { result: { serialNumber: null } },
      { result: null },
      { result: { serialNumber: 7 } },
      { error: { message: "Invalid class ", type: "Microsoft.Management.Infrastructure.CimException", category: "ObjectNotFound", native: "InvalidClass" } },
    ],
  });
  const svc = createSystemService({ host: new WindowsSystemHost(p.pool, {} as ServiceControlManager), platform: "win32", allowedServices: [] });
  assert.deepEqual(await svc.getBIOSSerialNumber(), { serialNumber: "VMware-42 1a 2b 3c 4d 5e 6f 70-81 92 a3 b4 c5 d6 e7 f8" });
  assert.equal((await reject(svc.getBIOSSerialNumber())).code, Code.NotFound);
  assert.equal((await reject(svc.getBIOSSerialNumber())).code, Code.NotFound);
  assert.equal((await reject(svc.getBIOSSerialNumber())).code, Code.FailedPrecondition);
  assert.equal((await reject(svc.getBIOSSerialNumber())).code, Code.Internal);
  assert.equal((await reject(svc.getBIOSSerialNumber())).code, Code.NotFound);
});

/** A Service Control Manager stand-in with Windows' error behaviour. */
function fakeScm(services: Record<string, Partial<ScmServiceInfo> & { startError?: number; stopError?: number; dependents?: string[] }>) {
  const calls: string[] = [];
  const key = (n: string) => Object.keys(services).find((k) => k.toLowerCase() === n.toLowerCase());
  const scm: ServiceControlManager = {
    query(name) {
      const k = key(name);
      if (!k) return null;
      const s = services[k];
      return { name: k, displayName: s.displayName ?? "", startType: s.startType ?? 3, state: s.state ?? 1, group: s.group ?? "", dependencies: s.dependencies ?? [] };
    },
    start(name) {
      calls.push(`start ${name}`);
      const k = key(name);
      if (!k) throw new Win32Error(`OpenService ${name}`, 1060);
      if (services[k].startError) throw new Win32Error(`StartService ${name}`, services[k].startError!);
      services[k].state = 4;
    },
    stop(name) {
      calls.push(`stop ${name}`);
      const k = key(name)!;
      if (services[k].stopError) throw new Win32Error(`ControlService(STOP) ${name}`, services[k].stopError!);
      services[k].state = 1;
    },
    dependents: (name) => services[key(name)!]?.dependents ?? [],
  };
  return { scm, calls };
}

test("SCM answers → GetService/StartService/StopService: numbering, already running/stopped, Win32 errors", async () => {
  const { scm, calls } = fakeScm({
    MSiSCSI: { displayName: "Microsoft iSCSI Initiator Service", startType: 3, state: 1 },
    Running: { displayName: "Runs", startType: 2, state: 4, startError: 1056 },
    Disabled: { startType: 4, state: 1, startError: 1058 },
    NoBinary: { state: 1, startError: 2 },
    Paused: { state: 7, startType: 1 },
    Odd: { state: 9, startType: 7 },
    Pending: { state: 2, stopError: 1061 },
    Stopped: { state: 3, stopError: 1062 },
    Stubborn: { state: 4, stopError: 1052 },
  });
  const host = new WindowsSystemHost(pool({}).pool, scm);
  assert.deepEqual(await host.getService("msiscsi"), { displayName: "Microsoft iSCSI Initiator Service", startType: StartType.Manual, status: ServiceStatus.Stopped });
  assert.deepEqual(await host.getService("Paused"), { displayName: "Paused", startType: StartType.System, status: ServiceStatus.Paused }, "no display name → the service name");
  assert.deepEqual(await host.getService("Odd"), { displayName: "Odd", startType: StartType.Boot, status: ServiceStatus.Unknown });
  assert.equal(await host.getService("nope"), null);
  await host.startService("Running"); // ERROR_SERVICE_ALREADY_RUNNING is success
  assert.equal((await reject(host.startService("Disabled"))).code, Code.FailedPrecondition);
  const noBinary = await reject(host.startService("NoBinary"));
  assert.equal(noBinary.code, Code.FailedPrecondition, "a missing executable is not 'no such service'");
  assert.match(noBinary.message, /StartService NoBinary: The system cannot find the file specified\. \(win32 error 2\)/);
  await host.stopService("Pending"); // cannot accept controls now: waited for by the service
  await host.stopService("Stopped"); // not active
  assert.equal((await reject(host.stopService("Stubborn"))).code, Code.FailedPrecondition);
  assert.deepEqual(calls, ["start Running", "start Disabled", "start NoBinary", "stop Pending", "stop Stopped", "stop Stubborn"]);

  const svc = createSystemService({ host, platform: "win32", allowedServices: ["MSiSCSI"], pollIntervalMs: 1, waitTimeoutMs: 50 });
  await svc.startService({ name: "msiscsi" });
  assert.equal((await svc.getService({ name: "MSiSCSI" })).status, ServiceStatus.Running);
  await svc.stopService({ name: "MSISCSI", force: false });
  assert.equal((await reject(svc.startService({ name: "Running" }))).code, Code.PermissionDenied, "not on -allowed-service");
  assert.equal((await reject(svc.getService({ name: "nope" }))).message, "failed to get service nope. error: failed to query service nope: not found");
});

test("dependents: EnumDependentServicesW's transitive list is narrowed to direct dependents (by name or +group); force stops them deepest first", async () => {
  // C depends on B, B depends on A; D depends on A's load-order group; E is unrelated but listed
  const { scm, calls } = fakeScm({
    A: { state: 4, group: "NetGroup", dependents: ["C", "B", "D", "E"] },
    B: { state: 4, dependencies: ["a"], dependents: ["C"] },
    C: { state: 4, dependencies: ["B"] },
    D: { state: 4, dependencies: ["+netgroup"] },
    E: { state: 4, dependencies: ["Other"] },
  });
  const host = new WindowsSystemHost(pool({}).pool, scm);
  assert.deepEqual(await host.getDependentServices("A"), ["B", "D"]);
  assert.deepEqual(await host.getDependentServices("B"), ["C"]);
  const svc = createSystemService({ host, platform: "win32", allowedServices: ["*"], pollIntervalMs: 1, waitTimeoutMs: 50 });
  const refused = await reject(svc.stopService({ name: "A", force: false }));
  assert.equal(refused.code, Code.FailedPrecondition);
  assert.match(refused.message, /running dependent services \(B, D, C\)/);
  await svc.stopService({ name: "A", force: true });
  assert.deepEqual(calls, ["stop C", "stop D", "stop B", "stop A"]);
});

// ---- SCM buffers (x64 layouts) --------------------------------------------------------------

/** Lays out strings after `head` bytes and stores their addresses (base + offset) at the given pointer slots. */
function withStrings(head: number, base: bigint, slots: [number, string | null][]): Buffer {
  const parts: Buffer[] = [];
  let off = head;
  const buf = Buffer.alloc(head);
  for (const [slot, text] of slots) {
    if (text === null) continue;
    const b = Buffer.from(text, "utf16le");
    buf.writeBigUInt64LE(base + BigInt(off), slot);
    parts.push(b);
    off += b.length;
  }
  return Buffer.concat([buf, ...parts]);
}

test("QUERY_SERVICE_CONFIGW and ENUM_SERVICE_STATUSW buffers: strings read through pointers into the same buffer", () => {
  const base = 0x7ff6_1234_0000n;
  const cfg = withStrings(64, base, [
    [16, "C:\\Windows\\system32\\svchost.exe -k netsvcs\0"],
    [24, "NetworkProvider\0"],
    [40, "RpcSs\0+TDI\0\0"],
    [48, "LocalSystem\0"],
    [56, "Microsoft iSCSI Initiator Service\0"],
  ]);
  cfg.writeUInt32LE(0x20, 0);
  cfg.writeUInt32LE(2, 4);
  assert.deepEqual(parseServiceConfig(cfg, base), { startType: 2, group: "NetworkProvider", dependencies: ["RpcSs", "+TDI"], displayName: "Microsoft iSCSI Initiator Service" });
  const empty = withStrings(64, base, [[24, "\0"], [40, "\0\0"], [56, "x\0"]]);
  assert.deepEqual(parseServiceConfig(empty, base), { startType: 0, group: "", dependencies: [], displayName: "x" });
  const nulls = Buffer.alloc(64);
  assert.deepEqual(parseServiceConfig(nulls, base), { startType: 0, group: "", dependencies: [], displayName: "" }, "NULL pointers");
  const outside = Buffer.alloc(64);
  outside.writeBigUInt64LE(base - 8n, 56);
  assert.throws(() => parseServiceConfig(outside, base), /outside its buffer/);
  const deps = withStrings(96, base, [
    [0, "C\0"],
    [8, "C service\0"],
    [48, "B\0"],
    [56, "B service\0"],
  ]);
  assert.deepEqual(parseEnumServiceStatus(deps, base, 2), ["C", "B"]);
  assert.deepEqual(parseEnumServiceStatus(Buffer.alloc(0), base, 0), []);
});
