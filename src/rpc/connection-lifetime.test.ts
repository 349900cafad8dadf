// src/rpc/connection-lifetime.ts on its own, on mocked timers: handshake timeout, idle GOAWAY in two
// steps (grpc-go's graceful close), never ending a connection with a call in flight.
import { describe, it, mock, afterEach, beforeEach } from "node:test";
import assert from "node:assert/strict";
import type { Duplex } from "node:stream";
import { ConnectionLifetime } from "./connection-lifetime.ts";
import { DEFAULT_LIMITS } from "./transport-limits.ts";

function rig(view: { active: number; handshake: boolean }) {
  const events: string[] = [];
  const socket = { destroy: () => events.push("destroy"), end: () => events.push("end") } as unknown as Duplex;
  const sender = {
    write: (b: Buffer) => events.push(b[3] === 7 ? `goaway ${b.readUInt32BE(9)} ${b.readUInt32BE(13)}` : b[3] === 6 ? `ping ${b.toString("latin1", 9)}` : `frame ${b[3]}`),
    flush: () => events.push("flush"),
  };
  const limits = { ...DEFAULT_LIMITS, handshakeTimeoutMs: 100, idleTimeoutMs: 1000 };
  const lifetime = new ConnectionLifetime(socket, sender, limits, {
    active: () => view.active, lastStreamId: () => 7, closed: () => false, handshakeComplete: () => view.handshake,
  });
  return { events, lifetime };
}

describe("ConnectionLifetime (src/rpc/connection-lifetime.ts)", () => {
  beforeEach(() => mock.timers.enable({ apis: ["setTimeout"] }));
  afterEach(() => mock.timers.reset());

  it("a client that has not completed the handshake in time is closed", () => {
    const { events } = rig({ active: 0, handshake: false });
    mock.timers.tick(99);
    assert.deepEqual(events, []);
    mock.timers.tick(1);
    assert.deepEqual(events, ["destroy"]);
  });

  it("idle for a whole period: GOAWAY(2^31-1) and a PING; the ACK sends GOAWAY(last stream) and ends the socket", () => {
    const view = { active: 0, handshake: true };
    const { events, lifetime } = rig(view);
    lifetime.handshakeDone();
    lifetime.streamStarted();
    mock.timers.tick(1000); // a stream started in this period: not idle yet
    assert.deepEqual(events, []);
    mock.timers.tick(1000);
    assert.deepEqual(events, [`goaway ${0x7fffffff} 0`, "ping csiproxy"]);
    lifetime.pingAck(Buffer.from("csiproxy"), 0, 8);
    assert.deepEqual(events.slice(2), ["goaway 7 0", "flush", "end"]);
  });

  it("a call in flight is never cut: the socket ends only when the last one retires", () => {
    const view = { active: 1, handshake: true };
    const { events, lifetime } = rig(view);
    lifetime.handshakeDone();
    mock.timers.tick(1000);
    assert.deepEqual(events, []); // active: not idle
    view.active = 0;
    mock.timers.tick(1000);
    view.active = 1; // a call that began before the client saw the GOAWAY
    mock.timers.tick(1000); // no PING ACK: the final GOAWAY after 1 s
    assert.deepEqual(events.slice(2), ["goaway 7 0"]);
    view.active = 0;
    lifetime.idle();
    assert.deepEqual(events.slice(3), ["flush", "end"]);
  });

  it("stop() leaves no timer", () => {
    const { events, lifetime } = rig({ active: 0, handshake: false });
    lifetime.stop();
    mock.timers.tick(100_000);
    assert.deepEqual(events, []);
  });
});
