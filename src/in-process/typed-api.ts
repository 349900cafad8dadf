/**
 * The typed, versioned in-process API for TypeScript callers: per group and version, one async
 * method per RPC under its generated name (`api.filesystem.v1.pathExists({ path })`), taking the
 * protobuf-es init shape of the request and resolving with the protobuf-es response message —
 * the daemon's versioned adapters and services (in-process-engine.ts), without the wire's
 * leniency. Strict: every bad input is a CsiProxyError with a gRPC code before anything runs —
 * a request that is not an object of the message (null, wrong field types, unknown fields:
 * strict-message.ts) → InvalidArgument; options that are not `{ signal?: AbortSignal }` →
 * InvalidArgument; an unknown group, version or method (`api.call`) → Unimplemented; a signal
 * already aborted → Canceled, nothing done. An omitted request is the empty message.
 * Errors of the call itself are the service's CsiProxyErrors, with the codes the daemon sends.
 */
import { create, fromBinary, toBinary, type DescMessage, type DescService, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { CsiProxyError, Code } from "../errors.ts";
import { checkInProcessConfig, type InProcessConfig } from "./in-process-config.ts";
import type { Services } from "../groups/services.ts";
import { groups, versionsOf, type Group, type ServiceOf, type VersionOf } from "../api/catalog.ts";
import { createInProcessEngine, type InProcessEngine } from "./in-process-engine.ts";
import { checkMessage } from "./strict-message.ts";
import { checkCallOptions, type CallOptions } from "../util/call-scope.ts";
import { shownName } from "./shown-name.ts";
import { statusMessage } from "../rpc/grpc-service.ts";

type Method<I extends DescMessage, O extends DescMessage> = (request?: MessageInitShape<I>, options?: CallOptions) => Promise<MessageShape<O>>;

/** One group/version: its RPCs by generated (camelCase) name. */
export type TypedClient<S extends DescService> = {
  readonly [K in keyof S["method"]]: S["method"][K] extends { input: infer I extends DescMessage; output: infer O extends DescMessage } ? Method<I, O> : never;
};

export type InProcessApi = {
  readonly [G in Group]: { readonly [V in VersionOf<G>]: TypedClient<ServiceOf<G, V>> };
} & {
  /** Any RPC by group, version and method name (proto `PathExists` or generated `pathExists`). */
  call(group: string, version: string, method: string, request?: unknown, options?: CallOptions): Promise<unknown>;
};

async function callTyped(engine: InProcessEngine, group: string, version: string, name: string, request: unknown, options: unknown): Promise<unknown> {
  const method = engine.method(group, version, name);
  if (!method) throw new CsiProxyError(Code.Unimplemented, `csi-proxy has no method ${shownName(name)} in ${shownName(group)} ${shownName(version)}`);
  const signal = checkCallOptions(options) ?? new AbortController().signal;
  const input = method.descriptor.input;
  const init = request === undefined ? {} : request;
  checkMessage(input, init);
  if (signal.aborted) throw new CsiProxyError(Code.Canceled, `${group} ${version} ${method.descriptor.name}: cancelled before it started; nothing was done`);
  const bytes = toBinary(input, create(input, init as never));
  let out: Uint8Array;
  try {
    out = await method.call(bytes, { signal });
  } catch (e) {
    throw bounded(CsiProxyError.from(e));
  }
  return fromBinary(method.descriptor.output, out);
}

/** `error` with its message bounded as the transport bounds a status message (statusMessage); the same error when short enough. */
function bounded(error: CsiProxyError): CsiProxyError {
  const message = statusMessage(error.message);
  return message === error.message ? error : new CsiProxyError(error.code, message);
}

/** Builds the typed API; a bad config (in-process-config.ts) rejects with InvalidArgument naming the option, before anything is set up. */
export async function createInProcessApi(config?: InProcessConfig, options: { groupServices?: Services } = {}): Promise<InProcessApi> {
  const engine = await createInProcessEngine(checkInProcessConfig(config), options?.groupServices);
  const api: Record<string, unknown> = {};
  for (const group of groups) {
    const versions: Record<string, unknown> = {};
    for (const version of versionsOf(group)) {
      const service = engine.service(group, version)!;
      const client: Record<string, unknown> = {};
      for (const m of service.methods) client[m.localName] = (request?: unknown, opts?: unknown) => callTyped(engine, group, version, m.name, request, opts);
      versions[version] = Object.freeze(client);
    }
    api[group] = Object.freeze(versions);
  }
  api.call = (group: string, version: string, method: string, request?: unknown, opts?: unknown) => {
    const service = typeof group === "string" && typeof version === "string" ? engine.service(group, version) : undefined;
    const m = service?.methods.find((d) => d.name === method || d.localName === method);
    return callTyped(engine, shownName(group), shownName(version), m?.name ?? shownName(method), request, opts);
  };
  return Object.freeze(api) as InProcessApi;
}
