/**
 * The storage worker script (src/host/windows/powershell/scripts/worker-script.ts), byte-identical, on a real PowerShell engine
 * (pwsh 7.6.9): started by the real PowerShellPool with powershell.exe's arguments, driven by the
 * real disk and volume services (createWindowsBlockServices) over the CIM stand-ins (standins/).
 */
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { createEngine, engineSkipReason, PWSH, STANDINS, STORAGE, type WorldInstance } from "./engine.ts";
import { createWindowsBlockServices } from "../../src/compose/windows-block-services.ts";
import type { Win32 } from "../../src/win32/win32.ts";
import { Code } from "../../src/errors.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";

const skip = engineSkipReason();

function disk(n: number, props: Record<string, unknown> = {}): WorldInstance {
  return {
    id: `disk${n}`,
    ns: STORAGE,
    class: "MSFT_Disk",
    props: { Number: n, Location: `PCI Slot ${n} : Adapter 0 : Port 0 : Target 0 : LUN 0`, Path: `\\\\?\\scsi#disk&ven_msft#${n}#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}`, SerialNumber: `SN${n}`, Size: "10737418240", IsOffline: false, PartitionStyle: 2, ...props },
  };
}

describe("storage worker script on pwsh", { skip }, () => {
  const engine = createEngine();
  const pool = engine.pool();
  const { disk: diskService } = createWindowsBlockServices({ win32: {} as Win32, pool });

  before(async () => {
    engine.setWorld({ instances: [] });
    await pool.call("ping");
  });

  it("the CIM and SMB cmdlets the script calls are the stand-ins", () => {
    const names = ["Get-CimInstance", "Get-CimAssociatedInstance", "Invoke-CimMethod", "Get-SmbGlobalMapping", "New-SmbGlobalMapping", "Remove-SmbGlobalMapping"];
    const r = spawnSync(PWSH, ["-NoLogo", "-NoProfile", "-NonInteractive", "-OutputFormat", "Text", "-Command", `'${names.join("','")}' | ForEach-Object { (Get-Command $_).Module.ModuleBase }`], { env: { ...process.env, ...engine.env }, encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const bases = r.stdout.trim().split("\n").map((l) => path.resolve(path.dirname(l.trim())));
    assert.deepEqual(bases, names.map(() => STANDINS));
  });

  it("ListDiskLocations with 0, 1 and 2 disks; UInt64 extremes survive", async () => {
    engine.setWorld({ instances: [] });
    assert.equal((await diskService.listDiskLocations()).size, 0);
    engine.setWorld({ instances: [disk(0, { Size: "18446744073709551615" })] });
    const one = await diskService.getDiskStats({ diskNumber: 0 });
    assert.equal(one.totalBytes, 18446744073709551615n);
    engine.setWorld({ instances: [disk(0), disk(4294967295, { Size: "0", SerialNumber: null })] });
    const two = await diskService.listDiskLocations();
    assert.deepEqual([...two.keys()].sort((a, b) => a - b), [0, 4294967295]);
  });

  it("a CIM NotFound error from Get-CimInstance is NotFound; an access error PermissionDenied", async () => {
    engine.setWorld({ instances: [], errors: { "Get-CimInstance MSFT_Disk": { message: "Not found", native: "NotFound", status: 6, hresult: -2147217406, category: "ObjectNotFound", fqid: "HRESULT 0x80041002,Microsoft.Management.Infrastructure.CimCmdlets.GetCimInstanceCommand" } } });
    await rejectsWithCode(diskService.listDiskLocations(), Code.NotFound);
    engine.setWorld({ instances: [], errors: { "Get-CimInstance MSFT_Disk": { message: "Access denied", native: "AccessDenied", status: 2, hresult: -2147217405, category: "PermissionDenied", fqid: "HRESULT 0x80041003", terminating: false } } });
    await rejectsWithCode(diskService.listDiskLocations(), Code.PermissionDenied);
  });

  it("a request line the worker cannot read (a lone surrogate) fails its call at once, not at its timeout", async () => {
    const started = Date.now();
    const err = await pool.call("ping", { echo: "\ud800" }, { timeoutMs: 60_000 }).catch((e: unknown) => e as Error & { code?: number });
    assert.ok(err instanceof Error, "the call failed");
    assert.notEqual(err.code, Code.DeadlineExceeded, err.message);
    assert.ok(Date.now() - started < 20_000, `answered after ${Date.now() - started} ms`);
    assert.equal((await pool.call<{ echo: string }>("ping", { echo: "after" })).echo, "after");
  });

  it("a worker that fails at start reports its error as plain text (-OutputFormat Text, no CLIXML, no colour)", async () => {
    const broken = engine.pool({ script: "throw 'worker start-up failed here'", ops: ["ping"] });
    const err = await rejectsWithCode(broken.call("ping"), Code.Unavailable, /worker start-up failed here/);
    assert.doesNotMatch(err.message, /CLIXML|<Objs|\u001b/);
    await broken.close();
  });
});
