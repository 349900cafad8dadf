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
  if (config.platform !== "linux") throw new Error(`no host layer for ${config.platform} yet`);
  const { LinuxFilesystemHost } = await import("./host/linux/filesystem.ts");
  const fsHost = new LinuxFilesystemHost();
  const policy = createPathPolicy({
    platform: config.platform,
    allowedDirs: [...config.workingDirs, config.kubeletPath],
    resolve: createFsResolver(fsPromises, config.platform),
  });
  return {
    filesystem: createFilesystemService({ host: fsHost, policy, platform: config.platform }),
    disk: unavailableService<DiskService>("disk", config.platform),
    volume: unavailableService<VolumeService>("volume", config.platform),
    smb: unavailableService<SmbService>("smb", config.platform),
    iscsi: unavailableService<IscsiService>("iscsi", config.platform),
    system: unavailableService<SystemService>("system", config.platform),
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
