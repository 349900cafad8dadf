// The request-data budget on whole connections (src/rpc/request-body.ts through grpc-connection.ts),
// in process over fake sockets: a declared size alone does not hold the process's budget, and a
// partial body that stops progressing is answered RESOURCE_EXHAUSTED (named) and releases it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import hpack from "hpack.js";
import { ByteBudget } from "./byte-budget.ts";
import { GrpcConnection } from "./grpc-connection.ts";
import type { UnaryMethod } from "./grpc-service.ts";
import type { TransportLimits } from "./transport-limits.ts";
import { CLIENT_PREFACE, FakeH2Socket, settingsFrame, type WrittenFrame } from "../../test/doubles/fake-h2-socket.ts";
import { encodeHeaderBlock, frame, grpcHeaders } from "../../test/helpers/raw-h2-client.ts";

const MiB = 1024 * 1024;
const turn = () => new Promise((r) => setImmediate(r));

/** The method answers with the request's length (4 bytes, big-endian). */
const method: UnaryMethod = {
  path: "/t.T/M",
  call: async (request) => {
    const out = Buffer.alloc(4);
    out.writeUInt32BE(request.length);
    return out;
  },
};

function connection(processBudget: ByteBudget, limits: Partial<TransportLimits> = {}) {
  const socket = new FakeH2Socket();
  new GrpcConnection(socket.duplex, new Map([[method.path, method]]), { processBudget, limits });
  socket.feed(Buffer.concat([CLIENT_PREFACE, settingsFrame([])]));
  return socket;
}

const prefix = (declared: number) => {
  const out = Buffer.alloc(5);
  out.writeUInt32BE(declared, 1);
  return out;
};
const headers = (id: number) => frame(0x1, 0x4, id, encodeHeaderBlock(grpcHeaders(method.path, "localhost")));

/** grpc-status and grpc-message of each stream's trailers, and the RST_STREAM codes, from the frames written. */
function outcome(frames: WrittenFrame[]) {
  const decoder = hpack.decompressor.create({ table: { maxSize: 4096 } });
  const status: Record<number, { code: number; message: string; data: Buffer[] }> = {};
  const resets: Record<number, number> = {};
  for (const f of frames) {
    if (f.type === 0x1) {
      decoder.write(f.payload);
      decoder.execute();
      const s = (status[f.id] ??= { code: -1, message: "", data: [] });
      for (let h = decoder.read(); h; h = decoder.read()) {
        if (h.name === "grpc-status") s.code = Number(h.value);
        if (h.name === "grpc-message") s.message = decodeURIComponent(h.value);
      }
    } else if (f.type === 0x0) (status[f.id] ??= { code: -1, message: "", data: [] }).data.push(f.payload);
    else if (f.type === 0x3) resets[f.id] = f.payload.readUInt32BE(0);
  }
  return { status, resets };
}

describe("request-data budget held by bytes and by time (request-body.ts via grpc-connection.ts)", () => {
  it("4 connections × 10 bytes of a declared 4 MiB message: another client's 20 KB body in 2 DATA frames is answered", async () => {
    const budget = new ByteBudget(16 * MiB);
    const holders = Array.from({ length: 4 }, () => connection(budget));
    for (const h of holders) h.feed(Buffer.concat([headers(1), frame(0x0, 0, 1, Buffer.concat([prefix(4 * MiB), Buffer.alloc(5)]))]));
    assert.ok(budget.used <= 4 * 20, `${budget.used} bytes charged for 40 bytes received`);
    const client = connection(budget);
    const body = Buffer.concat([prefix(20_000), Buffer.alloc(20_000, 7)]);
    client.feed(Buffer.concat([headers(1), frame(0x0, 0, 1, body.subarray(0, 10_000)), frame(0x0, 0x1, 1, body.subarray(10_000))]));
    for (let i = 0; i < 3; i++) await turn();
    const { status } = outcome(client.frames());
    assert.equal(status[1]?.code, 0, JSON.stringify(status[1]));
    assert.equal(Buffer.concat(status[1].data).readUInt32BE(5), 20_000);
    for (const h of holders) h.destroy();
  });

  it("a partial body that does not progress for requestBodyStallMs → RESOURCE_EXHAUSTED naming the stall, RST_STREAM, budget returned", async () => {
    const budget = new ByteBudget(16 * MiB);
    const socket = connection(budget, { requestBodyStallMs: 200 });
    const sent = Buffer.concat([prefix(MiB), Buffer.alloc(70_000)]);
    const pieces = [];
    for (let p = 0; p < sent.length; p += 16_384) pieces.push(frame(0x0, 0, 1, sent.subarray(p, p + 16_384)));
    socket.feed(Buffer.concat([headers(1), ...pieces]));
    assert.ok(budget.used > 0);
    socket.frames();
    const started = performance.now();
    while (budget.used > 0 && performance.now() - started < 5000) await new Promise((r) => setTimeout(r, 20));
    const waited = performance.now() - started;
    assert.equal(budget.used, 0, "the body's charge is returned");
    assert.ok(waited >= 190, `released after ${waited.toFixed(0)} ms, before the stall limit`);
    await turn();
    const { status, resets } = outcome(socket.frames());
    assert.equal(status[1]?.code, 8, JSON.stringify(status));
    assert.match(status[1].message, /^request body stalled: 70005 bytes received, less than 65536 more in 200 ms/);
    assert.equal(resets[1], 0, "RST_STREAM(NO_ERROR): the client stops sending");
    socket.destroy();
  });
});
