import * as net from "node:net";
import { createClient, type Client } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { catalog, compareVersions, type Group, type ServiceOf, type VersionOf } from "../api/catalog.ts";
import { defaultSocketDir, endpointPath } from "../api/endpoint.ts";

export interface ConnectOptions<V extends string> {
  /** Accept only these versions (default: every version of the group). The newest one served wins. */
  versions?: readonly V[];
  /** Linux: the server's -socket-dir. Ignored on Windows (named pipes). */
  socketDir?: string;
  platform?: NodeJS.Platform;
  /** Per-call timeout in milliseconds (default 60 s, 0 for none). */
  timeoutMs?: number;
}

/** A client bound to one version: check `version` to narrow `client` to that version's typed methods. */
export type GroupClient<G extends Group, V extends VersionOf<G>> = {
  [K in V]: {
    group: G;
    version: K;
    /** The socket path or pipe name it talks to. */
    address: string;
    client: Client<ServiceOf<G, K>>;
    /** Closes the connection; calls after close fail. */
    close(): void;
  };
}[V];

/**
 * Connects to a csi-proxy group, choosing the newest version the server serves among `versions`.
 * Dials the endpoint itself (Unix socket, or Windows named pipe through net.connect), so it works
 * where URL-based dialling of pipes does not. Rejects with an error listing what was tried when no
 * acceptable version is served.
 */
export async function connectGroup<G extends Group, V extends VersionOf<G> = VersionOf<G>>(
  group: G,
  options: ConnectOptions<V> = {},
): Promise<GroupClient<G, V>> {
  const platform = options.platform ?? process.platform;
  const socketDir = options.socketDir ?? defaultSocketDir();
  const served = Object.keys(catalog[group]) as V[];
  const candidates = (options.versions ?? served).filter((v) => served.includes(v)).sort(compareVersions).reverse();
  const tried: string[] = [];
  for (const version of candidates) {
    const address = endpointPath(group, version, { platform, socketDir });
    if (!(await canConnect(address))) {
      tried.push(address);
      continue;
    }
    return bind(group, version, address, options.timeoutMs ?? 60_000) as GroupClient<G, V>;
  }
  throw new Error(`csi-proxy ${group}: no acceptable version is served (tried ${tried.join(", ") || "nothing: no known version requested"})`);
}

function bind(group: Group, version: string, address: string, timeoutMs: number) {
  const sessions = new Http2SessionManager("http://localhost", { idleConnectionTimeoutMs: 60_000 }, {
    createConnection: () => net.connect(address),
  });
  const transport = createGrpcTransport({ baseUrl: "http://localhost", sessionManager: sessions, defaultTimeoutMs: timeoutMs || undefined });
  const service = (catalog[group] as unknown as Record<string, DescService>)[version];
  return { group, version, address, client: createClient(service, transport), close: () => sessions.abort() };
}

/** True when something accepts a connection at the address (the endpoint is served) within timeoutMs. */
export function canConnect(address: string, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(address);
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}
