/**
 * `csi-proxy-ts/in-process`: csi-proxy without pipes for Node.js drivers running as HostProcess
 * containers. `createInProcessClient` is shaped like a grpc-js client built by @grpc/proto-loader
 * (democratic-csi's options), `createInProcessApi` is the typed, strict, versioned API.
 */
export { createInProcessClient, DEFAULT_VERSIONS, InProcessMetadata, type InProcessCsiProxyClient, type InProcessClientOptions, type GrpcStyleClient, type ServiceError, type UnaryCallback, type InProcessUnaryCall } from "./grpc-style-client.ts";
export { createInProcessApi, type InProcessApi, type TypedClient } from "./typed-api.ts";
export type { CallOptions } from "../util/call-scope.ts";
export { CsiProxyError, Code } from "../errors.ts";
export type { ProxyConfig } from "../proxy-config.ts";
