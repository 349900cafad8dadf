/**
 * csi-proxy in-process, shaped like a grpc-js client built by @grpc/proto-loader with the options
 * Node.js drivers use (`keepCase: true, longs: String, enums: String, defaults: true, oneofs: true`),
 * so that a driver swaps its pipe client for this one by changing the constructor call:
 *
 *   clients.filesystem.PathExists({ path }, (err, res) => …)     // grpc-js style, per group
 *   await proxy.executeRPC("filesystem", "PathExists", { path })  // promise on top
 *
 * Requests are read as proto-loader's serializer reads them (loader-shape.ts), encoded, and handed
 * to the daemon's own method boundary (in-process-engine.ts); answers are decoded the way
 * proto-loader decodes the daemon's bytes. Errors are shaped as grpc-js's ServiceError: an Error
 * with `code`, `details`, `metadata` and the message `<code> <NAME>: <details>`.
 *
 * Where it differs from grpc-js over a pipe (documented in README "In-process library"):
 *  - `metadata` of an error is an {@link InProcessMetadata}, not grpc-js's class (same `get`,
 *    `getMap`, `toJSON`, `clone`; the same content), and call metadata passed in is ignored
 *    (csi-proxy reads none);
 *  - a deadline (`options.deadline`, Date or ms since the epoch) or `call.cancel()` aborts the
 *    call's work; the callback gets DEADLINE_EXCEEDED "Deadline exceeded" / CANCELLED "Cancelled
 *    on client" once that work stopped (grpc-js answers at once, while the server still stops);
 *  - a method that does not exist: grpc-js has no such property (TypeError when called); here too,
 *    and `executeRPC` rejects with UNIMPLEMENTED naming the method.
 */
import { fromBinary, toBinary, type DescMessage } from "@bufbuild/protobuf";
import { Code, CsiProxyError } from "../errors.ts";
import { statusMessage } from "../rpc/grpc-service.ts";
import type { ProxyConfig } from "../proxy-config.ts";
import type { Services } from "../groups/services.ts";
import { createInProcessEngine, type InProcessEngine, type InProcessMethod } from "./in-process-engine.ts";
import { fromLoaderShape, toLoaderShape } from "./loader-shape.ts";
import { groups, versionsOf, type Group } from "../api/catalog.ts";
import { shownName } from "./shown-name.ts";

/** grpc-js's `Status` names, by code. */
const STATUS_NAMES = [
  "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
] as const;

/**
 * The part of grpc-js's Metadata an error's reader uses. An error carries what grpc-js shows for
 * the daemon's trailers-only answer: `content-type: application/grpc` (nothing else travels).
 */
export class InProcessMetadata {
  readonly #map: Map<string, string[]>;
  constructor(entries: Record<string, string> = {}) {
    this.#map = new Map(Object.entries(entries).map(([k, v]) => [k.toLowerCase(), [v]]));
  }
  get(key: string): string[] {
    return [...(this.#map.get(String(key).toLowerCase()) ?? [])];
  }
  getMap(): Record<string, string> {
    return Object.fromEntries([...this.#map].map(([k, v]) => [k, v[0]]));
  }
  toJSON(): Record<string, string[]> {
    return Object.fromEntries([...this.#map].map(([k, v]) => [k, [...v]]));
  }
  clone(): InProcessMetadata {
    return new InProcessMetadata(this.getMap());
  }
}

/** grpc-js's ServiceError shape. */
export interface ServiceError extends Error {
  code: number;
  details: string;
  metadata: InProcessMetadata;
}

/** A ServiceError; `fromServer` adds the trailers grpc-js reports for a status the daemon sent (client-side statuses have none). */
export function serviceError(code: number, details: string, fromServer = false): ServiceError {
  const metadata = new InProcessMetadata(fromServer ? { "content-type": "application/grpc" } : {});
  return Object.assign(new Error(`${code} ${STATUS_NAMES[code] ?? code}: ${details}`), { code, details, metadata });
}

export type UnaryCallback = (error: ServiceError | null, response?: Record<string, unknown>) => void;

/** What a method returns, like grpc-js's ClientUnaryCall: `cancel()` ends the call with CANCELLED. */
export interface InProcessUnaryCall {
  cancel(): void;
  getPeer(): string;
}

/** One group/version: `Method(request, [metadata], [options], callback)` per RPC, under its proto name and its camelCase name. */
export type GrpcStyleClient = Record<string, (request: unknown, ...rest: unknown[]) => InProcessUnaryCall>;

const errorMessage = (e: unknown) => (e instanceof Error ? e.message : String(e));

const shortName = (desc: DescMessage) => desc.typeName.slice(desc.typeName.lastIndexOf(".") + 1);

/** proto-loader's serializer: an array is refused by name; the rest as protobufjs fromObject (loader-shape.ts). */
function serialize(desc: DescMessage, request: unknown): Uint8Array {
  if (Array.isArray(request)) throw new Error(`Failed to serialize message: expected object with ${shortName(desc)} structure, got array instead`);
  return toBinary(desc, fromLoaderShape(desc, request) as never);
}

/** grpc-js's argument rule: the callback is the last of (metadata?, options?, callback). */
function callArguments(rest: unknown[]): { options: { deadline?: unknown }; callback: UnaryCallback } {
  const [a, b, c] = rest;
  if (typeof a === "function") return { options: {}, callback: a as UnaryCallback };
  if (typeof b === "function") return { options: a instanceof InProcessMetadata || !(a instanceof Object) ? {} : (a as object), callback: b as UnaryCallback };
  if (!(a instanceof Object && b instanceof Object && typeof c === "function")) throw new Error("Incorrect arguments passed");
  return { options: b as object, callback: c as UnaryCallback };
}

/** Deadline in ms since the epoch, or undefined for none (grpc-js: a Date or a number; Infinity = none). */
function deadlineOf(value: unknown): number | undefined {
  const ms = value instanceof Date ? value.getTime() : typeof value === "number" ? value : undefined;
  return ms === undefined || !Number.isFinite(ms) ? undefined : ms;
}

function invoke(method: InProcessMethod, request: unknown, rest: unknown[]): InProcessUnaryCall {
  const { options, callback } = callArguments(rest);
  const controller = new AbortController();
  let why: ServiceError | undefined;
  const stop = (error: ServiceError) => {
    why ??= error;
    controller.abort(error);
  };
  const deadline = deadlineOf(options.deadline);
  const timer = deadline === undefined ? undefined : setTimeout(() => stop(serviceError(Code.DeadlineExceeded, "Deadline exceeded")), Math.max(0, deadline - Date.now()));
  let answered = false;
  const answer = (error: ServiceError | null, response?: Record<string, unknown>) => {
    if (answered) return;
    answered = true;
    clearTimeout(timer);
    if (error) callback(error);
    else callback(null, response);
  };
  void (async () => {
    await Promise.resolve(); // answer asynchronously, as grpc-js does, even for the synchronous checks
    let bytes: Uint8Array;
    try {
      bytes = serialize(method.descriptor.input, request);
    } catch (e) {
      return answer(serviceError(Code.Internal, `Request message serialization failure: ${errorMessage(e)}`));
    }
    if (why) return answer(why);
    try {
      const out = await method.call(bytes, { signal: controller.signal });
      if (why) return answer(why);
      answer(null, toLoaderShape(method.descriptor.output, fromBinary(method.descriptor.output, out) as unknown as Record<string, unknown>));
    } catch (e) {
      if (why) return answer(why);
      const err = CsiProxyError.from(e);
      answer(serviceError(err.code, statusMessage(err.message), true));
    }
  })();
  return {
    cancel: () => stop(serviceError(Code.Canceled, "Cancelled on client")),
    getPeer: () => "in-process",
  };
}

const camel = (name: string) => name.charAt(0).toLowerCase() + name.slice(1);

/** The grpc-js-style client of one group/version of `engine`. */
export function grpcStyleClient(engine: InProcessEngine, group: string, version: string): GrpcStyleClient {
  const service = engine.service(group, version);
  if (!service) throw serviceError(Code.Unimplemented, `csi-proxy serves no ${shownName(group)} ${shownName(version)}`);
  const client: GrpcStyleClient = Object.create(null);
  for (const m of service.methods) {
    const method = engine.method(group, version, m.name)!;
    const fn = (request: unknown, ...rest: unknown[]) => invoke(method, request, rest);
    client[m.name] = fn;
    client[camel(m.name)] = fn;
  }
  return Object.freeze(client);
}

/** democratic-csi's defaults: the group versions its pipe client dials. */
export const DEFAULT_VERSIONS: Record<Group, string> = { filesystem: "v1", disk: "v1", volume: "v1", smb: "v1", system: "v1alpha1", iscsi: "v1alpha2" };

export interface InProcessClientOptions {
  /** Per group, the version to use (as the pipe client's `services` option; `connection` is ignored). */
  services?: Partial<Record<Group, { version?: string }>>;
  /** Tests: the group services to use instead of this platform's. */
  groupServices?: Services;
}

/** The pipe client's counterpart: `clients[group]` at the chosen versions, `client(group, version)` for any, `executeRPC` on top. */
export interface InProcessCsiProxyClient {
  readonly clients: Readonly<Record<Group, GrpcStyleClient>>;
  client(group: string, version: string): GrpcStyleClient;
  /** Calls `clients[serviceName.toLowerCase()][methodName](request)`; resolves with the response, rejects with the ServiceError. */
  executeRPC(serviceName: string, methodName: string, request?: unknown): Promise<Record<string, unknown>>;
}

export async function createInProcessClient(config: ProxyConfig, options: InProcessClientOptions = {}): Promise<InProcessCsiProxyClient> {
  const engine = await createInProcessEngine(config, options.groupServices);
  const clients = {} as Record<Group, GrpcStyleClient>;
  for (const group of groups) {
    const version = options.services?.[group]?.version ?? DEFAULT_VERSIONS[group];
    if (!(versionsOf(group) as string[]).includes(version)) throw new CsiProxyError(Code.InvalidArgument, `csi-proxy serves no ${group} ${version}; versions: ${versionsOf(group).join(", ")}`);
    clients[group] = grpcStyleClient(engine, group, version);
  }
  const byVersion = new Map<string, GrpcStyleClient>();
  return {
    clients: Object.freeze(clients),
    client(group, version) {
      const key = `${group}/${version}`;
      let c = byVersion.get(key);
      if (!c) byVersion.set(key, (c = grpcStyleClient(engine, group, version)));
      return c;
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
