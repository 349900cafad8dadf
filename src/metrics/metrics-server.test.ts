// The metrics responder (src/metrics/metrics-server.ts) in-process, over raw TCP, with its limits
// scaled down so that each bound is reached in well under a second: the snapshot rendered at most
// once per interval, requests answered one at a time, pipelining beyond the read-ahead closing the
// connection, the head and answer timeouts, the connection cap with eviction, keep-alive pacing, the budget of unsent
// answer bytes, malformed requests, and close() ending every connection at once.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import * as net from "node:net";
import { Gauge, Registry } from "prom-client";
import { serveMetrics, type MetricsServer } from "./metrics-server.ts";
import { metricsLimits, type MetricsLimits } from "./metrics-limits.ts";

const GET = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A registry whose render count is observable, and whose exposition is ~`bytes` long. */
function countingRegistry(bytes = 0) {
  const registry = new Registry();
  let renders = 0;
  new Gauge({ name: "renders", help: "Times the registry was rendered.", registers: [registry], collect() { this.set(++renders); } });
  if (bytes) {
    const big = new Gauge({ name: "big", help: "Padding.", labelNames: ["k"], registers: [registry] });
    const pad = "x".repeat(100);
    for (let i = 0; i * 120 < bytes; i++) big.set({ k: `${pad}${i}` }, i);
  }
  return { registry, renders: () => renders };
}

interface Raw { socket: net.Socket; received: () => Buffer; closed: Promise<void>; isClosed: () => boolean }
/**
 * A raw client; `read` false leaves the server's bytes unread (paused) — such a client also cannot
 * see the server close the connection until it reads again.
 */
async function raw(address: string, options: { read?: boolean } = {}): Promise<Raw> {
  const [, host, port] = /^(.*):(\d+)$/.exec(address)!;
  const socket = net.connect(Number(port), host);
  const chunks: Buffer[] = [];
  let isClosed = false;
  socket.on("error", () => {});
  const closed = new Promise<void>((r) => socket.once("close", () => ((isClosed = true), r())));
  socket.on("data", (d: Buffer) => chunks.push(d));
  if (!(options.read ?? true)) socket.pause(); // resume() to read what arrived
  await new Promise((r) => socket.once("connect", r));
  return { socket, received: () => Buffer.concat(chunks), closed, isClosed: () => isClosed };
}
/** Splits a byte stream into HTTP answers (Content-Length framing). */
function answers(bytes: Buffer): { status: number; headers: string; body: string }[] {
  const out = [];
  let at = 0;
  while (at < bytes.length) {
    const end = bytes.indexOf("\r\n\r\n", at);
    if (end < 0) break;
    const headers = bytes.toString("latin1", at, end);
    const length = Number(/content-length: (\d+)/i.exec(headers)![1]);
    if (end + 4 + length > bytes.length) break;
    out.push({ status: Number(headers.split(" ")[1]), headers, body: bytes.toString("utf8", end + 4, end + 4 + length) });
    at = end + 4 + length;
  }
  return out;
}
async function until(check: () => boolean, ms = 3000) {
  for (const t0 = performance.now(); !check(); await sleep(10)) if (performance.now() - t0 > ms) throw new Error("timed out waiting");
}

describe("metrics responder", () => {
  const limits: MetricsLimits = { ...metricsLimits, renderIntervalMs: 300, headTimeoutMs: 1000, answerTimeoutMs: 600, maxConnections: 4, evictAfterMs: 300, maxReadAheadBytes: 1024, maxHeadBytes: 1024 };
  let server: MetricsServer;
  let counted: ReturnType<typeof countingRegistry>;
  before(async () => {
    counted = countingRegistry();
    server = await serveMetrics("127.0.0.1:0", counted.registry, limits);
  });
  after(() => server.close());

  it("serves the exposition; concurrent scrapes within the interval share one render", async () => {
    await sleep(limits.renderIntervalMs);
    const before = counted.renders();
    const bodies = await Promise.all(Array.from({ length: 3 }, async () => (await fetch(`http://${server.address}/metrics`)).text()));
    assert.equal(counted.renders(), before + 1);
    assert.match(bodies[0], /^# TYPE renders gauge$/m);
    assert.deepEqual(new Set(bodies).size, 1);
    await sleep(limits.renderIntervalMs + 20);
    await (await fetch(`http://${server.address}/metrics`)).text();
    assert.equal(counted.renders(), before + 2, "rendered again once the interval has passed");
  });

  it("answers keep-alive and shallowly pipelined requests in order, one at a time", async () => {
    const c = await raw(server.address);
    c.socket.write(GET + "GET /nope HTTP/1.1\r\n\r\n" + GET);
    await until(() => answers(c.received()).length === 3);
    assert.deepEqual(answers(c.received()).map((a) => a.status), [200, 404, 200]);
    c.socket.write(GET);
    await until(() => answers(c.received()).length === 4);
    assert.ok(!c.isClosed());
    c.socket.destroy();
  });

  it("pipelining beyond the read-ahead: the first request is answered with Connection: close, then the connection ends", async () => {
    const c = await raw(server.address);
    c.socket.write(GET.repeat(2000));
    await c.closed;
    const got = answers(c.received());
    assert.equal(got.length, 1);
    assert.match(got[0].headers, /^Connection: close$/m);
  });

  it("a request head not complete within the head timeout (also the keep-alive idle time) closes the connection", async () => {
    const idle = await raw(server.address);
    const slow = await raw(server.address);
    slow.socket.write("GET /metrics HTTP/1.1\r\n");
    const t0 = performance.now();
    const drip = setInterval(() => slow.socket.write("X-A: b\r\n"), 50);
    await Promise.all([idle.closed, slow.closed]);
    clearInterval(drip);
    const ms = performance.now() - t0;
    assert.ok(ms >= limits.headTimeoutMs - 50 && ms < limits.headTimeoutMs + 1000, `${ms} ms`);
    assert.equal(idle.received().length, 0);
  });

  it("malformed requests: 400, 431 for a head above the bound, 404 for other paths and methods", async () => {
    for (const [request, status] of [["BREW /metrics\r\n\r\n", 400], [`GET /metrics HTTP/1.1\r\nX: ${"a".repeat(2000)}\r\n\r\n`, 431], ["POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 404], ["GET /other HTTP/1.0\r\n\r\n", 404]] as const) {
      const c = await raw(server.address);
      c.socket.write(request);
      await c.closed;
      assert.equal(answers(c.received())[0]?.status, status, request.slice(0, 20));
    }
  });

  it("at the connection cap a new connection is admitted and the one waiting longest for a request is closed", async () => {
    const held = [];
    for (let i = 0; i < limits.maxConnections; i++) held.push(await raw(server.address));
    const fresh = await raw(server.address);
    fresh.socket.write(GET);
    await until(() => answers(fresh.received()).length === 1);
    await held[0].closed; // the oldest idle one went
    assert.ok(held.slice(1).every((h) => !h.isClosed()));
    for (const c of [...held, fresh]) c.socket.destroy();
  });
});

describe("metrics responder: unread answers", () => {
  // A 6 MB exposition: more than loopback's socket buffers take from a client that reads nothing.
  const SIZE = 6e6;
  let server: MetricsServer;
  let full: number;
  const limits: MetricsLimits = { ...metricsLimits, renderIntervalMs: 60_000, answerTimeoutMs: 3000, maxUnsentBytes: 8e6 };
  before(async () => {
    server = await serveMetrics("127.0.0.1:0", countingRegistry(SIZE).registry, limits);
    // Rendered once, reused by every test here.
    full = (await (await fetch(`http://${server.address}/metrics`)).arrayBuffer()).byteLength;
    assert.ok(full > SIZE * 0.9);
  });
  after(() => server.close());
  /** Reads what the server sent; resolves with the answers received in full once the connection has closed. */
  const drain = async (c: Raw) => {
    c.socket.resume();
    await c.closed;
    return answers(c.received());
  };

  it("an answer not flushed within the answer timeout closes the connection", async () => {
    // One at a time: two unflushed answers together would exceed the budget (next test).
    const early = await raw(server.address, { read: false });
    early.socket.write(GET);
    await sleep(limits.answerTimeoutMs / 4);
    early.socket.resume();
    await until(() => answers(early.received()).length === 1, 10_000);
    assert.equal(answers(early.received())[0].body.length, full, "read before the timeout: the whole answer");
    early.socket.destroy();
    const late = await raw(server.address, { read: false });
    late.socket.write(GET);
    await sleep(limits.answerTimeoutMs + 1000);
    const got = await drain(late);
    assert.equal(got.length, 0, "cut at the timeout");
    assert.ok(late.received().length < full);
  });

  it("over the process-wide budget of unsent bytes, the answer waiting longest is closed first", async () => {
    const first = await raw(server.address, { read: false });
    first.socket.write(GET);
    await sleep(200);
    const second = await raw(server.address, { read: false });
    second.socket.write(GET);
    await sleep(200); // 2 × 6 MB > 8 MB: the first connection's answer goes
    const [firstGot] = await Promise.all([drain(first), (async () => {
      second.socket.resume();
      await until(() => answers(second.received()).length === 1, 10_000);
    })()]);
    assert.equal(firstGot.length, 0);
    assert.ok(first.received().length < full);
    assert.equal(answers(second.received())[0].body.length, full);
    assert.ok(!second.isClosed());
    second.socket.destroy();
  });

  it("close() ends every connection at once, even one in the middle of an answer", async () => {
    const c = await raw(server.address, { read: false });
    c.socket.write(GET);
    await sleep(100);
    const t0 = performance.now();
    await server.close();
    assert.ok(performance.now() - t0 < 500);
    const got = await drain(c);
    assert.equal(got.length, 0);
  });
});
