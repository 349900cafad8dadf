import type { Group } from "./api/catalog.ts";
import { catalog, versionsOf, groups } from "./api/catalog.ts";
import { endpointPath } from "./api/endpoint.ts";
import type { Endpoint } from "./rpc/serve-endpoints.ts";
import type { ServiceHandlers } from "./api/handlers.ts";
import type { DescService } from "@bufbuild/protobuf";
import type { FilesystemService } from "./groups/filesystem/types.ts";
import type { DiskService } from "./groups/disk/types.ts";
import type { VolumeService } from "./groups/volume/types.ts";
import type { SmbService } from "./groups/smb/types.ts";
import type { IscsiService } from "./groups/iscsi/types.ts";
import type { SystemService } from "./groups/system/types.ts";
import { createFilesystemService } from "./groups/filesystem/filesystem-service.ts";
import { createFsResolver, createPathPolicy } from "./groups/filesystem/path-policy.ts";
import * as fsPromises from "node:fs/promises";
import { unavailableService } from "./groups/unavailable-service.ts";
import { createSmbService } from "./groups/smb/smb-service.ts";
import { smbStateFile } from "./groups/smb/smb-state.ts";
import { createIscsiService } from "./groups/iscsi/iscsi-service.ts";
import { createSystemService } from "./groups/system/system-service.ts";
import { createDiskService } from "./groups/disk/disk-service.ts";
import { createVolumeService } from "./groups/volume/volume-service.ts";
import { createKeyedMutex } from "./util/keyed-mutex.ts";
import * as nodePath from "node:path";
import { filesystemAdapters } from "./groups/filesystem/adapters.ts";
import { diskAdapters } from "./groups/disk/adapters.ts";
import { volumeAdapters } from "./groups/volume/adapters.ts";
import { smbAdapters } from "./groups/smb/adapters.ts";
import { iscsiAdapters } from "./groups/iscsi/adapters.ts";
import { systemAdapters } from "./groups/system/adapters.ts";

/** What the daemon is configured with (from flags, or given directly by a library user). */
export interface ProxyConfig {
  platform: "linux" | "win32";
  kubeletPath: string;
  workingDirs: string[];
  /** Linux only: where the endpoints' Unix sockets live. */
  socketDir: string;
  /** SMB mappings demand encryption. */
  requirePrivacy: boolean;
  /** Linux: filesystem FormatVolume creates ("ext4" or "xfs"). Windows always formats NTFS. */
  defaultFsType: "ext4" | "xfs";
  /** Windows: explicit DACL (SDDL) for every named pipe (-pipe-sddl); unset keeps the default pipe DACL. */
  pipeSddl?: string;
  /** Persistent state (-state-dir): SMB reference counts; Linux also SMB mounts and the iSCSI mutual CHAP secret. */
  stateDir: string;
  /** Services System StartService/StopService may act on (-allowed-service); "*" allows any. */
  allowedServices: string[];
  /** Where services report what they do on their own (SMB start-up reconciliation, sweeps). */
  logger?: { info(msg: string): void; warning(msg: string): void };
}

/** The six version-agnostic group services: the in-process API (what HostProcess containers can call directly). */
export interface Services {
  filesystem: FilesystemService;
  disk: DiskService;
  volume: VolumeService;
  smb: SmbService;
  iscsi: IscsiService;
  system: SystemService;
}

/** Builds every group service with this platform's host layer. The only place that picks hosts. */
export async function createServices(config: ProxyConfig): Promise<Services> {
  if (config.platform === "win32") {
    // Windows hosts (koffi, PowerShell worker pool) are loaded only on Windows.
    const { createWindowsServices } = await import("./host/windows/compose-windows.ts");
    return createWindowsServices(config);
  }
  if (config.platform !== "linux") throw new Error(`no host layer for ${config.platform} yet`);
  const { LinuxFilesystemHost } = await import("./host/linux/filesystem.ts");
  const fsHost = new LinuxFilesystemHost();
  const { LinuxDiskHost } = await import("./host/linux/disk.ts");
  const { LinuxVolumeHost } = await import("./host/linux/volume.ts");
  const { LinuxBlockTools } = await import("./host/linux/linux-block-tools.ts");
  /** Disk and volume share one lock per disk and one offline-state file (beside the sockets: per daemon, gone at reboot). */
  const locks = createKeyedMutex();
  const blockTools = new LinuxBlockTools({ stateFile: nodePath.join(config.socketDir, "csi-proxy-disk-state.json") });
  const policy = createPathPolicy({
    platform: config.platform,
    allowedDirs: [...config.workingDirs, config.kubeletPath],
    resolve: createFsResolver(fsPromises, config.platform),
  });
  return {
    filesystem: createFilesystemService({ host: fsHost, policy, platform: config.platform }),
    disk: createDiskService({ host: new LinuxDiskHost(blockTools), policy, locks }),
    volume: createVolumeService({ host: new LinuxVolumeHost(blockTools, { defaultFileSystem: config.defaultFsType }), policy, locks }),
    smb: await createSmbService({ host: new (await import("./host/linux/smb.ts")).LinuxSmbHost(config), policy, state: smbStateFile(config.stateDir), requirePrivacy: config.requirePrivacy, platform: config.platform, log: config.logger }),
    iscsi: createIscsiService({ host: new (await import("./host/linux/iscsi.ts")).LinuxIscsiHost(config) }),
    system: createSystemService({ host: new (await import("./host/linux/system.ts")).LinuxSystemHost(), platform: config.platform, allowedServices: config.allowedServices }),
  };
}

const adapters = {
  filesystem: filesystemAdapters,
  disk: diskAdapters,
  volume: volumeAdapters,
  smb: smbAdapters,
  iscsi: iscsiAdapters,
  system: systemAdapters,
};

/** One endpoint per group/version (23), each with its versioned adapter over the group service. */
export function buildEndpoints(services: Services, config: Pick<ProxyConfig, "platform" | "socketDir">): Endpoint[] {
  return groups.flatMap((group: Group) =>
    versionsOf(group).map((version) => {
      const adapt = (adapters[group] as Record<string, (service: unknown) => ServiceHandlers<DescService>>)[version];
      return {
        group,
        version,
        address: endpointPath(group, version, config),
        service: (catalog[group] as Record<string, DescService>)[version],
        handlers: adapt(services[group]),
      };
    }),
  );
}
