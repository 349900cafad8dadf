// WINDOW_UPDATE against src/rpc/send-scheduler.ts and src/rpc/connection-policy.ts, in process over
// a fake socket (so only the server's work is timed): a frame costs the same with 1 000 answers
// parked for window as with 10 (each bound relative to that control, measured in the same run), a
// flood of updates that no reading client sends ends in GOAWAY(ENHANCE_YOUR_CALM), and a client
// that sends one update per DATA frame it reads is never cut off.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { GrpcConnection } from "./grpc-connection.ts";
import type { UnaryMethod } from "./grpc-service.ts";
import { OutboundBudget } from "./outbound-budget.ts";
import { CLIENT_PREFACE, FakeH2Socket, settingsFrame, unaryCallFrames, windowUpdateFrame } from "../../test/doubles/fake-h2-socket.ts";

const SETTINGS_INITIAL_WINDOW_SIZE = 4;
const TYPE_DATA = 0, TYPE_HEADERS = 1, TYPE_GOAWAY = 7, ENHANCE_YOUR_CALM = 0xb;
const turn = () => new Promise((r) => setImmediate(r));

function server(answerBytes: number) {
  const socket = new FakeH2Socket();
  const method: UnaryMethod = { path: "/t.T/M", call: async () => new Uint8Array(answerBytes) };
  const big = 256 * 1024 * 1024;
  new GrpcConnection(socket.duplex, new Map([[method.path, method]]), {
    limits: { maxConcurrentStreams: 5000, maxConnectionOutboundBytes: big }, outboundBudget: new OutboundBudget(big),
  });
  return socket;
}

/** A connection with `parked` answers of 4 000 bytes, each waiting for its stream's window (the client set it to 0). */
async function parkedConnection(parked: number) {
  const socket = server(4000);
  socket.feed(Buffer.concat([CLIENT_PREFACE, settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 0]]), windowUpdateFrame(0, 1 << 30)]));
  for (let i = 0; i < parked; i++) socket.feed(unaryCallFrames(2 * i + 1, "/t.T/M"));
  for (let i = 0; i < 5; i++) await turn();
  const frames = socket.frames();
  assert.equal(frames.filter((f) => f.type === TYPE_HEADERS).length, parked, "every answer's HEADERS went out");
  assert.equal(frames.filter((f) => f.type === TYPE_DATA).length, 0, "no DATA: every answer is parked");
  return { socket, last: 2 * parked - 1 };
}

const goaways = (socket: FakeH2Socket) =>
  socket.frames().filter((f) => f.type === TYPE_GOAWAY).map((f) => ({ code: f.payload.readUInt32BE(4), debug: f.payload.subarray(8).toString() }));

describe("WINDOW_UPDATE: bounded work per frame, floods bounded (send-scheduler.ts, connection-policy.ts)", () => {
  it("WINDOW_UPDATE(+1) on the last of 1 000 parked answers costs within 3× of the same with 10 parked (same run)", async () => {
    const many = await parkedConnection(1000), few = await parkedConnection(10);
    const batch = 100, batches = 15;
    const updates = (id: number) => Buffer.concat(Array.from({ length: batch }, () => windowUpdateFrame(id, 1)));
    const time = (c: { socket: FakeH2Socket; last: number }) => {
      const bytes = updates(c.last);
      const t0 = performance.now();
      c.socket.feed(bytes);
      return (performance.now() - t0) / batch;
    };
    const perFrame = { many: [] as number[], few: [] as number[] };
    for (let i = 0; i < batches; i++) {
      // Interleaved, so a burst of load elsewhere hits both alike.
      perFrame.many.push(time(many));
      perFrame.few.push(time(few));
      await turn();
    }
    const median = (xs: number[]) => xs.toSorted((a, b) => a - b)[xs.length >> 1];
    const m = median(perFrame.many), f = median(perFrame.few);
    console.log(`# per WINDOW_UPDATE: ${(m * 1000).toFixed(1)} µs with 1 000 parked, ${(f * 1000).toFixed(1)} µs with 10 parked`);
    assert.ok(m <= 3 * f + 0.005, `${(m * 1000).toFixed(1)} µs per frame with 1 000 parked vs ${(f * 1000).toFixed(1)} µs with 10`);
    // Every +1 let one byte of the last answer out, and nothing else.
    for (const c of [many, few]) {
      const data = c.socket.frames().filter((fr) => fr.type === TYPE_DATA);
      assert.ok(data.every((fr) => fr.id === c.last && fr.payload.length === 1));
      assert.equal(data.length, batch * batches);
    }
  });

  it("a flood of WINDOW_UPDATE on stream 0 with nothing to send → GOAWAY(ENHANCE_YOUR_CALM, too_many_glitches)", async () => {
    const socket = server(10);
    socket.feed(Buffer.concat([CLIENT_PREFACE, settingsFrame([])]));
    socket.feed(Buffer.concat(Array.from({ length: 5000 }, () => windowUpdateFrame(0, 1))));
    assert.deepEqual(goaways(socket), [{ code: ENHANCE_YOUR_CALM, debug: "too_many_glitches" }]);
  });

  it("a flood of WINDOW_UPDATE on a stream whose answer waits for the connection's window → GOAWAY(ENHANCE_YOUR_CALM)", async () => {
    const socket = server(200_000);
    socket.feed(Buffer.concat([CLIENT_PREFACE, settingsFrame([]), unaryCallFrames(1, "/t.T/M")]));
    for (let i = 0; i < 5; i++) await turn();
    socket.frames();
    socket.feed(Buffer.concat(Array.from({ length: 5000 }, () => windowUpdateFrame(1, 1))));
    assert.deepEqual(goaways(socket), [{ code: ENHANCE_YOUR_CALM, debug: "too_many_glitches" }]);
  });

  it("a client that returns window for every DATA frame it reads (stream and connection) is never cut off", async () => {
    const socket = server(300_000);
    const streams = 40;
    socket.feed(Buffer.concat([CLIENT_PREFACE, settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 16384]])]));
    for (let i = 0; i < streams; i++) socket.feed(unaryCallFrames(2 * i + 1, "/t.T/M"));
    let answered = 0, updates = 0;
    for (let round = 0; round < 2000 && answered < streams; round++) {
      await turn();
      const frames = socket.frames();
      assert.deepEqual(frames.filter((f) => f.type === TYPE_GOAWAY), []);
      const back: Buffer[] = [];
      for (const f of frames) {
        if (f.type === TYPE_HEADERS && f.flags & 1) answered++;
        if (f.type === TYPE_DATA && f.payload.length) back.push(windowUpdateFrame(f.id, f.payload.length), windowUpdateFrame(0, f.payload.length));
      }
      updates += back.length;
      if (back.length) socket.feed(Buffer.concat(back));
    }
    assert.equal(answered, streams);
    assert.ok(updates > 1500, `the client sent ${updates} WINDOW_UPDATEs (more than the glitch burst)`);
  });
});
