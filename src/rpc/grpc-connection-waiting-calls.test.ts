// Calls beyond what may run at once on one connection, and keepalive PINGs while calls are in
// flight (src/rpc/grpc-connection.ts, outbound-budget.ts, connection-policy.ts), in process over a
// fake socket: calls past the outbound budget are read and queued, so their deadlines are answered
// on time and none is refused below the advertised MAX_CONCURRENT_STREAMS; a client that pings
// while its call hangs is not cut off.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import hpack from "hpack.js";
import { Code, CsiProxyError } from "../errors.ts";
import { GrpcConnection } from "./grpc-connection.ts";
import type { UnaryMethod } from "./grpc-service.ts";
import { OutboundBudget } from "./outbound-budget.ts";
import { CLIENT_PREFACE, FakeH2Socket, settingsFrame, unaryCallFrames, type WrittenFrame } from "../../test/doubles/fake-h2-socket.ts";
import { frame } from "../../test/helpers/raw-h2-client.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Hangs until its signal aborts, then fails with the abort's reason (as a host call that stops on cancel). */
const hang: UnaryMethod = {
  path: "/t.T/Hang",
  call: (_request, ctx) => new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason as CsiProxyError))),
};

/** Counts the handlers running at once; each takes 20 ms and answers 100 bytes. */
const load = { running: 0, peak: 0 };
const busy: UnaryMethod = {
  path: "/t.T/Busy",
  call: async () => {
    load.peak = Math.max(load.peak, ++load.running);
    await sleep(20);
    load.running--;
    return new Uint8Array(100);
  },
};

function connection(limits: Record<string, number> = {}, settings: [number, number][] = []) {
  const socket = new FakeH2Socket();
  new GrpcConnection(socket.duplex, new Map([[hang.path, hang], [busy.path, busy]]), { limits, outboundBudget: new OutboundBudget(1 << 30) });
  socket.feed(Buffer.concat([CLIENT_PREFACE, settingsFrame(settings)]));
  return socket;
}

/** Each stream's grpc-status (trailers), the RST_STREAM codes and GOAWAY debug texts, from frames written. */
function read(frames: WrittenFrame[], decoder = hpack.decompressor.create({ table: { maxSize: 4096 } })) {
  const status = new Map<number, number>(), resets = new Map<number, number>(), goaway: string[] = [];
  for (const f of frames) {
    if (f.type === 0x1) {
      decoder.write(f.payload);
      decoder.execute();
      for (let h = decoder.read(); h; h = decoder.read()) if (h.name === "grpc-status") status.set(f.id, Number(h.value));
    } else if (f.type === 0x3) resets.set(f.id, f.payload.readUInt32BE(0));
    else if (f.type === 0x7) goaway.push(f.payload.subarray(8).toString());
  }
  return { status, resets, goaway };
}

describe("calls beyond what may run, and PINGs while calls are in flight", () => {
  it("40 calls with a 300 ms deadline where 4 may run at once: every one answered DEADLINE_EXCEEDED on time, none refused", async () => {
    // 4 × streamReserveBytes fit the connection's outbound budget: the other 36 wait.
    const socket = connection({ maxConnectionOutboundBytes: 4 * 16 * 1024, streamReserveBytes: 16 * 1024 });
    const decoder = hpack.decompressor.create({ table: { maxSize: 4096 } });
    const calls = 40, deadlineMs = 300;
    const sent = performance.now();
    for (let i = 0; i < calls; i++) socket.feed(unaryCallFrames(2 * i + 1, hang.path, [{ name: "grpc-timeout", value: `${deadlineMs}m` }]));
    const answeredAt = new Map<number, number>(), status = new Map<number, number>(), resets = new Map<number, number>();
    while (answeredAt.size < calls && performance.now() - sent < 10_000) {
      await sleep(10);
      const r = read(socket.frames(), decoder);
      for (const [id, code] of r.status) {
        status.set(id, code);
        answeredAt.set(id, performance.now() - sent);
      }
      for (const [id, code] of r.resets) resets.set(id, code);
    }
    const times = [...answeredAt.values()].toSorted((a, b) => a - b);
    console.log(`# answered: first ${times[0]?.toFixed(0)} ms, last ${times.at(-1)?.toFixed(0)} ms (deadline ${deadlineMs} ms)`);
    assert.equal(answeredAt.size, calls);
    assert.ok([...status.values()].every((c) => c === Code.DeadlineExceeded), JSON.stringify([...status]));
    assert.ok(![...resets.values()].includes(0x7), "no REFUSED_STREAM");
    // Relative to the first answer in the same run: the last comes within one more deadline, not after rounds of them.
    assert.ok(times.at(-1)! <= 2 * times[0] + 100, `last answer at ${times.at(-1)!.toFixed(0)} ms, first at ${times[0].toFixed(0)} ms`);
  });

  it("PINGs every 10 ms while a call hangs: no GOAWAY; the same PINGs with no call in flight: GOAWAY(too_many_pings)", async () => {
    const ping = frame(0x6, 0, 0, Buffer.alloc(8));
    const busy = connection({ pingMinIntervalMs: 1000, maxPingStrikes: 2 });
    busy.feed(unaryCallFrames(1, hang.path));
    for (let i = 0; i < 10; i++) {
      busy.feed(ping);
      await sleep(10);
    }
    assert.deepEqual(read(busy.frames()).goaway, []);
    const idle = connection({ pingMinIntervalMs: 1000, maxPingStrikes: 2 });
    for (let i = 0; i < 10; i++) {
      idle.feed(ping);
      await sleep(10);
    }
    assert.deepEqual(read(idle.frames()).goaway, ["too_many_pings"]);
    busy.destroy();
    idle.destroy();
  });

  it("at most maxCallsInFlight handlers run at once on one connection; the others start as they end, all answered", async () => {
    const socket = connection({ maxCallsInFlight: 8 });
    load.peak = 0;
    const calls = 50;
    for (let i = 0; i < calls; i++) socket.feed(unaryCallFrames(2 * i + 1, busy.path));
    const decoder = hpack.decompressor.create({ table: { maxSize: 4096 } });
    const status = new Map<number, number>();
    for (const t0 = performance.now(); status.size < calls && performance.now() - t0 < 10_000; ) {
      await sleep(10);
      for (const [id, code] of read(socket.frames(), decoder).status) status.set(id, code);
    }
    assert.equal(status.size, calls);
    assert.ok([...status.values()].every((c) => c === Code.OK));
    assert.equal(load.peak, 8);
    socket.destroy();
  });

  it("answers waiting for window with none returned for answerStallMs → GOAWAY(ENHANCE_YOUR_CALM, answers_stalled)", async () => {
    const socket = connection({ answerStallMs: 200 }, [[4 /* SETTINGS_INITIAL_WINDOW_SIZE */, 0]]);
    socket.feed(unaryCallFrames(1, busy.path));
    const t0 = performance.now();
    let goaway: string[] = [];
    while (!goaway.length && performance.now() - t0 < 3000) {
      await sleep(20);
      goaway = read(socket.frames()).goaway;
    }
    const ms = performance.now() - t0;
    assert.deepEqual(goaway, ["answers_stalled"]);
    assert.ok(ms >= 200, `closed after ${ms.toFixed(0)} ms`);
  });
});
