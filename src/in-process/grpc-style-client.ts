/**
 * csi-proxy in-process, shaped like a grpc-js client built by @grpc/proto-loader with the options
 * Node.js drivers use (`keepCase: true, longs: String, enums: String, defaults: true, oneofs: true`),
 * so that a driver swaps its pipe client for this one by replacing the client construction
 * (in-process-client.ts builds these per group):
 *
 *   clients.filesystem.PathExists({ path }, (err, res) => …)     // grpc-js style, per group
 *   await proxy.executeRPC("filesystem", "PathExists", { path })  // promise on top
 *
 * A request is encoded into the bytes proto-loader's serializer would send (loader-wire.ts), held
 * to the daemon's 4 MiB message limit (RESOURCE_EXHAUSTED, the transport's text), and handed to the
 * daemon's own method boundary (in-process-engine.ts), whose decode refuses invalid UTF-8 as over
 * the socket; answers are decoded the way proto-loader decodes the daemon's bytes. Errors are
 * shaped as grpc-js's ServiceError: an Error with `code`, `details`, `metadata` and the message
 * `<code> <NAME>: <details>`; a status message is bounded as the transport bounds it.
 *
 * Where it differs from grpc-js over a pipe (docs/in-process.md, "Deliberate differences"):
 *  - call options of null/undefined (`Method(request, null, callback)`): grpc-js throws a
 *    TypeError; here the callback gets INVALID_ARGUMENT;
 *  - `metadata` of an error is an {@link InProcessMetadata}, not grpc-js's class (same `get`,
 *    `getMap`, `toJSON`, `clone`; the same content), and call metadata passed in is ignored
 *    (csi-proxy reads none);
 *  - a deadline (`options.deadline`, Date or ms since the epoch) or `call.cancel()` aborts the
 *    call's work; the callback gets DEADLINE_EXCEEDED "Deadline exceeded" / CANCELLED "Cancelled
 *    on client" once that work stopped (grpc-js answers at once, while the server still stops).
 */
import { fromBinary, type DescMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { Code, CsiProxyError } from "../errors.ts";
import { statusMessage } from "../rpc/grpc-service.ts";
import type { InProcessEngine } from "./in-process-engine.ts";
import { toLoaderShape } from "./loader-shape.ts";
import { loaderWireBytes } from "./loader-wire.ts";
import { DEFAULT_LIMITS, messageTooLarge } from "../rpc/transport-limits.ts";
import { catalog } from "../api/catalog.ts";
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

/** The daemon's largest request message, bytes (its transport's limit); above it RESOURCE_EXHAUSTED. */
const MAX_MESSAGE_BYTES = DEFAULT_LIMITS.maxMessageBytes;

const shortName = (desc: DescMessage) => desc.typeName.slice(desc.typeName.lastIndexOf(".") + 1);

/** proto-loader's serializer: an array is refused by name; the rest as protobufjs encodes it (loader-wire.ts). */
function serialize(desc: DescMessage, request: unknown): Uint8Array {
  if (Array.isArray(request)) throw new Error(`Failed to serialize message: expected object with ${shortName(desc)} structure, got array instead`);
  return loaderWireBytes(desc, request);
}

/** grpc-js's argument rule: the callback is the last of (metadata?, options?, callback). */
function callArguments(rest: unknown[]): { options: { deadline?: unknown }; callback: UnaryCallback; refused?: ServiceError } {
  const [a, b, c] = rest;
  if (typeof a === "function") return { options: {}, callback: a as UnaryCallback };
  if (typeof b === "function") {
    // grpc-js throws a TypeError for null/undefined options here; a deliberate difference: INVALID_ARGUMENT.
    if (a === null || a === undefined) return { options: {}, callback: b as UnaryCallback, refused: serviceError(Code.InvalidArgument, `call options: expected an object (or Metadata), got ${a === null ? "null" : "undefined"}`) };
    return { options: a instanceof InProcessMetadata || !(a instanceof Object) ? {} : (a as object), callback: b as UnaryCallback };
  }
  if (!(a instanceof Object && b instanceof Object && typeof c === "function")) throw new Error("Incorrect arguments passed");
  return { options: b as object, callback: c as UnaryCallback };
}

/** Deadline in ms since the epoch, or undefined for none (grpc-js: a Date or a number; Infinity = none). */
function deadlineOf(value: unknown): number | undefined {
  const ms = value instanceof Date ? value.getTime() : typeof value === "number" ? value : undefined;
  return ms === undefined || !Number.isFinite(ms) ? undefined : ms;
}

/**
 * The engine a client's calls run on, once set up. Set-up is started by the client's factory and
 * may still be running when a call comes (the call waits for it); if it failed, `failure` is the
 * error every call answers (nothing was done).
 */
export interface EngineSlot {
  readonly ready: Promise<InProcessEngine | undefined>;
  failure(): ServiceError | undefined;
}

function invoke(slot: EngineSlot, group: string, version: string, method: DescMethod, request: unknown, rest: unknown[]): InProcessUnaryCall {
  const { options, callback, refused } = callArguments(rest);
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
    if (refused) return answer(refused);
    let bytes: Uint8Array;
    try {
      bytes = serialize(method.input, request);
    } catch (e) {
      return answer(serviceError(Code.Internal, `Request message serialization failure: ${errorMessage(e)}`));
    }
    if (why) return answer(why);
    // The daemon's transport limit, with its text, on the bytes the wire would carry.
    if (bytes.length > MAX_MESSAGE_BYTES) return answer(serviceError(Code.ResourceExhausted, messageTooLarge(bytes.length, MAX_MESSAGE_BYTES), true));
    const engine = await slot.ready;
    if (why) return answer(why);
    const served = engine?.method(group, version, method.name);
    if (!served) return answer(slot.failure() ?? serviceError(Code.Unimplemented, `csi-proxy serves no ${group} ${version} ${method.name}`));
    try {
      const out = await served.call(bytes, { signal: controller.signal });
      if (why) return answer(why);
      answer(null, toLoaderShape(method.output, fromBinary(method.output, out) as unknown as Record<string, unknown>));
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

/**
 * The grpc-js-style client of one group/version, usable at once: its methods come from the
 * catalog; each call waits for the engine's set-up (see EngineSlot). An unserved group/version
 * throws UNIMPLEMENTED synchronously.
 */
export function grpcStyleClient(slot: EngineSlot, group: string, version: string): GrpcStyleClient {
  const service = typeof group === "string" && typeof version === "string" && Object.hasOwn(catalog, group) ? (catalog as unknown as Record<string, Record<string, DescService>>)[group] : undefined;
  const desc = service && Object.hasOwn(service, version) ? service[version] : undefined;
  if (!desc) throw serviceError(Code.Unimplemented, `csi-proxy serves no ${shownName(group)} ${shownName(version)}`);
  const client: GrpcStyleClient = Object.create(null);
  for (const m of desc.methods) {
    const fn = (request: unknown, ...rest: unknown[]) => invoke(slot, group, version, m, request, rest);
    client[m.name] = fn;
    client[camel(m.name)] = fn;
  }
  return Object.freeze(client);
}
