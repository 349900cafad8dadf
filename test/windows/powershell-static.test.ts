/**
 * The PowerShell the workers run, checked statically (rules in powershell-analysis.ts and
 * docs/windows.md): every worker script, exactly as powershell.exe receives it (decoded back from
 * the -EncodedCommand argument), parses with the PowerShell grammar; no dynamic code, no string
 * building, no request data in a pattern or a CIM identifier; every cmdlet, parameter, CIM class,
 * property, method and argument is in the signature table written from Microsoft's documentation;
 * every documented return code of a method we call is mapped to a gRPC code and a message.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { powershellArgs, WORKER_OPS, WORKER_SCRIPT } from "../../src/host/windows/powershell/scripts/worker-script.ts";
import { SMB_ISCSI_SYSTEM_OPS, SMB_ISCSI_SYSTEM_SCRIPT } from "../../src/host/windows/powershell/scripts/worker-ops-smb-iscsi-system.ts";
import { CIM_CLASSES, CMDLETS } from "./cim-signatures.ts";
import { STORAGE_STATUS } from "../../src/host/windows/powershell/storage-status.ts";
import { mapWorkerError } from "../../src/host/windows/powershell/worker-error-codes.ts";
import { Code } from "../../src/errors.ts";
import { analyze, powershellParser, type Analysis } from "./powershell-analysis.ts";

/** The script as the worker receives it: the -EncodedCommand argument, decoded. */
function received(script: string): string {
  const args = powershellArgs(script);
  return Buffer.from(args[args.indexOf("-EncodedCommand") + 1], "base64").toString("utf16le");
}

const scripts = [
  { name: "storage worker (worker-script.ts)", text: received(WORKER_SCRIPT), ops: [...WORKER_OPS] },
  { name: "SMB/iSCSI/System worker (worker-ops-smb-iscsi-system.ts)", text: received(SMB_ISCSI_SYSTEM_SCRIPT), ops: [...SMB_ISCSI_SYSTEM_OPS] },
];

const analyses = new Map<string, Analysis>();
async function analysis(name: string, text: string): Promise<Analysis> {
  if (!analyses.has(name)) analyses.set(name, analyze(await powershellParser(), text));
  return analyses.get(name)!;
}

for (const s of scripts) {
  test(`${s.name}: parses, no dynamic code, no string building, no request data in patterns or CIM identifiers, every call in the signature table`, async () => {
    const a = await analysis(s.name, s.text);
    assert.deepEqual(a.violations, []);
    assert.deepEqual(a.ops, s.ops, "every op of the pool's list is a script block of $ops, in order");
    // the walk really reached the calls (a walk that saw nothing would also report nothing)
    assert.ok(a.cimCalls.length >= 5, `CIM method calls resolved: ${a.cimCalls.length}`);
    assert.ok(a.cmdlets.has("Get-CimInstance") && a.cmdlets.has("ConvertTo-Json"));
    // the request line (secrets included) is parsed with .NET, never bound to a cmdlet parameter (module logging would record it)
    assert.ok(!a.cmdlets.has("ConvertFrom-Json"), "ConvertFrom-Json would log the request line");
  });
}

test("the walk resolves every CIM method the ops call, with its arguments", async () => {
  const calls = [...(await analysis(scripts[0].name, scripts[0].text)).cimCalls, ...(await analysis(scripts[1].name, scripts[1].text)).cimCalls];
  const seen = (cls: string, method: string) => calls.filter((c) => c.cls === cls && c.method === method);
  const expected: [string, string, string[]][] = [
    ["MSFT_Disk", "Initialize", ["PartitionStyle"]],
    ["MSFT_Disk", "CreatePartition", ["UseMaximumSize", "AssignDriveLetter", "IsHidden", "IsActive", "GptType"]],
    ["MSFT_Disk", "Refresh", []],
    ["MSFT_Disk", "Online", []],
    ["MSFT_Disk", "Offline", []],
    ["MSFT_StorageSetting", "UpdateHostStorageCache", []],
    ["MSFT_Partition", "Online", []],
    ["MSFT_Partition", "GetSupportedSize", []],
    ["MSFT_Partition", "Resize", ["Size"]],
    ["MSFT_Volume", "Format", ["FileSystem", "FileSystemLabel", "Full", "Force"]],
    ["MSFT_Volume", "Flush", []],
    ["MSFT_SmbGlobalMapping", "Create", ["RemotePath", "RequirePrivacy"]],
    ["MSFT_iSCSITargetPortal", "New", ["TargetPortalAddress", "TargetPortalPortNumber"]],
    ["MSFT_iSCSITargetPortal", "Remove", ["TargetPortalPortNumber", "TargetPortalAddress"]],
    ["MSFT_iSCSITarget", "Connect", ["NodeAddress", "TargetPortalAddress", "TargetPortalPortNumber", "AuthenticationType", "ChapUsername", "ChapSecret"]],
    ["MSFT_iSCSITarget", "Disconnect", ["SessionIdentifier"]],
    ["MSFT_iSCSISession", "Unregister", []],
    ["MSFT_iSCSISession", "SetCHAPSecret", ["ChapSecret"]],
  ];
  for (const [cls, method, args] of expected) {
    const found = seen(cls, method);
    assert.ok(found.length > 0, `${cls}.${method} was not resolved by the walk`);
    assert.deepEqual([...new Set(found.flatMap((c) => c.args))].sort(), [...args].sort(), `${cls}.${method} arguments`);
  }
  // and nothing beyond them: every call resolved is one of these
  for (const c of calls) assert.ok(expected.some(([cls, m]) => cls === c.cls && m === c.method), `unexpected call ${c.cls}.${c.method}`);
});

test("every documented return code of a method we call maps to a gRPC code and a message", async () => {
  const calls = [...(await analysis(scripts[0].name, scripts[0].text)).cimCalls, ...(await analysis(scripts[1].name, scripts[1].text)).cimCalls];
  const missing: string[] = [];
  for (const { cls, method } of calls) {
    for (const [code, text] of Object.entries(CIM_CLASSES[cls].methods[method].returnCodes)) {
      const status = STORAGE_STATUS[Number(code)];
      if (!status) missing.push(`${cls}.${method} ${code} (${text})`);
      else {
        const [grpc, message] = mapWorkerError({ message: `${cls}.${method} failed: code=${code}`, kind: "method", returnValue: Number(code) });
        assert.equal(grpc, status.code);
        assert.ok(message.includes(status.text), message);
        assert.notEqual(grpc, Code.Internal, `${cls}.${method} ${code}: Internal is for csi-proxy's own bugs`);
        assert.ok(!([Code.Unavailable, Code.ResourceExhausted, Code.Aborted, Code.Canceled] as Code[]).includes(grpc), `${cls}.${method} ${code}: a final failure, not "in progress"`);
      }
    }
  }
  assert.deepEqual([...new Set(missing)], []);
});

test("the checks fail on what they are meant to catch", async () => {
  const p = await powershellParser();
  const base = received(WORKER_SCRIPT);
  const bad = (from: string, to: string) => {
    assert.ok(base.includes(from), from);
    return analyze(p, base.replace(from, to)).violations.join("\n");
  };
  assert.match(bad("'disk.refresh' = { param($a) $null = Call (Disk $a) 'Refresh'; $null }", "'disk.refresh' = { param($a) $null = Call (Disk $a 'Refresh'; $null }"), /PS1 .*(syntax error|missing)/);
  assert.match(bad("-ClassName MSFT_StorageSetting -MethodName", "-ClassName MSFT_StorageSetting -MethodNam"), /SIG .*Invoke-CimMethod has no parameter -MethodNam/);
  assert.match(bad("Call $d 'Initialize' @{ PartitionStyle", "Call $d 'Initialize' @{ PartitionStyl"), /SIG .*MSFT_Disk.Initialize has no parameter PartitionStyl/);
  assert.match(bad("Call (Disk $a) 'Refresh'", "Call (Disk $a) 'Refreshh'"), /SIG .*MSFT_Disk has no method Refreshh/);
  assert.match(bad("$_.Number -eq $n", "$_.Numbr -eq $n"), /SIG .*MSFT_Disk has no property Numbr/);
  assert.match(bad("-ClassName MSFT_Volume |", "-ClassName MSFT_Volumes |"), /SIG .*CIM class MSFT_Volumes is not in the signature table/);
  assert.match(bad("$id = [string]$a.volumeId", "$id = [string]$a.volumeId; Invoke-Expression $id"), /PS2 .*Invoke-Expression/);
  assert.match(bad("$id = [string]$a.volumeId", "$id = [string]$a.volumeId; $q = Get-CimInstance -Namespace $ns -ClassName MSFT_Volume -Filter \"UniqueId = '$id'\""), /PS3 .*expandable string/);
  assert.match(bad("$id = [string]$a.volumeId", "$id = [string]$a.volumeId; $q = Get-CimInstance -Namespace $ns -ClassName MSFT_Volume -Filter ('UniqueId = ' + $id)"), /PS3 .*-Filter must be a constant/);
  assert.match(bad("[string]::Equals([string]$_.UniqueId, $id, [StringComparison]::OrdinalIgnoreCase)", "$_.UniqueId -like $id"), /PS4 .*-like with request data/);
  assert.match(bad("-ClassName MSFT_Disk | Where-Object { $_.Number -eq $n }", "-ClassName ([string]$a.cls) | Where-Object { $_.Number -eq $n }"), /PS5 .*-ClassName must be a constant/);
  const smb = received(SMB_ISCSI_SYSTEM_SCRIPT);
  const from = "@(Get-SmbGlobalMapping | Where-Object";
  assert.ok(smb.includes(from));
  assert.match(analyze(p, smb.replace(from, "@(Get-SmbGlobalMapping -RemotePath $rp | Where-Object")).violations.join("\n"), /PS4 .*wildcard-capable Get-SmbGlobalMapping -RemotePath/);
  assert.match(bad("$op = $ops[[string]$req.op]", "$op = [scriptblock]::Create($req.op)"), /PS2 /);
  assert.ok(Object.keys(CMDLETS).length >= 10);
});
