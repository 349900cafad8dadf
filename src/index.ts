/**
 * The package's public surface.
 *
 * For drivers: `connectGroup` (typed, version-negotiating client) and the generated messages under
 * `src/gen/<group>/<version>/api_pb.ts`.
 * For HostProcess containers that want csi-proxy in-process (no pipes, no gRPC): `createServices`
 * returns the six version-agnostic group services with this platform's host layer (arguments
 * checked at run time); their request and response types are in `src/groups/<group>/types.ts`, and
 * errors are `CsiProxyError`s with a gRPC code. `createInProcessApi` gives the versioned RPCs typed
 * by the generated messages (strict); `InProcessCsiProxyClient` (also `csi-proxy-ts/in-process`;
 * `createInProcessClient` is its async form) the same shaped as a grpc-js + proto-loader client,
 * constructed synchronously, for Node.js drivers replacing their pipe client (docs/in-process.md).
 * For embedding the daemon: `startDaemon`.
 */
export { connectGroup, type ConnectOptions, type GroupClient } from "./client/connect-group.ts";
export { createCheckedServices as createServices } from "./compose/compose.ts";
export { createInProcessApi, type InProcessApi, type TypedClient } from "./in-process/typed-api.ts";
export type { CallOptions } from "./util/call-scope.ts";
export { InProcessCsiProxyClient, createInProcessClient, type InProcessClientOptions } from "./in-process/in-process-client.ts";
export type { GrpcStyleClient, ServiceError } from "./in-process/grpc-style-client.ts";
export type { InProcessConfig } from "./in-process/in-process-config.ts";
export type { ProxyConfig } from "./proxy-config.ts";
export type { Services } from "./groups/services.ts";
export { startDaemon, type Daemon } from "./daemon.ts";
export { CsiProxyError, Code } from "./errors.ts";
export { catalog, allEndpoints, compareVersions, type Group, type VersionOf } from "./api/catalog.ts";
export { pipePath, socketPath, defaultSocketDir } from "./api/endpoint.ts";
export type { FilesystemService } from "./groups/filesystem/types.ts";
export type { DiskService, DiskLocation, DiskIds } from "./groups/disk/types.ts";
export type { VolumeService } from "./groups/volume/types.ts";
export type { SmbService } from "./groups/smb/types.ts";
export type { IscsiService, TargetPortal, AuthenticationType } from "./groups/iscsi/types.ts";
export type { SystemService } from "./groups/system/types.ts";
