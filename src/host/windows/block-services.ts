import * as path from "node:path";
import type { DiskService } from "../../groups/disk/types.ts";
import type { VolumeService } from "../../groups/volume/types.ts";
import type { Win32 } from "../../windows/win32.ts";
import { WindowsDiskHost } from "./disk.ts";
import { WindowsVolumeHost } from "./volume.ts";
import { PowerShellPool } from "./powershell-pool.ts";
import { powershellArgs } from "./scripts/worker-script.ts";
import { createWindowsDiskService } from "./windows-disk-service.ts";
import { createWindowsVolumeService } from "./windows-volume-service.ts";

/**
 * Windows PowerShell 5.1 by absolute path under %SystemRoot% (never a PATH lookup, which a
 * writable directory on PATH could hijack when csi-proxy runs as LocalSystem).
 */
export function powershellExe(env: NodeJS.ProcessEnv = process.env): string {
  const systemRoot = env.SystemRoot ?? env.SYSTEMROOT ?? "C:\\Windows";
  return path.win32.join(systemRoot, "System32", "WindowsPowerShell", "v1.0", "powershell.exe");
}

/** Disk and volume services on Windows, sharing one PowerShell worker pool (started on first use). */
export function createWindowsBlockServices(deps: { win32: Win32; pool?: PowerShellPool; log?: (msg: string) => void }): {
  disk: DiskService;
  volume: VolumeService;
  pool: PowerShellPool;
} {
  const pool = deps.pool ?? new PowerShellPool({ command: { file: powershellExe(), args: powershellArgs() }, size: 2, log: deps.log });
  return {
    disk: createWindowsDiskService({ host: new WindowsDiskHost(pool, deps.win32) }),
    volume: createWindowsVolumeService({ host: new WindowsVolumeHost(pool, deps.win32) }),
    pool,
  };
}
