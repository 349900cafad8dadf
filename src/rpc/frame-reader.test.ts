// src/rpc/frame-reader.ts on its own: bytes in, checked frames out (or the connection error),
// whatever the chunking; no socket, no server.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FrameReader, type FrameHandler } from "./frame-reader.ts";
import { ConnectionPolicy } from "./connection-policy.ts";
import { Http2ConnectionError } from "./http2-connection-error.ts";
import { CLIENT_PREFACE, frame, settings } from "./http2-frames.ts";
import { DEFAULT_LIMITS, type TransportLimits } from "./transport-limits.ts";

const DATA = 0, HEADERS = 1, PRIORITY = 2, RST = 3, SETTINGS = 4, PING = 6, WINDOW_UPDATE = 8, CONTINUATION = 9;
const END_STREAM = 1, END_HEADERS = 4, PADDED = 8;
const u32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
const f = (type: number, flags: number, id: number, payload: Buffer | string = Buffer.alloc(0)) => frame(type, flags, id, Buffer.from(payload));
const START = Buffer.concat([CLIENT_PREFACE, settings([])]);

/** A handler that records what it is handed, as text. */
function recorder(): FrameHandler & { events: string[] } {
  const events: string[] = [];
  return {
    events,
    handshakeDone: () => events.push("handshake"),
    data: (id, end, buf, s, e, len) => events.push(`data ${id} ${end} ${buf.toString("latin1", s, e)} ${len}`),
    headerBlock: (id, flags, block) => events.push(`headers ${id} ${flags} ${block.toString("latin1")}`),
    rstStream: (id) => events.push(`rst ${id}`),
    settings: (w, m) => events.push(`settings ${w} ${m}`),
    ping: (buf, s, e) => events.push(`ping ${buf.toString("latin1", s, e)}`),
    pingAck: (buf, s, e) => events.push(`ack ${buf.toString("latin1", s, e)}`),
    windowUpdate: (id, inc) => events.push(`window ${id} ${inc}`),
    priority: (id, ok) => events.push(`priority ${id} ${ok}`),
  };
}

function reader(limits: Partial<TransportLimits> = {}) {
  const handler = recorder();
  return { handler, reader: new FrameReader(handler, new ConnectionPolicy({ ...DEFAULT_LIMITS, ...limits })) };
}

function connectionError(fn: () => unknown): { code: number; message: string } {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof Http2ConnectionError, String(err));
    return { code: err.code, message: err.message };
  }
  assert.fail("no connection error");
}

const SAMPLE = Buffer.concat([
  START,
  f(HEADERS, END_HEADERS, 1, "block-1"),
  f(DATA, PADDED | END_STREAM, 1, Buffer.concat([Buffer.from([3]), Buffer.from("body"), Buffer.alloc(3)])),
  f(HEADERS, 0, 3, "part-a|"),
  f(CONTINUATION, 0, 3, ""),
  f(CONTINUATION, END_HEADERS, 3, "part-b"),
  f(PING, 0, 0, "12345678"),
  f(PING, 1, 0, "abcdefgh"),
  f(WINDOW_UPDATE, 0, 0, u32(1000)),
  f(RST, 0, 3, u32(8)),
  f(PRIORITY, 0, 5, Buffer.alloc(5)),
  f(0x20, 0, 0, "extension"),
  f(SETTINGS, 0, 0, Buffer.from([0, 4, 0, 0, 0x40, 0, 0, 5, 0, 0, 0x40, 0])),
]);
const SAMPLE_EVENTS = [
  "handshake", "settings undefined undefined", "headers 1 4 block-1", "data 1 true body 8", "headers 3 0 part-a|part-b",
  "ping 12345678", "ack abcdefgh", "window 0 1000", "rst 3", "priority 5 true", "settings 16384 16384",
];

describe("FrameReader (src/rpc/frame-reader.ts)", () => {
  it("hands on checked frames in order: padding stripped, header blocks joined, extension frames ignored", () => {
    const { handler, reader: r } = reader();
    assert.equal(r.push(SAMPLE), true);
    assert.deepEqual(handler.events, SAMPLE_EVENTS);
    assert.equal(r.heldBytes, 0);
  });

  it("gives the same frames whatever the chunking (1 byte at a time, and every split in two)", () => {
    const one = reader();
    for (let i = 0; i < SAMPLE.length; i++) one.reader.push(SAMPLE.subarray(i, i + 1));
    assert.deepEqual(one.handler.events, SAMPLE_EVENTS);
    for (let cut = 1; cut < SAMPLE.length; cut += 7) {
      const two = reader();
      two.reader.push(SAMPLE.subarray(0, cut));
      two.reader.push(SAMPLE.subarray(cut));
      assert.deepEqual(two.handler.events, SAMPLE_EVENTS, `cut at ${cut}`);
    }
  });

  it("keeps only a copy of a partial frame between chunks", () => {
    const { reader: r } = reader();
    const chunk = Buffer.concat([START, f(DATA, 0, 1, "x".repeat(100)).subarray(0, 50)]);
    r.push(chunk);
    assert.equal(r.heldBytes, 50);
    chunk.fill(0); // the socket's buffer reused: the partial frame must not change
    const { handler: h2, reader: r2 } = reader();
    r2.push(START);
    r2.push(f(DATA, 0, 1, "x".repeat(100)).subarray(0, 50));
    r2.push(f(DATA, 0, 1, "x".repeat(100)).subarray(50));
    assert.equal(h2.events.at(-1), `data 1 false ${"x".repeat(100)} 100`);
  });

  it("bytes that are not the preface: false (the caller closes); a preface in pieces: read", () => {
    assert.equal(reader().reader.push(Buffer.from("GET / HTTP/1.1\r\n")), false);
    const { handler, reader: r } = reader();
    assert.equal(r.push(CLIENT_PREFACE.subarray(0, 5)), true);
    assert.equal(r.push(Buffer.concat([CLIENT_PREFACE.subarray(5), settings([])])), true);
    assert.deepEqual(handler.events, ["handshake", "settings undefined undefined"]);
  });

  it("refuses what RFC 9113 forbids with the connection error's code", () => {
    const cases: [Buffer, number, string][] = [
      [f(PING, 0, 0, "12345678"), 1, "the client preface must start with SETTINGS"],
      [Buffer.concat([settings([]), f(DATA, 0, 0, "x")]), 1, "DATA on stream 0"],
      [Buffer.concat([settings([]), f(HEADERS, END_HEADERS, 2, "x")]), 1, "bad stream id"],
      [Buffer.concat([settings([]), f(DATA, PADDED, 1, Buffer.from([5, 1]))]), 1, "bad padding"],
      [Buffer.concat([settings([]), f(HEADERS, 0, 1, "x"), f(PING, 0, 0, "12345678")]), 1, "expected CONTINUATION"],
      [Buffer.concat([settings([]), f(HEADERS, 0, 1, "x"), f(CONTINUATION, END_HEADERS, 3, "y")]), 1, "unexpected CONTINUATION"],
      [Buffer.concat([settings([]), f(RST, 0, 1, "abc")]), 6, "bad RST_STREAM"],
      [Buffer.concat([settings([]), f(WINDOW_UPDATE, 0, 0, u32(0))]), 1, "WINDOW_UPDATE of 0"],
      [Buffer.concat([settings([]), f(SETTINGS, 0, 0, Buffer.from([0, 5, 0, 0, 0, 1]))]), 1, "bad max frame size"],
      [Buffer.concat([settings([]), f(SETTINGS, 0, 0, Buffer.from([0, 4, 0x80, 0, 0, 0]))]), 3, "window too large"],
      [Buffer.concat([settings([]), f(5, END_HEADERS, 1, "xxxx")]), 1, "PUSH_PROMISE from a client"],
      // A frame above 16 KiB is refused from its header alone.
      [Buffer.concat([settings([]), Buffer.from([0, 0x40, 1, 0, 0, 0, 0, 0, 1])]), 6, "frame too large"],
    ];
    for (const [bytes, code, message] of cases) {
      const { reader: r } = reader();
      assert.deepEqual(connectionError(() => r.push(Buffer.concat([CLIENT_PREFACE, bytes]))), { code, message }, message);
    }
  });

  it("header blocks and SETTINGS beyond the policy's bounds: ENHANCE_YOUR_CALM", () => {
    const big = reader({ maxHeaderBlockBytes: 10 });
    assert.deepEqual(connectionError(() => big.reader.push(Buffer.concat([START, f(HEADERS, 0, 1, "123456"), f(CONTINUATION, 0, 1, "789012")]))), { code: 11, message: "header block too large" });
    const many = reader({ maxHeaderBlockFrames: 3 });
    const pieces = [f(HEADERS, 0, 1), f(CONTINUATION, 0, 1), f(CONTINUATION, 0, 1), f(CONTINUATION, 0, 1)];
    assert.deepEqual(connectionError(() => many.reader.push(Buffer.concat([START, ...pieces]))), { code: 11, message: "header block in too many frames" });
    const entries = reader({ maxSettingsEntries: 1 });
    assert.deepEqual(connectionError(() => entries.reader.push(Buffer.concat([START, f(SETTINGS, 0, 0, Buffer.alloc(12))]))), { code: 11, message: "too many SETTINGS entries" });
  });

  it("hands on nothing once stopped, and holds nothing after clear()", () => {
    const { handler, reader: r } = reader();
    r.push(START);
    r.stopped = true;
    r.push(f(PING, 0, 0, "12345678"));
    assert.deepEqual(handler.events, ["handshake", "settings undefined undefined"]);
    r.clear();
    assert.equal(r.heldBytes, 0);
  });
});
