// src/rpc/send-scheduler.ts on its own, over a recording socket: one write per event-loop turn,
// answers in one buffer when they fit, round robin under flow control, back-pressure.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { Duplex } from "node:stream";
import { FlowControl } from "./flow-control.ts";
import { SendScheduler, type ScheduledStream } from "./send-scheduler.ts";

/** The part of a socket the scheduler uses; `writableLength` is what the test says the client left unread. */
class FakeSocket extends EventEmitter {
  writes: Buffer[] = [];
  writableLength = 0;
  destroyed = false;
  paused = false;
  write(b: Buffer) {
    this.writes.push(Buffer.from(b));
    return true;
  }
  pause() {
    this.paused = true;
  }
  resume() {
    this.paused = false;
  }
}

interface Frame { type: number; flags: number; id: number; length: number }
const framesOf = (bytes: Buffer): Frame[] => {
  const out: Frame[] = [];
  for (let p = 0; p < bytes.length; p += 9 + bytes.readUIntBE(p, 3)) out.push({ type: bytes[p + 3], flags: bytes[p + 4], id: bytes.readUInt32BE(p + 5), length: bytes.readUIntBE(p, 3) });
  return out;
};
const turn = () => new Promise((r) => setImmediate(r));
const stream = (id: number, sendWindow = 65535): ScheduledStream => ({ id, sendWindow, sent: 0 });

function scheduler(flow = new FlowControl()) {
  const socket = new FakeSocket();
  const answered: number[] = [];
  let sent = 0, flushed = 0;
  const s = new SendScheduler(socket as unknown as Duplex, flow, { onSent: () => sent++, onAnswered: (st) => answered.push(st.id), onFlushed: () => flushed++ });
  return { s, socket, answered, flow, sent: () => sent, flushed: () => flushed };
}

describe("SendScheduler (src/rpc/send-scheduler.ts)", () => {
  it("everything queued in one turn goes out in one socket write", async () => {
    const { s, socket } = scheduler();
    s.write(Buffer.from("a"));
    s.write(Buffer.from("bc"));
    assert.equal(s.queuedBytes, 3);
    await turn();
    assert.deepEqual(socket.writes.map(String), ["abc"]);
    assert.equal(s.queuedBytes, 0);
  });

  it("an answer within the windows: HEADERS, DATA, trailers in one buffer, answered at once", async () => {
    const { s, socket, answered, flow, sent } = scheduler();
    s.respond(stream(1), new Uint8Array(100));
    assert.deepEqual(answered, [1]);
    assert.equal(sent(), 1);
    assert.equal(flow.connection, 65535 - 105);
    await turn();
    assert.equal(socket.writes.length, 1);
    assert.deepEqual(framesOf(socket.writes[0]).map((f) => [f.type, f.flags, f.id, f.length]).slice(1, 2), [[0, 0, 1, 105]]);
    assert.deepEqual(framesOf(socket.writes[0]).map((f) => [f.type, f.flags & 1]), [[1, 0], [0, 0], [1, 1]]);
  });

  it("an answer larger than the windows waits for WINDOW_UPDATE, in frames of the client's size; others go round robin", async () => {
    const { s, socket, answered, flow } = scheduler();
    const big = stream(1, 70_000), small = stream(3, 0);
    s.respond(big, new Uint8Array(100_000));
    assert.deepEqual(answered, []);
    s.respond(small, new Uint8Array(10));
    assert.ok(s.hasBlocked);
    assert.equal(flow.connection, 0);
    flow.connectionUpdate(100_000);
    s.flushBlocked(); // big: its stream window (70 000) is spent; small waits for its own window
    assert.deepEqual(answered, []);
    small.sendWindow = 100;
    s.streamWindowOpened(small);
    assert.deepEqual(answered, [3]);
    big.sendWindow += 50_000;
    s.streamWindowOpened(big);
    assert.deepEqual(answered, [3, 1]);
    assert.ok(!s.hasBlocked);
    await turn();
    const frames = socket.writes.flatMap(framesOf);
    assert.ok(frames.filter((f) => f.type === 0).every((f) => f.length <= 16384));
    assert.equal(frames.filter((f) => f.type === 0 && f.id === 1).reduce((n, f) => n + f.length, 0), 100_005);
  });

  it("a dropped stream's waiting answer is forgotten; after close() nothing is written", async () => {
    const { s, socket, answered, flow } = scheduler();
    const st = stream(1, 0);
    s.respond(st, new Uint8Array(10));
    s.drop(st);
    assert.ok(!s.hasBlocked);
    flow.connectionUpdate(1000);
    st.sendWindow = 1000;
    s.streamWindowOpened(st);
    assert.deepEqual(answered, []);
    await turn();
    s.close();
    s.write(Buffer.from("x"));
    await turn();
    assert.equal(socket.writes.flatMap(framesOf).filter((f) => f.type === 0).length, 0);
  });

  it("counts what it holds unsent: queued, unwritten by the socket, waiting for window; onFlushed after each write", async () => {
    const { s, socket, flow, flushed } = scheduler();
    s.write(Buffer.alloc(10));
    socket.writableLength = 1000;
    assert.equal(s.socketUnsent, 1010);
    const st = stream(1, 0);
    s.respond(st, new Uint8Array(95));
    assert.equal(s.pendingBytes, 100);
    flow.connectionUpdate(1000);
    st.sendWindow = 40;
    s.streamWindowOpened(st);
    assert.equal(s.pendingBytes, 60);
    s.drop(st);
    assert.equal(s.pendingBytes, 0);
    s.flush();
    assert.deepEqual([flushed(), s.socketUnsent], [1, 1000]);
  });
});
