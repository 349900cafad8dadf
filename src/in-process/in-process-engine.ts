/**
 * The served methods without the wire: the same group services (createServices: path policy,
 * refusals, locks, state directory, host layer), the same versioned adapters (buildEndpoints) and
 * the same decode → handler → encode boundary (unaryMethods) as the daemon, called directly. What
 * a call answers is what the daemon would send for the same request bytes.
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { buildEndpoints, createServices } from "../compose/compose.ts";
import type { ProxyConfig } from "../proxy-config.ts";
import type { Services } from "../groups/services.ts";
import { unaryMethods, type UnaryMethod } from "../rpc/grpc-service.ts";

export interface InProcessMethod {
  readonly descriptor: DescMethod;
  /** Encoded request → encoded response; rejects only with a CsiProxyError (see UnaryMethod). */
  readonly call: UnaryMethod["call"];
}

export interface InProcessEngine {
  readonly services: Services;
  /** The generated service of a group/version; undefined when not served. */
  service(group: string, version: string): DescService | undefined;
  /** One method by group, version and proto method name (`PathExists`); undefined when not served. */
  method(group: string, version: string, name: string): InProcessMethod | undefined;
}

const silent = { start: () => () => {} };

/** Builds the engine over `services` (tests: given, or a set-up that settles later) or over this platform's services for `config`. */
export async function createInProcessEngine(config: ProxyConfig, services?: Services | Promise<Services>): Promise<InProcessEngine> {
  const svc = services ? await services : await createServices(config);
  const byKey = new Map<string, { service: DescService; methods: Map<string, InProcessMethod> }>();
  for (const endpoint of buildEndpoints(svc, config)) {
    const unary = unaryMethods(endpoint.service, endpoint.handlers, silent);
    const methods = new Map<string, InProcessMethod>();
    for (const descriptor of endpoint.service.methods) {
      const m = unary.get(`/${endpoint.service.typeName}/${descriptor.name}`);
      if (m) methods.set(descriptor.name, { descriptor, call: (bytes, context) => m.call(bytes, context) });
    }
    byKey.set(`${endpoint.group}/${endpoint.version}`, { service: endpoint.service, methods });
  }
  const own = (key: string) => byKey.get(key);
  return {
    services: svc,
    service: (group, version) => own(`${group}/${version}`)?.service,
    method: (group, version, name) => {
      const methods = own(`${group}/${version}`)?.methods;
      return methods && typeof name === "string" ? methods.get(name) : undefined;
    },
  };
}
