import * as grpc from "@grpc/grpc-js";
import type * as net from "node:net";
import * as fs from "node:fs";
import type { DescService } from "@bufbuild/protobuf";
import type { ServiceHandlers } from "../api/handlers.ts";
import { toGrpcService, type CallObserver } from "./grpc-service.ts";
import { withAuthorityCompat } from "./authority-shim.ts";
import { listenEndpoint } from "./listen-endpoint.ts";

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
 * Serves each endpoint on its own listener with its own grpc-js server, so an endpoint answers only
 * its own service (other methods get UNIMPLEMENTED). Connections pass through the `:authority`
 * compatibility shim. If any endpoint cannot listen, the ones already started are stopped and the
 * error is thrown (nothing half-started is left behind).
 */
export async function serveEndpoints(
  endpoints: Endpoint[],
  options: {
    observer: CallObserver;
    platform?: NodeJS.Platform;
    grpcOptions?: grpc.ServerOptions;
    /** Windows -pipe-sddl: applied to each pipe once it listens (see listenEndpoint). */
    secure?: (address: string) => Promise<unknown>;
  },
): Promise<ServingEndpoints> {
  const started: { server: grpc.Server; listener: net.Server; sockets: Set<net.Socket>; address: string }[] = [];
  const isPipe = (options.platform ?? process.platform) === "win32";
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= Promise.all(
      started.map(async ({ server, listener, sockets, address }) => {
        await new Promise<void>((resolve) => listener.close(() => resolve()));
        for (const socket of sockets) socket.destroy();
        server.forceShutdown();
        if (!isPipe) await fs.promises.rm(address, { force: true });
      }),
    ).then(() => undefined));
  try {
    for (const endpoint of endpoints) {
      const server = new grpc.Server({ "grpc.max_receive_message_length": 4 * 1024 * 1024, ...options.grpcOptions });
      const { definition, implementation } = toGrpcService(endpoint.service, endpoint.handlers, options.observer);
      server.addService(definition, implementation);
      const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
      const sockets = new Set<net.Socket>();
      const listener = await listenEndpoint(
        endpoint.address,
        (socket) => {
          sockets.add(socket);
          socket.once("close", () => sockets.delete(socket));
          socket.on("error", () => socket.destroy());
          injector.injectConnection(withAuthorityCompat(socket));
        },
        { platform: options.platform, secure: options.secure },
      );
      started.push({ server, listener, sockets, address: endpoint.address });
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { addresses: started.map((s) => s.address), stop };
}
