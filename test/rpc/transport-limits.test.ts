// The bounds of src/rpc/transport-limits.ts that need a clock or a handler under the test's control,
// checked frame by frame on an in-process server: handshake and idle timeouts (GOAWAY(NO_ERROR)
// without failing a call in flight), grpc-go's PING policy (strikes reset when we send), a reset
// stream counting against the stream limit until its handler ends, and the RFC 9113 checks.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import * as net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { serveEndpoints, type ServingEndpoints } from "../../src/rpc/serve-endpoints.ts";
import { Filesystem, PathExistsRequestSchema } from "../../src/gen/filesystem/v1/api_pb.ts";
import type { CallContext } from "../../src/api/handlers.ts";
import type { TransportLimits } from "../../src/rpc/transport-limits.ts";
import { frame } from "../helpers/raw-h2-client.ts";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const lit = (n: string, v: string) => Buffer.concat([Buffer.from([0, n.length]), Buffer.from(n), Buffer.from([v.length]), Buffer.from(v)]);
const block = (extra: Buffer[] = []) => Buffer.concat([Buffer.from([0x83, 0x86]), lit(":path", "/v1.Filesystem/PathExists"), lit("content-type", "application/grpc"), ...extra]);
const message = (p: string) => {
  const m = toBinary(PathExistsRequestSchema, create(PathExistsRequestSchema, { path: p }));
  const out = Buffer.alloc(5 + m.length);
  out.writeUInt32BE(m.length, 1);
  out.set(m, 5);
  return out;
};
const call = (id: number, p: string) => Buffer.concat([frame(1, 4, id, block()), frame(0, 1, id, message(p))]);

interface Frame { type: number; flags: number; id: number; payload: Buffer }

/** A raw connection that records every frame the server sends. */
class Peer {
  readonly socket: net.Socket;
  readonly frames: Frame[] = [];
  closed = false;
  private buf = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  constructor(address: string, handshake = true) {
    this.socket = net.connect(address);
    this.socket.on("error", () => {});
    this.socket.on("close", () => ((this.closed = true), this.wake()));
    this.socket.on("data", (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      while (this.buf.length >= 9 && this.buf.length >= 9 + this.buf.readUIntBE(0, 3)) {
        const len = this.buf.readUIntBE(0, 3);
        this.frames.push({ type: this.buf[3], flags: this.buf[4], id: this.buf.readUInt32BE(5), payload: this.buf.subarray(9, 9 + len) });
        this.buf = this.buf.subarray(9 + len);
      }
      this.wake();
    });
    if (handshake) this.send(PREFACE, frame(4, 0, 0));
  }
  send(...bytes: Buffer[]) {
    this.socket.write(Buffer.concat(bytes));
  }
  private wake() {
    for (const w of this.waiters.splice(0)) w();
  }
  /** Resolves with the first frame matching, or undefined when the connection closes or `ms` pass. */
  async next(match: (f: Frame) => boolean, ms = 3000): Promise<Frame | undefined> {
    const end = performance.now() + ms;
    for (;;) {
      const found = this.frames.find(match);
      if (found || this.closed || performance.now() > end) return found;
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 20);
      });
    }
  }
  goaway() {
    return this.next((f) => f.type === 7).then((f) => f && { lastId: f.payload.readUInt32BE(0), code: f.payload.readUInt32BE(4), debug: f.payload.subarray(8).toString() });
  }
  rst(id: number) {
    return this.next((f) => f.type === 3 && f.id === id).then((f) => f?.payload.readUInt32BE(0));
  }
  status(id: number) {
    return this.next((f) => f.type === 1 && f.id === id && (f.flags & 1) === 1).then((f) => {
      const at = f?.payload.indexOf("grpc-status") ?? -1;
      return at < 0 ? undefined : Number(f!.payload.toString("latin1", at + 12, at + 12 + f!.payload[at + 11]));
    });
  }
  close() {
    this.socket.destroy();
  }
}

describe("transport limits (src/rpc/transport-limits.ts)", () => {
  let dir: string;
  const servers: ServingEndpoints[] = [];
  const releases: (() => void)[] = [];
  let handlersEnded = 0;
  const handlers = {
    pathExists: ({ path: p }: { path: string }, ctx: CallContext) => {
      if (p === "/hold") return new Promise((resolve) => releases.push(() => (handlersEnded++, resolve({ exists: true }))));
      if (p === "/slow") return new Promise((resolve) => setTimeout(() => resolve({ exists: true }), 400));
      void ctx;
      return Promise.resolve({ exists: true });
    },
  };
  async function serve(name: string, limits: Partial<TransportLimits>) {
    const address = path.join(dir, `${name}.sock`);
    servers.push(await serveEndpoints([{ group: "filesystem", version: "v1", address, service: Filesystem, handlers: handlers as never }], { observer: { start: () => () => {} }, limits }));
    return address;
  }
  let plain: string;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-limits-"));
    plain = await serve("plain", {});
  });
  after(async () => {
    for (const r of releases) r();
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  it("closes a connection that has not finished its handshake within handshakeTimeoutMs, and only then", async () => {
    const address = await serve("handshake", { handshakeTimeoutMs: 600 });
    const half = new Peer(address, false);
    half.send(PREFACE.subarray(0, 10));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(half.closed, false);
    const done = new Peer(address);
    await new Promise((r) => setTimeout(r, 700));
    assert.equal(half.closed, true, "half a preface: closed");
    assert.equal(done.closed, false, "a finished handshake is not timed out");
    done.close();
  });

  it("ends an idle connection with GOAWAY(NO_ERROR) twice (2^31-1, then the last stream), never failing a call in flight", async () => {
    // The call (400 ms) outlasts two idle periods (150 ms): only its being in flight keeps the connection.
    const address = await serve("idle", { idleTimeoutMs: 150 });
    const peer = new Peer(address);
    peer.send(call(1, "/slow"));
    await new Promise((r) => setTimeout(r, 350));
    assert.equal(peer.frames.some((f) => f.type === 7), false, "no GOAWAY while a call runs");
    assert.equal(await peer.status(1), 0);
    const first = await peer.goaway();
    assert.deepEqual(first, { lastId: 0x7fffffff, code: 0, debug: "max_idle" });
    const ping = await peer.next((f) => f.type === 6 && !(f.flags & 1));
    // A call sent after the first GOAWAY but before the PING is acknowledged is still served.
    peer.send(call(3, "/yes"), frame(6, 1, 0, ping!.payload));
    assert.equal(await peer.status(3), 0);
    const final = await peer.next((f) => f.type === 7 && f.payload.readUInt32BE(0) !== 0x7fffffff);
    assert.equal(final?.payload.readUInt32BE(0), 3);
    assert.equal(final?.payload.readUInt32BE(4), 0);
    // A call racing the final GOAWAY is ignored (the client retries it elsewhere), not a protocol error.
    peer.send(call(5, "/yes"));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(peer.frames.some((f) => f.id === 5), false);
    assert.equal(peer.frames.filter((f) => f.type === 7).length, 2, "no GOAWAY(PROTOCOL_ERROR) after the final one");
    await peer.next(() => false, 1500);
    assert.equal(peer.closed, true);
  });

  it("PING: grpc-go's policy — a third quick PING with nothing sent between is too_many_pings; our answers reset the strikes", async () => {
    const bdp = new Peer(plain);
    // A BDP-style client: a PING with every call; our answer in between resets the strikes.
    for (let i = 0, id = 1; i < 10; i++, id += 2) {
      bdp.send(frame(6, 0, 0, Buffer.alloc(8, i)), call(id, "/yes"));
      assert.equal(await bdp.status(id), 0);
    }
    assert.equal(bdp.closed, false);
    bdp.close();
    const flood = new Peer(plain);
    flood.send(...Array.from({ length: 4 }, (_, i) => frame(6, 0, 0, Buffer.alloc(8, i))));
    assert.deepEqual(await flood.goaway(), { lastId: 0, code: 11, debug: "too_many_pings" });
    assert.equal(flood.frames.filter((f) => f.type === 6).length, 3, "three PINGs acknowledged, the fourth refused");
  });

  it("a reset stream counts against the stream limit until its handler ends", async () => {
    const address = await serve("streams", { maxConcurrentStreams: 2 });
    const peer = new Peer(address);
    peer.send(call(1, "/hold"), call(3, "/hold"), frame(3, 0, 1, u32(8)), frame(3, 0, 3, u32(8)));
    await new Promise((r) => setTimeout(r, 100));
    peer.send(call(5, "/yes"));
    assert.equal(await peer.rst(5), 7, "REFUSED_STREAM while both handlers run");
    const ended = handlersEnded;
    releases.splice(0).forEach((r) => r());
    for (let i = 0; i < 50 && handlersEnded < ended + 2; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 20));
    peer.send(call(7, "/yes"));
    assert.equal(await peer.status(7), 0);
    peer.close();
  });

  it("reassembles frames that arrive split at every byte", async () => {
    const peer = new Peer(plain, false);
    const bytes = Buffer.concat([PREFACE, frame(4, 0, 0), call(1, "/yes"), call(3, "/yes")]);
    for (let i = 0; i < bytes.length; i++) {
      peer.socket.write(bytes.subarray(i, i + 1));
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.deepEqual([await peer.status(1), await peer.status(3)], [0, 0]);
    peer.close();
  });

  const violations: [string, (p: Peer) => void, number][] = [
    ["WINDOW_UPDATE of 0 on the connection → PROTOCOL_ERROR", (p) => p.send(frame(8, 0, 0, u32(0))), 1],
    ["connection window above 2^31-1 → FLOW_CONTROL_ERROR", (p) => p.send(frame(8, 0, 0, u32(0x7fffffff)), frame(8, 0, 0, u32(0x7fffffff))), 3],
    ["SETTINGS ACK with a payload → FRAME_SIZE_ERROR", (p) => p.send(frame(4, 1, 0, Buffer.alloc(6))), 6],
    ["ENABLE_PUSH=2 → PROTOCOL_ERROR", (p) => p.send(frame(4, 0, 0, Buffer.from([0, 2, 0, 0, 0, 2]))), 1],
    ["RST_STREAM on an idle stream → PROTOCOL_ERROR", (p) => p.send(frame(3, 0, 9, u32(8))), 1],
    ["WINDOW_UPDATE on an idle stream → PROTOCOL_ERROR", (p) => p.send(frame(8, 0, 9, u32(10))), 1],
    ["a first frame that is not SETTINGS → PROTOCOL_ERROR", (p) => p.send(frame(6, 0, 0, Buffer.alloc(8))), 1],
  ];
  for (const [name, act, code] of violations) {
    it(name, async () => {
      const peer = new Peer(plain, !name.startsWith("a first frame"));
      if (name.startsWith("a first frame")) peer.send(PREFACE);
      act(peer);
      assert.equal((await peer.goaway())?.code, code);
      peer.close();
    });
  }

  const streamErrors: [string, (p: Peer) => void, number, number][] = [
    ["an uppercase header name → RST_STREAM(PROTOCOL_ERROR)", (p) => p.send(frame(1, 5, 1, block([lit("X-Upper", "1")]))), 1, 1],
    ["a pseudo-header after a regular one → RST_STREAM(PROTOCOL_ERROR)", (p) => p.send(frame(1, 5, 1, Buffer.concat([lit("content-type", "application/grpc"), Buffer.from([0x83, 0x86]), lit(":path", "/x")]))), 1, 1],
    ["a 2-byte PRIORITY → RST_STREAM(FRAME_SIZE_ERROR)", (p) => p.send(frame(2, 0, 1, Buffer.alloc(2))), 1, 6],
    ["HEADERS again on a stream whose request ended → RST_STREAM(STREAM_CLOSED), the call not answered Internal", (p) => p.send(call(1, "/hold"), frame(1, 5, 1, block())), 1, 5],
    ["WINDOW_UPDATE of 0 on a stream → RST_STREAM(PROTOCOL_ERROR)", (p) => p.send(call(1, "/hold"), frame(8, 0, 1, u32(0))), 1, 1],
  ];
  for (const [name, act, id, code] of streamErrors) {
    it(name, async () => {
      const peer = new Peer(plain);
      act(peer);
      assert.equal(await peer.rst(id), code);
      assert.equal(peer.frames.some((f) => f.type === 1 && f.id === id), false, "no status on that stream");
      peer.send(call(3, "/yes"));
      assert.equal(await peer.status(3), 0, "the connection stays usable");
      peer.close();
    });
  }
});
