/**
 * No secret in PowerShell's logs: the SMB/iSCSI worker script on pwsh with module logging (every
 * module) and script block logging on (powershell.config.json, -SettingsFile), its syslog lines
 * caught by a private /dev/log (private-dev-log.sh, in its own mount namespace). A positive control
 * shows the rig catches a value bound as a cmdlet argument (the SMB remote path given to
 * New-SmbGlobalMapping -RemotePath); then NewSmbGlobalMapping, ConnectTarget with CHAP and
 * SetMutualChapSecret, driven through the real hosts, leave none of their secrets in the log, and
 * each secret still reaches the stand-in cmdlet intact.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { createEngine, engineSkipReason, STORAGE } from "./engine.ts";
import { WindowsSmbHost } from "../../src/host/windows/smb.ts";
import { WindowsIscsiHost } from "../../src/host/windows/iscsi.ts";

const here = fileURLToPath(new URL(".", import.meta.url));
const skip = engineSkipReason() ?? (process.getuid?.() !== 0 ? "needs root (a private mount namespace for /dev/log)" : undefined);

describe("no secret in PowerShell's module or script block log", { skip }, () => {
  const engine = createEngine();
  const sock = path.join(engine.dir, "log.sock");
  const logFile = path.join(engine.dir, "syslog.txt");
  const settings = path.join(engine.dir, "powershell.config.json");
  let listener: ChildProcess;
  fs.writeFileSync(
    settings,
    JSON.stringify({
      PowerShellPolicies: { ModuleLogging: { EnableModuleLogging: true, ModuleNames: ["*"] }, ScriptBlockLogging: { EnableScriptBlockLogging: true, EnableScriptBlockInvocationLogging: true } },
      LogLevel: "Verbose",
      LogChannels: "Operational,Analytic",
    }),
  );
  const pool = engine.pool({
    smb: true,
    wrap: (file, args) => ({ file: "unshare", args: ["-m", "--propagation", "private", path.join(here, "private-dev-log.sh"), sock, file, "-SettingsFile", settings, ...args] }),
  });
  const smb = new WindowsSmbHost(pool, { createSymbolicLink: async () => {} });
  const iscsi = new WindowsIscsiHost(pool);
  const log = () => fs.readFileSync(logFile, "utf8");

  before(async () => {
    fs.writeFileSync(logFile, "");
    listener = spawn("python3", [path.join(here, "syslog-listener.py"), sock, logFile], { stdio: ["ignore", "pipe", "inherit"] });
    await once(listener.stdout!, "data");
    engine.setWorld({
      instances: [
        { id: "portal", ns: STORAGE, class: "MSFT_iSCSITargetPortal", props: { TargetPortalAddress: "192.0.2.10", TargetPortalPortNumber: 3260 } },
        { id: "target", ns: STORAGE, class: "MSFT_iSCSITarget", props: { NodeAddress: "iqn.2026-11.example:t1", IsConnected: false } },
      ],
      links: [["portal", "target"]],
    });
    await pool.call("ping");
  });
  after(() => listener?.kill());

  it("positive control: a value bound as a cmdlet argument is in the log", async () => {
    await smb.createMapping("\\\\server\\MARKER-REMOTE-7f3a", "user1", "pw-not-checked-here", false);
    assert.match(log(), /MARKER-REMOTE-7f3a/, "the rig caught no parameter binding: logging is not on");
  });

  it("NewSmbGlobalMapping, ConnectTarget with CHAP, SetMutualChapSecret: no secret in the log, each secret intact at the stand-in", async () => {
    engine.resetCalls();
    const secrets = { smb: "SMB-PW-9c1e'\"$(x)`;", chap: "2026-11-29T04:00:00Z", mutual: "MUTUAL-5b7d-2026-01-01" };
    await smb.createMapping("\\\\server\\share2", "user2", secrets.smb, true);
    await iscsi.connectTarget({ targetAddress: "192.0.2.10", targetPort: 3260 }, "iqn.2026-11.example:t1", { type: "ONE_WAY_CHAP", chapUsername: "chapuser", chapSecret: secrets.chap });
    await iscsi.setMutualChapSecret(secrets.mutual);
    const text = log();
    assert.ok(text.length > 0);
    for (const [name, secret] of Object.entries(secrets)) {
      // verbatim, JSON-escaped (a request line) and by its distinctive part (any other quoting)
      for (const needle of [secret, JSON.stringify(secret).slice(1, -1), secret.slice(0, 11)]) {
        assert.ok(!text.includes(needle), `${name} secret in the log:\n${text.split("\n").filter((l) => l.includes(needle)).join("\n").slice(0, 2000)}`);
      }
    }
    // the worker's own functions bind request data too (ReadRequest, SecretCredential): none is logged
    assert.doesNotMatch(text, /ParameterBinding\((ReadRequest|FromJson|SecretCredential)\)/);
    const calls = engine.calls();
    const mapping = calls.find((c) => c.cmdlet === "New-SmbGlobalMapping") as { password: string; user: string };
    assert.equal(mapping.password, secrets.smb);
    const connect = calls.find((c) => c.method === "Connect") as { arguments: Record<string, { value: string; type: string }> };
    assert.deepEqual(connect.arguments.ChapSecret, { type: "String", value: secrets.chap });
    const mutual = calls.find((c) => c.method === "SetCHAPSecret") as { arguments: Record<string, { value: string; type: string }> };
    assert.deepEqual(mutual.arguments.ChapSecret, { type: "String", value: secrets.mutual });
  });
});
