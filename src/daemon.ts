import type { DescMethod } from "@bufbuild/protobuf";
import { buildEndpoints, createServices, releaseHostResources } from "./compose/compose.ts";
import type { ProxyConfig } from "./proxy-config.ts";
import type { Services } from "./groups/services.ts";
import { serveEndpoints, type ServingEndpoints } from "./rpc/serve-endpoints.ts";
import type { CallObserver } from "./rpc/grpc-service.ts";
import type { GrpcMetrics } from "./metrics/grpc-metrics.ts";
import type { MetricsServer } from "./metrics/metrics-server.ts";
import { Code, codeName, quote } from "./errors.ts";
import { formatRequest, type Logger } from "./log/klog.ts";
import { beginStartUp, endStartUp } from "./boot/start-up-phase.ts";

export interface Daemon {
  services: Services;
  /** Socket paths or pipe names served, one per group/version. */
  addresses: string[];
  /** The bound metrics address when -metrics-bind-address is set. */
  metricsAddress?: string;
  /** Stops serving: listeners closed, connections ended, sockets removed; then the hosts' process-long resources released (compose.ts; on Windows this waits for a Format or Resize still running, at most 15 min). Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts every endpoint (and the metrics endpoint when asked). Fails without leaving anything
 * listening when any endpoint cannot be served (e.g. another csi-proxy already serves it).
 */
export async function startDaemon(config: ProxyConfig, options: { logger: Logger; metricsBindAddress?: string }): Promise<Daemon> {
  // Until the endpoints listen, caches read directly instead of loading native code for their probes.
  beginStartUp();
  try {
    return await startServing(config, options);
  } finally {
    endStartUp();
  }
}

async function startServing(config: ProxyConfig, options: { logger: Logger; metricsBindAddress?: string }): Promise<Daemon> {
  const { logger } = options;
  const services = await createServices(config);
  // prom-client (and the HTTP stack it pulls in) is loaded only when metrics are asked for: ~20 MB and ~100 ms otherwise.
  const metrics = options.metricsBindAddress ? (await import("./metrics/grpc-metrics.ts")).createGrpcMetrics() : undefined;
  let metricsServer: MetricsServer | undefined;
  let serving: ServingEndpoints | undefined;
  try {
    if (metrics && options.metricsBindAddress) {
      const { serveMetrics } = await import("./metrics/metrics-server.ts");
      metricsServer = await serveMetrics(options.metricsBindAddress, metrics.registry);
    }
    const secure = config.platform === "win32" && config.pipeSddl ? await pipeSecurity(config.pipeSddl, logger) : undefined;
    serving = await serveEndpoints(buildEndpoints(services, config), { observer: callObserver(logger, metrics), platform: config.platform, secure });
  } catch (err) {
    await metricsServer?.close();
    throw err;
  }
  return {
    services,
    addresses: serving.addresses,
    metricsAddress: metricsServer?.address,
    stop: async () => {
      // The metrics connections are closed at once, whatever their scrapers do; the endpoints let calls in flight answer.
      await Promise.all([metricsServer?.close(), serving.stop()]);
      await releaseHostResources(config.platform, logger);
    },
  };
}

/**
 * Logs one line per RPC at V(2) (method, status code, duration; the request, secrets redacted, at
 * V(4)), every Internal/Unknown failure as an error, and feeds the gRPC metrics.
 */
export function callObserver(logger: Logger, metrics: GrpcMetrics | undefined): CallObserver {
  return {
    start(method: DescMethod, request: unknown) {
      const name = `/${method.parent.typeName}/${method.name}`;
      const t0 = process.hrtime.bigint();
      const record = metrics?.startCall(method.parent.typeName, method.name);
      const v4 = logger.v(4);
      if (v4.enabled) v4.info(`${name} request=${formatRequest(request)}`);
      return (code, error) => {
        record?.(code);
        const failed = code === Code.Internal || code === Code.Unknown;
        const v2 = logger.v(2);
        if (!failed && !v2.enabled) return; // the hot path formats nothing when the line is not logged
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        const line = `${name} code=${codeName(code)} duration=${ms.toFixed(3)}ms${error ? ` error=${quote(error.message, 1024)}` : ""}`;
        if (failed) logger.error(`${line}${error?.cause ? ` cause=${error.cause instanceof Error ? `${error.cause.name}: ${error.cause.message}` : JSON.stringify(error.cause)}` : ""}`);
        else v2.info(line);
      };
    },
  };
}

/** Windows -pipe-sddl: validates the SDDL now and returns the per-pipe applier (src/win32-service/pipe-security.ts). */
async function pipeSecurity(sddl: string, logger: Logger): Promise<(address: string) => Promise<void>> {
  const { createPipeSecurity } = await import("./win32-service/pipe-security.ts");
  const security = await createPipeSecurity(sddl);
  return async (address) => {
    const applied = await security.apply(address);
    logger.v(2).info(`${address}: DACL ${applied}`);
  };
}
