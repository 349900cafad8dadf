import type { DiskService } from "../groups/disk/types.ts";
import type { VolumeService } from "../groups/volume/types.ts";
import type { Win32 } from "../win32/win32.ts";
import { WindowsDiskHost } from "../host/windows/disk.ts";
import { WindowsVolumeHost } from "../host/windows/volume.ts";
import { PowerShellPool, powershellExe } from "../host/windows/powershell/powershell-pool.ts";
import { powershellArgs } from "../host/windows/powershell/scripts/worker-script.ts";
import { createDiskService } from "../groups/disk/disk-service.ts";
import { createVolumeService } from "../groups/volume/volume-service.ts";
import { createKeyedMutex, type KeyedMutex } from "../util/keyed-mutex.ts";

/**
 * Disk and volume services on Windows (the groups' services over the Windows hosts), sharing one
 * PowerShell worker pool (started on first use) and one lock per disk. No path policy, as upstream:
 * volume target paths are not confined to the kubelet dir on Windows (the path policy resolves links
 * with realpath, which does not see through volume mount points).
 */
export function createWindowsBlockServices(deps: { win32: Win32; pool?: PowerShellPool; log?: (msg: string) => void; locks?: KeyedMutex }): {
  disk: DiskService;
  volume: VolumeService;
  pool: PowerShellPool;
} {
  const locks = deps.locks ?? createKeyedMutex();
  const pool = deps.pool ?? new PowerShellPool({ command: { file: powershellExe(), args: powershellArgs() }, size: 2, log: deps.log });
  return {
    disk: createDiskService({ host: new WindowsDiskHost(pool, deps.win32), locks }),
    volume: createVolumeService({ host: new WindowsVolumeHost(pool, deps.win32), locks }),
    pool,
  };
}
