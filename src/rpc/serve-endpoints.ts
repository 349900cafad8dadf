import type * as net from "node:net";
import * as fs from "node:fs";
import type { DescService } from "@bufbuild/protobuf";
import type { ServiceHandlers } from "../api/handlers.ts";
import { unaryMethods, type CallObserver } from "./grpc-service.ts";
import { GrpcConnection } from "./grpc-connection.ts";
import { listenEndpoint } from "./listen-endpoint.ts";
import { ByteBudget } from "./byte-budget.ts";
import { openFileLimit } from "./open-file-limit.ts";
import { OutboundBudget } from "./outbound-budget.ts";
import { PROCESS_BUFFERED_BYTES, PROCESS_OUTBOUND_BYTES, connectionsPerEndpoint, type TransportLimits } from "./transport-limits.ts";

/** One served group/version: its address (socket path or pipe name), service and handlers. */
export interface Endpoint {
  group: string;
  version: string;
  address: string;
  service: DescService;
  handlers: ServiceHandlers<DescService>;
}

export interface ServingEndpoints {
  readonly addresses: string[];
  /** Stops accepting, ends every connection (idle ones included) and removes Unix sockets. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Serves each endpoint on its own listener; every connection is served by src/rpc/grpc-connection.ts
 * with that endpoint's methods only (other methods get UNIMPLEMENTED), whatever `:authority` the
 * client sends. If any endpoint cannot listen, the ones already started are stopped and the
 * error is thrown (nothing half-started is left behind).
 * Each endpoint accepts at most `connectionsPerEndpoint(RLIMIT_NOFILE)` connections at once (more
 * are closed as they are accepted), so a flood on one endpoint cannot take the descriptors the
 * others need; all connections share one process-wide budget of buffered request data.
 */
export async function serveEndpoints(
  endpoints: Endpoint[],
  options: {
    observer: CallObserver;
    platform?: NodeJS.Platform;
    /** Largest request message accepted (default 4 MiB, as grpc-go and grpc-js). */
    maxMessageBytes?: number;
    /** Overrides of the transport limits (transport-limits.ts DEFAULT_LIMITS). */
    limits?: Partial<TransportLimits>;
    /** Connections accepted per endpoint (default: connectionsPerEndpoint of this process's descriptor limit). */
    maxConnectionsPerEndpoint?: number;
    /** Windows -pipe-sddl: applied to each pipe once it listens (see listenEndpoint). */
    secure?: (address: string) => Promise<unknown>;
  },
): Promise<ServingEndpoints> {
  const started: { listener: net.Server; sockets: Set<net.Socket>; address: string }[] = [];
  const isPipe = (options.platform ?? process.platform) === "win32";
  let stopping: Promise<void> | undefined;
  const limits: Partial<TransportLimits> = { ...options.limits, ...(options.maxMessageBytes ? { maxMessageBytes: options.maxMessageBytes } : {}) };
  const processBudget = new ByteBudget(PROCESS_BUFFERED_BYTES);
  const outboundBudget = new OutboundBudget(PROCESS_OUTBOUND_BYTES);
  const maxConnections = options.maxConnectionsPerEndpoint ?? connectionsPerEndpoint(isPipe ? undefined : openFileLimit());
  const stop = () =>
    (stopping ??= Promise.all(
      started.map(async ({ listener, sockets, address }) => {
        const closed = new Promise<void>((resolve) => listener.close(() => resolve()));
        for (const socket of sockets) socket.destroy();
        await closed;
        if (!isPipe) await fs.promises.rm(address, { force: true });
      }),
    ).then(() => undefined));
  // All endpoints start listening together; the first failure stops the ones that did start.
  const results = await Promise.allSettled(
    endpoints.map(async (endpoint) => {
      const methods = unaryMethods(endpoint.service, endpoint.handlers, options.observer);
      const sockets = new Set<net.Socket>();
      const listener = await listenEndpoint(
        endpoint.address,
        (socket) => {
          sockets.add(socket);
          socket.once("close", () => sockets.delete(socket));
          new GrpcConnection(socket, methods, { limits, processBudget, outboundBudget });
        },
        { platform: options.platform, secure: options.secure },
      );
      listener.maxConnections = maxConnections;
      started.push({ listener, sockets, address: endpoint.address });
    }),
  );
  const failure = results.find((r) => r.status === "rejected");
  if (failure) {
    await stop();
    throw failure.reason;
  }
  // Addresses in the order endpoints were given.
  started.sort((a, b) => endpoints.findIndex((e) => e.address === a.address) - endpoints.findIndex((e) => e.address === b.address));
  return { addresses: started.map((s) => s.address), stop };
}
