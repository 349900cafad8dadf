/**
 * Constrained Language Mode on a real engine: the worker script, byte-identical, run by pwsh in a
 * session locked to ConstrainedLanguage before the script starts (as WDAC runs an -EncodedCommand).
 * Linux pwsh has no system lockdown policy (__PSLockdownPolicy is read on Windows only), so the
 * lock is the session's: a small launcher reads the script from a file, sets
 * $ExecutionContext.SessionState.LanguageMode and runs the text with Invoke-Expression, which runs
 * it in that mode. Every call then answers FailedPrecondition naming the mode and what an operator
 * can do, and the pool starts one worker only (no restart loop).
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { createEngine, engineSkipReason } from "./engine.ts";
import { WORKER_SCRIPT } from "../../src/host/windows/powershell/scripts/worker-script.ts";
import { SMB_ISCSI_SYSTEM_SCRIPT } from "../../src/host/windows/powershell/scripts/worker-ops-smb-iscsi-system.ts";
import { createWindowsBlockServices } from "../../src/compose/windows-block-services.ts";
import type { Win32 } from "../../src/win32/win32.ts";
import { Code } from "../../src/errors.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";

const skip = engineSkipReason();

describe("the worker script under Constrained Language Mode", { skip }, () => {
  const engine = createEngine();

  function constrainedPool(script: string, smb: boolean) {
    const file = path.join(engine.dir, smb ? "smb.ps1" : "storage.ps1");
    fs.writeFileSync(file, script);
    const launcher = `$s = [System.IO.File]::ReadAllText('${file}'); $ExecutionContext.SessionState.LanguageMode = 'ConstrainedLanguage'; Invoke-Expression $s`;
    return engine.pool({ smb, wrap: (pwsh) => ({ file: pwsh, args: ["-NoLogo", "-NoProfile", "-NonInteractive", "-OutputFormat", "Text", "-Command", launcher] }) });
  }

  it("storage calls answer FailedPrecondition naming CLM and the way out, from one worker start", async () => {
    const pool = constrainedPool(WORKER_SCRIPT, false);
    const { disk } = createWindowsBlockServices({ win32: {} as Win32, pool });
    const first = await rejectsWithCode(disk.getDiskStats({ diskNumber: 0 }), Code.FailedPrecondition, /ConstrainedLanguage mode \(Constrained Language Mode: a WDAC or AppLocker policy/);
    assert.match(first.message, /exempt the powershell\.exe that csi-proxy starts/);
    await rejectsWithCode(disk.listDiskLocations(), Code.FailedPrecondition, /ConstrainedLanguage/);
    await rejectsWithCode(pool.call("ping"), Code.FailedPrecondition, /ConstrainedLanguage/);
    assert.equal(pool.started, 1, "no restart loop");
  });

  it("the SMB/iSCSI/System script answers the same", async () => {
    const pool = constrainedPool(SMB_ISCSI_SYSTEM_SCRIPT, true);
    await rejectsWithCode(pool.call("smb.listMappings"), Code.FailedPrecondition, /ConstrainedLanguage/);
    await rejectsWithCode(pool.call("system.biosSerial"), Code.FailedPrecondition, /ConstrainedLanguage/);
    assert.equal(pool.started, 1);
  });
});
