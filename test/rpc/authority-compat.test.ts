// Old grpc-go clients send the raw pipe path as :authority; these tests speak raw HTTP/2 to a real
// endpoint served by serveEndpoints (src/rpc/grpc-connection.ts) and check every framing variant.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import * as net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import * as http2 from "node:http2";
import { create, toBinary, fromBinary } from "@bufbuild/protobuf";
import { guardedObserver } from "../helpers/internal-guard.ts";
import { serveEndpoints, type ServingEndpoints } from "../../src/rpc/serve-endpoints.ts";
import { Filesystem, PathExistsRequestSchema, PathExistsResponseSchema } from "../../src/gen/filesystem/v1/api_pb.ts";
import { filesystemAdapters } from "../../src/groups/filesystem/adapters.ts";
import { RawH2Client, grpcHeaders } from "../helpers/raw-h2-client.ts";
import type { FilesystemService } from "../../src/groups/filesystem/types.ts";

const RAW = "\\\\.\\pipe\\csi-proxy-filesystem-v1";
const ENCODED = "%5C%5C.%5Cpipe%5Ccsi-proxy-filesystem-v1";
const PATH = "/v1.Filesystem/PathExists";
const noop = { start: () => () => {} };
const service = { pathExists: async ({ path: p }: { path: string }) => ({ exists: p.endsWith("yes") }) } as unknown as FilesystemService;
const request = (p: string) => Buffer.from(toBinary(PathExistsRequestSchema, create(PathExistsRequestSchema, { path: p })));
const exists = (body: Buffer) => fromBinary(PathExistsResponseSchema, body).exists;

describe("serving old and new Go clients", () => {
  let dir: string, serving: ServingEndpoints, address: string;
  const guard = guardedObserver(noop);
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-authority-"));
    address = path.join(dir, "fs.sock");
    serving = await serveEndpoints(
      [{ group: "filesystem", version: "v1", address, service: Filesystem, handlers: filesystemAdapters.v1(service) as never }],
      { observer: guard },
    );
  });
  after(async () => {
    await serving.stop();
    guard.check();
    rmSync(dir, { recursive: true, force: true });
  });

  const cases: [string, Parameters<RawH2Client["call"]>[2], string][] = [
    ["raw authority (grpc-go < 1.57)", {}, RAW],
    ["encoded authority (grpc-go ≥ 1.57)", {}, ENCODED],
    ["raw authority split over CONTINUATION frames with padding and priority", { pieces: 3, padding: 7, priority: true }, RAW],
    ["encoded authority split over CONTINUATION frames with padding", { pieces: 4, padding: 3 }, ENCODED],
  ];
  for (const [name, options, authority] of cases) {
    it(name, async () => {
      const client = new RawH2Client(address);
      await client.ready;
      const yes = await client.call(grpcHeaders(PATH, authority), request("/k/yes"), options);
      assert.equal(yes.status, 0, `status ${yes.status} ${yes.message} reset=${yes.reset}`);
      assert.equal(exists(yes.body), true);
      const no = await client.call(grpcHeaders(PATH, authority), request("/k/no"), options);
      assert.equal(exists(no.body), false);
      client.close();
    });
  }

  it("keeps the HPACK dynamic table in sync: later requests reference the indexed raw authority", async () => {
    const client = new RawH2Client(address);
    await client.ready;
    const first = await client.call(grpcHeaders(PATH, RAW, "index"), request("/a/yes"));
    assert.equal(first.status, 0, first.message);
    for (let i = 0; i < 5; i++) {
      const next = await client.call(grpcHeaders(PATH, RAW, 62), request(i % 2 ? "/b/yes" : "/b/no"));
      assert.equal(next.status, 0, `request ${i}: ${next.message} reset=${next.reset}`);
      assert.equal(exists(next.body), i % 2 === 1);
    }
    client.close();
  });

  // A slow client may take up to handshakeTimeoutMs (20 s, src/rpc/transport-limits.ts) to send its
  // preface; test/rpc/transport-limits.test.ts checks that it is closed after that.
  it("tolerates a connection that has not sent the preface yet while others are served", async () => {
    const idle = net.connect(address);
    await new Promise((resolve) => idle.once("connect", resolve));
    const client = new RawH2Client(address);
    await client.ready;
    assert.equal((await client.call(grpcHeaders(PATH, RAW), request("/yes"))).status, 0);
    client.close();
    assert.equal(idle.destroyed, false);
    idle.destroy();
  });
});

describe("Node's own HTTP/2 server", () => {
  it("resets a raw-authority stream (why src/rpc speaks HTTP/2 itself)", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-node-h2-"));
    const server = http2.createServer();
    let handled = 0;
    server.on("stream", (stream) => {
      handled++;
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { endStream: true });
    });
    const listener = net.createServer((s) => server.emit("connection", s)).listen(path.join(dir, "s"));
    await new Promise((r) => listener.once("listening", r));
    const client = new RawH2Client(path.join(dir, "s"));
    await client.ready;
    const res = await client.call(grpcHeaders(PATH, RAW), request("/yes"));
    assert.equal(res.reset, 1, "expected RST_STREAM(PROTOCOL_ERROR)");
    assert.equal(handled, 0);
    client.close();
    listener.close();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
