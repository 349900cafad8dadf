/**
 * The real PowerShell engine for the suites of this folder: pwsh 7.6.9 installed as a .NET tool by
 * scripts/install-pwsh.sh into .cache/pwsh, the stand-in modules (standins/) on PSModulePath, and a
 * world file they read. Pools are the real PowerShellPool with the real worker arguments
 * (powershellArgs()), only the program being pwsh instead of powershell.exe.
 */
import { after } from "node:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { PowerShellPool, type PowerShellPoolOptions } from "../../src/host/windows/powershell/powershell-pool.ts";
import { powershellArgs } from "../../src/host/windows/powershell/scripts/worker-script.ts";
import { SMB_ISCSI_SYSTEM_OPS, SMB_ISCSI_SYSTEM_SCRIPT } from "../../src/host/windows/powershell/scripts/worker-ops-smb-iscsi-system.ts";
import { CIM_ASSOCIATIONS, CIM_CLASSES } from "../windows/cim-signatures.ts";
import { POWERSHELL_QUIET_ENV } from "../../src/host/windows/powershell/powershell-env.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
/** The .NET tool's own shim (scripts/install-pwsh.sh installs it); it starts pwsh as a child process. */
const TOOL_SHIM = path.join(root, ".cache", "pwsh", "pwsh");

/**
 * pwsh itself: the tool's apphost inside its store, which runs PowerShell in its own process (the
 * shim would start it as a child, so killing the shim would not kill the engine, unlike
 * powershell.exe). Falls back to the shim's path when the store is not there (the suites then fail
 * or skip, see engineSkipReason).
 */
function resolvePwsh(): string {
  const tools = path.join(root, ".cache", "pwsh", ".store", "powershell", "7.6.9", "powershell", "7.6.9", "tools");
  for (const tfm of fs.existsSync(tools) ? fs.readdirSync(tools) : []) {
    const exe = path.join(tools, tfm, "any", "unix", "pwsh");
    if (fs.existsSync(exe)) return exe;
  }
  return TOOL_SHIM;
}

export const PWSH = resolvePwsh();
export const STANDINS = fileURLToPath(new URL("./standins", import.meta.url));

/** Telemetry and update checks off, for every pwsh and dotnet a test starts. */
export const ENGINE_ENV: Record<string, string> = { ...POWERSHELL_QUIET_ENV, DOTNET_CLI_TELEMETRY_OPTOUT: "1", DOTNET_NOLOGO: "1" };

/**
 * Why the real-engine suites cannot run here, or undefined when they can. Only a machine without
 * dotnet skips; with dotnet, a missing pwsh is a failure (npm test's pretest installs it).
 */
export function engineSkipReason(): string | undefined {
  if (fs.existsSync(PWSH)) return undefined;
  const dotnet = spawnSync("dotnet", ["--version"], { env: { ...process.env, ...ENGINE_ENV }, encoding: "utf8" });
  if (dotnet.error) return "no dotnet (the .NET SDK) on this machine: install it, then `bash scripts/install-pwsh.sh` installs PowerShell 7.6.9 as a .NET tool into .cache/pwsh";
  return undefined;
}

export interface WorldInstance {
  id: string;
  ns: string;
  class: string;
  props: Record<string, unknown>;
}

export interface ErrorSpec {
  message: string;
  native: string;
  status: number;
  hresult: number;
  category: string;
  fqid: string;
  MessageId?: string;
  error_Code?: string;
  terminating?: boolean;
}

export interface World {
  instances: WorldInstance[];
  /** Associated instance ids (both directions). */
  links?: [string, string][];
  /** "Class.Method" → values of the result (ReturnValue and [out] parameters). */
  results?: Record<string, Record<string, unknown>>;
  /** "Get-CimInstance MSFT_Disk", "Invoke-CimMethod MSFT_Volume.Format" … → the error raised. */
  errors?: Record<string, ErrorSpec>;
}

export const STORAGE = "root/Microsoft/Windows/Storage";

export interface Engine {
  dir: string;
  worldFile: string;
  callsFile: string;
  env: Record<string, string>;
  setWorld(world: World): void;
  /** Every call the stand-ins recorded since the last reset. */
  calls(): Record<string, unknown>[];
  resetCalls(): void;
  /** A pool running `script` (default: the storage script) on pwsh, closed after the suite. */
  pool(options?: Partial<PowerShellPoolOptions> & { script?: string; smb?: boolean; env?: Record<string, string>; wrap?: (file: string, args: string[]) => { file: string; args: string[] } }): PowerShellPool;
}

export function createEngine(): Engine {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "csi-engine-"));
  const worldFile = path.join(dir, "world.json");
  const callsFile = path.join(dir, "calls.jsonl");
  fs.writeFileSync(callsFile, "");
  const env = {
    ...ENGINE_ENV,
    PSModulePath: STANDINS,
    CSI_STANDIN_WORLD: worldFile,
    CSI_STANDIN_CALLS: callsFile,
    HOME: dir,
    XDG_CACHE_HOME: path.join(dir, "cache"),
    XDG_DATA_HOME: path.join(dir, "data"),
    XDG_CONFIG_HOME: path.join(dir, "config"),
  };
  const pools: PowerShellPool[] = [];
  after(async () => {
    await Promise.all(pools.map((p) => p.close()));
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const engine: Engine = {
    dir,
    worldFile,
    callsFile,
    env,
    setWorld(world) {
      fs.writeFileSync(worldFile, JSON.stringify({ classes: CIM_CLASSES, associations: CIM_ASSOCIATIONS, links: [], results: {}, errors: {}, ...world }));
    },
    calls() {
      return fs.readFileSync(callsFile, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as Record<string, unknown>);
    },
    resetCalls() {
      fs.writeFileSync(callsFile, "");
    },
    pool(options = {}) {
      const { script, smb, env: extraEnv, wrap, ...rest } = options;
      const args = powershellArgs(script ?? (smb ? SMB_ISCSI_SYSTEM_SCRIPT : undefined));
      const command = wrap ? wrap(PWSH, args) : { file: PWSH, args };
      const pool = new PowerShellPool({
        command: { ...command, env: { ...env, ...extraEnv } },
        size: 1,
        callTimeoutMs: 60_000,
        ...(smb ? { ops: SMB_ISCSI_SYSTEM_OPS } : {}),
        ...rest,
      });
      pools.push(pool);
      return pool;
    },
  };
  engine.setWorld({ instances: [] });
  return engine;
}
