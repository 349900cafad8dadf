/**
 * `csi-proxy-ts/in-process`: csi-proxy without pipes for Node.js drivers running as HostProcess
 * containers. `InProcessCsiProxyClient` (plain call or `new`; `createInProcessClient` is its async
 * form) is shaped like a grpc-js client built by @grpc/proto-loader (democratic-csi's options) and
 * constructed as one, synchronously; `createInProcessApi` is the typed, strict, versioned API.
 * docs/in-process.md describes both.
 */
export { InProcessCsiProxyClient, createInProcessClient, DEFAULT_VERSIONS, type InProcessClientOptions, type InProcessCsiProxyClientFactory } from "./in-process-client.ts";
export { InProcessMetadata, type GrpcStyleClient, type ServiceError, type UnaryCallback, type InProcessUnaryCall } from "./grpc-style-client.ts";
export type { InProcessConfig } from "./in-process-config.ts";
export { createInProcessApi, type InProcessApi, type TypedClient } from "./typed-api.ts";
export type { CallOptions } from "../util/call-scope.ts";
export { CsiProxyError, Code } from "../errors.ts";
export type { ProxyConfig } from "../proxy-config.ts";
