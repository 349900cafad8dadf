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

/**
 * Builds every group service with this platform's host layer: the only place that picks hosts. Each
 * platform's module is loaded only on that platform (Windows code never loads on Linux).
 */
export async function createServices(config: ProxyConfig): Promise<Services> {
  if (config.platform === "win32") return (await import("./host/windows/compose-windows.ts")).createWindowsServices(config);
  return (await import("./host/linux/compose-linux.ts")).createLinuxServices(config);
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
