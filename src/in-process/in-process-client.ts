/**
 * The in-process counterpart of a Node.js driver's pipe client, constructed as grpc-js clients
 * are: `InProcessCsiProxyClient(config, options)` — plain call or `new` — returns at once a client
 * whose `clients[group]` (grpc-style, grpc-style-client.ts) are usable immediately.
 *
 * - A mistake in `config` (in-process-config.ts) or `options` throws synchronously, as grpc-js's
 *   constructors throw: a CsiProxyError with code InvalidArgument naming the option.
 * - Set-up (building the group services: state directory, host layer) runs in the background from
 *   construction; calls made meanwhile wait for it. If it fails, every call answers UNAVAILABLE
 *   "csi-proxy in-process set-up failed: <why>; nothing was done", the logger gets one warning, and
 *   `ready` rejects with that error. `ready` is handled from the start: never an unhandled
 *   rejection, whether or not anyone awaits it.
 * - `createInProcessClient` (async) is the earlier form, kept: it resolves with the client once
 *   set-up succeeded and rejects with the set-up error otherwise.
 */
import type { Services } from "../groups/services.ts";
import { Code, CsiProxyError, codeName } from "../errors.ts";
import { groups, versionsOf, type Group } from "../api/catalog.ts";
import { createInProcessEngine, type InProcessEngine } from "./in-process-engine.ts";
import { grpcStyleClient, serviceError, type EngineSlot, type GrpcStyleClient, type ServiceError } from "./grpc-style-client.ts";
import { checkInProcessConfig, type InProcessConfig } from "./in-process-config.ts";
import { describeValue } from "./describe-value.ts";
import { shownName } from "./shown-name.ts";
import { statusMessage } from "../rpc/grpc-service.ts";

/** democratic-csi's defaults: the group versions its pipe client dials. */
export const DEFAULT_VERSIONS: Record<Group, string> = { filesystem: "v1", disk: "v1", volume: "v1", smb: "v1", system: "v1alpha1", iscsi: "v1alpha2" };

export interface InProcessClientOptions {
  /** Per group, the version to use (as the pipe client's `services` option; `connection` is accepted and ignored). */
  services?: Partial<Record<Group, { version?: string; connection?: unknown }>>;
  /** The pipe client's pipe name prefix: accepted and ignored (there are no pipes). */
  pipe_prefix?: string;
  /** Tests: the group services to use instead of this platform's (or a set-up that settles later). */
  groupServices?: Services | Promise<Services>;
}

/** The pipe client's counterpart: `clients[group]` at the chosen versions, `client(group, version)` for any, `executeRPC` on top. */
export interface InProcessCsiProxyClient {
  readonly clients: Readonly<Record<Group, GrpcStyleClient>>;
  /** Settles once set-up finished: resolves when calls can run, rejects with the error every call then answers. Never unhandled. */
  readonly ready: Promise<void>;
  client(group: string, version: string): GrpcStyleClient;
  /** Calls `clients[serviceName.toLowerCase()][methodName](request)`; resolves with the response, rejects with the ServiceError. */
  executeRPC(serviceName: string, methodName: string, request?: unknown): Promise<Record<string, unknown>>;
}

export interface InProcessCsiProxyClientFactory {
  new (config?: InProcessConfig, options?: InProcessClientOptions): InProcessCsiProxyClient;
  (config?: InProcessConfig, options?: InProcessClientOptions): InProcessCsiProxyClient;
}

const invalidOption = (option: string, expected: string, got: unknown) =>
  new CsiProxyError(Code.InvalidArgument, `options.${option}: expected ${expected}, got ${describeValue(got)}`);

/** The version per group `options` asks for (DEFAULT_VERSIONS otherwise); throws InvalidArgument for anything else. */
function checkOptions(options: unknown): { versions: Record<Group, string>; groupServices?: Services | Promise<Services> } {
  try {
    return readOptions(options);
  } catch (e) {
    if (e instanceof CsiProxyError) throw e;
    throw new CsiProxyError(Code.InvalidArgument, `options: expected a plain object { services?, pipe_prefix? }, got one that cannot be read (${e instanceof Error ? e.message.slice(0, 200) : "a non-Error was thrown"})`);
  }
}

function readOptions(options: unknown): { versions: Record<Group, string>; groupServices?: Services | Promise<Services> } {
  if (options === undefined) options = {};
  if (typeof options !== "object" || options === null || Array.isArray(options)) throw new CsiProxyError(Code.InvalidArgument, `options: expected an object { services?, pipe_prefix? }, got ${describeValue(options)}`);
  const o = options as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (key !== "services" && key !== "pipe_prefix" && key !== "groupServices") throw new CsiProxyError(Code.InvalidArgument, `options: unknown option ${JSON.stringify(key.slice(0, 100))} (options: services, pipe_prefix)`);
  }
  if (o.pipe_prefix !== undefined && typeof o.pipe_prefix !== "string") throw invalidOption("pipe_prefix", "a string (ignored in-process)", o.pipe_prefix);
  if (o.groupServices !== undefined && (typeof o.groupServices !== "object" || o.groupServices === null)) throw invalidOption("groupServices", "the six group services", o.groupServices);
  const versions = { ...DEFAULT_VERSIONS };
  const services = o.services ?? {};
  if (typeof services !== "object" || services === null || Array.isArray(services)) throw invalidOption("services", `an object keyed by group (${groups.join(", ")})`, services);
  for (const [group, entry] of Object.entries(services)) {
    if (!(groups as string[]).includes(group)) throw new CsiProxyError(Code.InvalidArgument, `options.services: unknown group ${JSON.stringify(group.slice(0, 100))} (groups: ${groups.join(", ")})`);
    if (entry === undefined || entry === null) continue;
    if (typeof entry !== "object" || Array.isArray(entry)) throw invalidOption(`services.${group}`, "an object { version?, connection? }", entry);
    for (const key of Object.keys(entry)) {
      if (key !== "version" && key !== "connection") throw new CsiProxyError(Code.InvalidArgument, `options.services.${group}: unknown option ${JSON.stringify(key.slice(0, 100))} (version, connection)`);
    }
    const version = (entry as { version?: unknown }).version;
    if (version === undefined || version === null || version === "") continue;
    const served = versionsOf(group as Group) as string[];
    if (typeof version !== "string" || !served.includes(version)) throw invalidOption(`services.${group}.version`, `a version csi-proxy serves for ${group} (${served.join(", ")})`, version);
    versions[group as Group] = version;
  }
  return { versions, groupServices: o.groupServices as Services | Promise<Services> | undefined };
}

function construct(config?: InProcessConfig, options?: InProcessClientOptions): InProcessCsiProxyClient {
  const proxyConfig = checkInProcessConfig(config);
  const { versions, groupServices } = checkOptions(options);
  let failure: ServiceError | undefined;
  const started: Promise<InProcessEngine | undefined> = Promise.resolve()
    .then(() => createInProcessEngine(proxyConfig, groupServices))
    .catch((e: unknown) => {
      const cause = CsiProxyError.from(e);
      failure = serviceError(Code.Unavailable, statusMessage(`csi-proxy in-process set-up failed (${codeName(cause.code)}): ${cause.message}; nothing was done`));
      proxyConfig.logger?.warning(`${failure.details}; every call answers UNAVAILABLE`);
      return undefined;
    });
  const slot: EngineSlot = { ready: started, failure: () => failure };
  const ready = started.then((engine) => {
    if (!engine) throw failure!;
  });
  ready.catch(() => {}); // handled from the start: a caller who never awaits it gets no unhandled rejection
  // No prototype: a driver's own lookup `clients[name][method]` finds nothing for `__proto__`,
  // `constructor`… (its `executeRPC` then fails at once instead of calling Object.prototype's functions).
  const clients = Object.create(null) as Record<Group, GrpcStyleClient>;
  for (const group of groups) clients[group] = grpcStyleClient(slot, group, versions[group]);
  const byVersion = new Map<string, GrpcStyleClient>();
  return {
    clients: Object.freeze(clients),
    ready,
    client(group, version) {
      const c = grpcStyleClient(slot, group, version); // throws UNIMPLEMENTED for a group/version not served
      const key = `${group}/${version}`;
      if (!byVersion.has(key)) byVersion.set(key, c);
      return byVersion.get(key)!;
    },
    executeRPC(serviceName, methodName, request = {}) {
      return new Promise((resolve, reject) => {
        // Own properties only: a name of Object.prototype (__proto__, constructor, toString…) is unknown too.
        const group = typeof serviceName === "string" ? serviceName.toLowerCase() : undefined;
        const client = group !== undefined && Object.hasOwn(clients, group) ? (clients as Record<string, GrpcStyleClient>)[group] : undefined;
        const fn = client && typeof methodName === "string" && Object.hasOwn(client, methodName) ? client[methodName] : undefined;
        if (typeof fn !== "function") return reject(serviceError(Code.Unimplemented, `csi-proxy has no method ${shownName(methodName)} in service ${shownName(serviceName)}`));
        fn(request, (error: ServiceError | null, response?: Record<string, unknown>) => (error ? reject(error) : resolve(response!)));
      });
    },
  };
}

/**
 * Constructs an in-process client (see module doc); `new InProcessCsiProxyClient(…)` and
 * `InProcessCsiProxyClient(…)` are the same. Throws InvalidArgument synchronously for a bad config
 * or options.
 */
export const InProcessCsiProxyClient = function InProcessCsiProxyClient(config?: InProcessConfig, options?: InProcessClientOptions) {
  return construct(config, options);
} as unknown as InProcessCsiProxyClientFactory;

/** The earlier, async form: the client once set-up succeeded; rejects with a bad config's or the set-up's coded error. */
export async function createInProcessClient(config?: InProcessConfig, options?: InProcessClientOptions): Promise<InProcessCsiProxyClient> {
  const client = construct(config, options);
  await client.ready;
  return client;
}
