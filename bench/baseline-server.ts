// Baseline for the PathExists benchmark: the same RPC on a bare grpc-js server (bindAsync on a
// Unix socket, no authority shim, no path policy, no observer/metrics), doing the same lstat.
import * as grpc from "@grpc/grpc-js";
import { lstat } from "node:fs/promises";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { PathExistsRequestSchema, PathExistsResponseSchema } from "../src/gen/filesystem/v1/api_pb.ts";

const socket = process.argv[2];
const server = new grpc.Server();
server.addService(
  {
    pathExists: {
      path: "/v1.Filesystem/PathExists",
      requestStream: false,
      responseStream: false,
      requestSerialize: (m: any) => Buffer.from(toBinary(PathExistsRequestSchema, m)),
      requestDeserialize: (b: Buffer) => fromBinary(PathExistsRequestSchema, b),
      responseSerialize: (m: any) => Buffer.from(toBinary(PathExistsResponseSchema, m)),
      responseDeserialize: (b: Buffer) => fromBinary(PathExistsResponseSchema, b),
    },
  },
  {
    pathExists: (call: grpc.ServerUnaryCall<{ path: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      lstat(call.request.path).then(
        () => cb(null, create(PathExistsResponseSchema, { exists: true })),
        () => cb(null, create(PathExistsResponseSchema, { exists: false })),
      );
    },
  },
);
server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) throw err;
  process.stderr.write("baseline ready\n");
});
process.on("SIGTERM", () => server.forceShutdown());
