import type { Group } from "../api/catalog.ts";
import { catalog, versionsOf, groups } from "../api/catalog.ts";
import { endpointPath } from "../api/endpoint.ts";
import type { Endpoint } from "../rpc/serve-endpoints.ts";
import type { ServiceHandlers } from "../api/handlers.ts";
import type { DescService } from "@bufbuild/protobuf";
import type { ProxyConfig } from "../proxy-config.ts";
import type { Services } from "../groups/services.ts";
import { filesystemAdapters } from "../groups/filesystem/adapters.ts";
import { diskAdapters } from "../groups/disk/adapters.ts";
import { volumeAdapters } from "../groups/volume/adapters.ts";
import { smbAdapters } from "../groups/smb/adapters.ts";
import { iscsiAdapters } from "../groups/iscsi/adapters.ts";
import { systemAdapters } from "../groups/system/adapters.ts";
import { guardServices } from "../groups/service-guard.ts";

/**
 * Builds every group service with this platform's host layer: the only place that picks hosts. Each
 * platform's module is loaded only on that platform (Windows code never loads on Linux).
 */
export async function createServices(config: ProxyConfig): Promise<Services> {
  if (config.platform === "win32") return (await import("./windows.ts")).createWindowsServices(config);
  return (await import("./linux.ts")).createLinuxServices(config);
}

/**
 * Releases what the hosts hold for the daemon's life once its calls have answered (Linux: the
 * kernel's task listing, kernel-task-listing.ts; Windows: the PowerShell worker pools, waiting for a
 * Format or Resize still running, at most 15 min, logged through `log`: daemon-pools.ts).
 * Idempotent; a later call opens what it needs again (Windows: pools are closed for good).
 */
export async function releaseHostResources(platform: ProxyConfig["platform"], log?: { warning(msg: string): void; info(msg: string): void }): Promise<void> {
  if (platform === "win32") {
    const { closeDaemonPools } = await import("../host/windows/powershell/daemon-pools.ts");
    await closeDaemonPools(log ?? { warning: () => {}, info: () => {} });
    return;
  }
  await (await import("./linux.ts")).releaseLinuxResources();
}

/**
 * {@link createServices} for library callers: every method's arguments are checked at run time
 * first (src/groups/service-guard.ts), so a wrong type or null is an InvalidArgument CsiProxyError,
 * never a TypeError from inside. Exported as the package's `createServices`.
 */
export async function createCheckedServices(config: ProxyConfig): Promise<Services> {
  return guardServices(await createServices(config));
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
