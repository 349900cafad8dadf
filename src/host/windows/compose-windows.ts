/**
 * The Windows branch of compose.ts (loaded only on win32): builds the group services over the
 * Windows hosts. Filesystem: Node fs + Win32 (koffi). Disk and volume: CIM through the PowerShell
 * worker pool + Win32 (koffi). SMB, iSCSI and system have their own issue and answer Unimplemented.
 */
import * as fsPromises from "node:fs/promises";
import type { ProxyConfig, Services } from "../../compose.ts";
import type { SmbService } from "../../groups/smb/types.ts";
import type { IscsiService } from "../../groups/iscsi/types.ts";
import type { SystemService } from "../../groups/system/types.ts";
import { createFilesystemService } from "../../groups/filesystem/filesystem-service.ts";
import { createFsResolver, createPathPolicy } from "../../groups/filesystem/path-policy.ts";
import { unavailableService } from "../../groups/unavailable-service.ts";
import { loadWin32 } from "../../windows/win32.ts";
import { WindowsFilesystemHost } from "./filesystem.ts";
import { createWindowsBlockServices } from "./block-services.ts";

export async function createWindowsServices(config: ProxyConfig): Promise<Services> {
  const win32 = await loadWin32();
  const policy = createPathPolicy({
    platform: "win32",
    allowedDirs: [...config.workingDirs, config.kubeletPath],
    resolve: createFsResolver(fsPromises, "win32"),
  });
  const { disk, volume } = createWindowsBlockServices({ win32 });
  return {
    filesystem: createFilesystemService({ host: new WindowsFilesystemHost(win32), policy, platform: "win32" }),
    disk,
    volume,
    smb: unavailableService<SmbService>("smb", "win32", "SMB has its own issue"),
    iscsi: unavailableService<IscsiService>("iscsi", "win32", "iSCSI has its own issue"),
    system: unavailableService<SystemService>("system", "win32", "system has its own issue"),
  };
}
