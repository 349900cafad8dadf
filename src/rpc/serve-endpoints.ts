import type * as net from "node:net";
import * as fs from "node:fs";
import type { DescService } from "@bufbuild/protobuf";
import type { ServiceHandlers } from "../api/handlers.ts";
import { unaryMethods, type CallObserver } from "./grpc-service.ts";
import { GrpcConnection } from "./grpc-connection.ts";
import { listenEndpoint } from "./listen-endpoint.ts";
import { ByteBudget } from "./byte-budget.ts";
import { openFileLimit } from "./open-file-limit.ts";
import { ConnectionAdmission } from "./connection-admission.ts";
import { OutboundBudget } from "./outbound-budget.ts";
import { PROCESS_BUFFERED_BYTES, PROCESS_OUTBOUND_BYTES, connectionsPerEndpoint, connectionsPerProcess, type TransportLimits } from "./transport-limits.ts";

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
 * Admission (connection-admission.ts): at most `connectionsPerProcess(RLIMIT_NOFILE)` connections in
 * all and `connectionsPerEndpoint(RLIMIT_NOFILE)` on one endpoint; at a bound, a new connection takes
 * the place of the one longest without a call (never one with a call in flight), so idle or
 * half-open connections cannot lock legitimate clients out. All connections share one process-wide
 * budget of buffered request data and one of outbound bytes.
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
    /** Connections admitted per endpoint (default: connectionsPerEndpoint of this process's descriptor limit). */
    maxConnectionsPerEndpoint?: number;
    /** Connections admitted by all endpoints together (default: connectionsPerProcess of this process's descriptor limit). */
    maxConnections?: number;
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
  const descriptors = isPipe ? undefined : openFileLimit();
  const admission = new ConnectionAdmission({
    limit: options.maxConnections ?? connectionsPerProcess(descriptors),
    perEndpoint: options.maxConnectionsPerEndpoint ?? connectionsPerEndpoint(descriptors),
  });
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
    endpoints.map(async (endpoint, index) => {
      const methods = unaryMethods(endpoint.service, endpoint.handlers, options.observer);
      const sockets = new Set<net.Socket>();
      const listener = await listenEndpoint(
        endpoint.address,
        (socket) => {
          const entry = admission.admit(index);
          if (!entry) return void socket.on("error", () => {}).destroy();
          sockets.add(socket);
          socket.once("close", () => sockets.delete(socket));
          new GrpcConnection(socket, methods, { limits, processBudget, outboundBudget, admission: entry });
        },
        { platform: options.platform, secure: options.secure },
      );
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
