import * as net from "node:net";
import type { Registry } from "prom-client";
import { createExpositionSnapshot } from "./exposition-snapshot.ts";
import { metricsLimits, type MetricsLimits } from "./metrics-limits.ts";
import { RateBucket } from "../util/rate-bucket.ts";

export interface MetricsServer {
  /** The bound `host:port`. */
  readonly address: string;
  /** Stops listening and closes every connection at once, whatever its state; resolves when the listener is closed. Idempotent. */
  close(): Promise<void>;
}

interface Connection {
  socket: net.Socket;
  /** head: reading a request head; answer: waiting for the answer pace, rendering or writing one answer (the socket is not read); closing: ending after the last answer. */
  phase: "head" | "answer" | "closing";
  /** Answers flushed on it so far. */
  served: number;
  /** Its request waits for the answer pace. */
  queued: boolean;
  /** performance.now() when the current phase began: its timeout runs from here, and eviction picks the oldest. */
  since: number;
  /** Request bytes read and not yet parsed (≤ maxHeadBytes + one read while a head is incomplete, ≤ maxReadAheadBytes after). */
  pending: Buffer;
  /** Bytes of the answer being written, charged to the process-wide budget until flushed. */
  unsent: number;
  /** Close once the current answer is flushed (HTTP/1.0, `Connection: close`, a body we do not read, too much read ahead). */
  closeAfter: boolean;
  /** performance.now() when its last request head was read (limits.minRequestIntervalMs runs from here). */
  requestAt: number;
  /** Holds the next request back until minRequestIntervalMs has passed. */
  pacer?: NodeJS.Timeout;
}

interface RequestHead { method: string; path: string; close: boolean }

const SWEEP_MS = 250;
const NOT_FOUND = Buffer.from("404 page not found\n");

/**
 * Serves `GET /metrics` on `host:port` (only that path, as upstream): the registry's exposition,
 * rendered at most once per `limits.renderIntervalMs`. Every other request answers 404. Resolves
 * once listening. All bounds: src/metrics/metrics-limits.ts.
 *
 * A small HTTP/1.1 responder on node:net rather than node:http: node:http parses and dispatches
 * every pipelined request in a read before any handler can refuse them, queues their answers, and
 * has no bound on the time an answer takes to leave; here each bound is a line of its own.
 */
export async function serveMetrics(bindAddress: string, registry: Registry, limits: MetricsLimits = metricsLimits): Promise<MetricsServer> {
  const match = /^(.*):(\d+)$/.exec(bindAddress);
  if (!match) throw new Error(`invalid -metrics-bind-address ${JSON.stringify(bindAddress)}: want host:port`);
  const host = match[1].replace(/^\[(.*)\]$/, "$1") || undefined;
  const snapshot = createExpositionSnapshot(registry, limits.renderIntervalMs);
  const connections = new Set<Connection>();
  let unsentTotal = 0;
  /**
   * Requests waiting for the process-wide answer pace (one per connection at most): a connection's
   * first request before the repeated requests of keep-alive connections, each in arrival order.
   */
  const firsts: [Connection, RequestHead][] = [];
  const repeats: [Connection, RequestHead][] = [];
  const pace = new AnswerPace(limits.maxAnswersPerSecond, limits.maxConnections, () => {
    while ((firsts.length || repeats.length) && pace.take()) answer(...(firsts.length ? firsts : repeats).shift()!);
    return firsts.length + repeats.length > 0;
  });
  let sweeper: NodeJS.Timeout | undefined;
  let closed = false;

  const release = (c: Connection) => {
    if (!connections.delete(c)) return;
    unsentTotal -= c.unsent;
    c.unsent = 0;
    if (!connections.size && sweeper) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  };
  const drop = (c: Connection) => {
    clearTimeout(c.pacer);
    if (c.queued) {
      // Out of the pace queues, so they hold live connections only (at most maxConnections entries).
      for (const q of [firsts, repeats]) {
        const i = q.findIndex(([o]) => o === c);
        if (i >= 0) q.splice(i, 1);
      }
      c.queued = false;
    }
    c.socket.destroy();
    release(c);
  };
  /** The connection whose current phase began first, among those `eligible`. */
  const oldest = (eligible: (c: Connection) => boolean) => {
    let found: Connection | undefined;
    for (const c of connections) if (eligible(c) && (!found || c.since < found.since)) found = c;
    return found;
  };
  const sweep = () => {
    const now = performance.now();
    for (const c of connections) {
      const limit = c.phase === "head" ? limits.headTimeoutMs : limits.answerTimeoutMs;
      if (now - c.since > limit) drop(c);
    }
  };

  const admit = (socket: net.Socket) => {
    socket.on("error", () => {}); // a reset by the client; "close" follows and releases the connection
    if (closed) return void socket.destroy();
    if (connections.size >= limits.maxConnections) {
      // The newcomer stays; the one that goes: an idle keep-alive connection already served (longest idle first),
      // else a head arriving slowly (longest first), else an answer pending at least evictAfterMs (longest first).
      const victim = oldest((o) => o.served > 0 && (o.phase === "head" || o.queued)) ?? oldest((o) => o.phase === "head") ??
        oldest((o) => o.phase !== "head" && performance.now() - o.since >= limits.evictAfterMs);
      if (!victim) return void socket.destroy();
      drop(victim);
    }
    socket.setNoDelay(true);
    const c: Connection = { socket, phase: "head", since: performance.now(), pending: Buffer.alloc(0), unsent: 0, closeAfter: false, requestAt: -Infinity, served: 0, queued: false };
    connections.add(c);
    sweeper ??= setInterval(sweep, SWEEP_MS).unref();
    socket.on("data", (chunk: Buffer) => {
      c.pending = c.pending.length ? Buffer.concat([c.pending, chunk]) : chunk;
      if (c.phase === "head") return readHead(c);
      // A paused socket emits nothing; should a read still arrive, it is read-ahead and bounded as such.
      if (c.pending.length > limits.maxReadAheadBytes) {
        c.pending = Buffer.alloc(0);
        c.closeAfter = true;
      }
    });
    socket.on("close", () => release(c));
  };

  /** Parses the next request head from `c.pending` and answers it; waits for more bytes when it is incomplete. */
  const readHead = (c: Connection) => {
    // RFC 9112 §2.2: empty lines before the request line are ignored.
    let start = 0;
    while (c.pending[start] === 13 || c.pending[start] === 10) start++;
    const end = headEnd(c.pending, start);
    if (end < 0) {
      if (c.pending.length - start > limits.maxHeadBytes) return fail(c, 431, "Request Header Fields Too Large");
      if (start) c.pending = c.pending.subarray(start);
      return;
    }
    if (end - start > limits.maxHeadBytes) return fail(c, 431, "Request Header Fields Too Large");
    const head = parseHead(c.pending.toString("latin1", start, end));
    const rest = c.pending.length - end;
    // Copied so that a kept remainder does not hold the whole read buffer.
    c.pending = rest > limits.maxReadAheadBytes ? Buffer.alloc(0) : Buffer.from(c.pending.subarray(end));
    if (rest > limits.maxReadAheadBytes) c.closeAfter = true;
    if (!head) return fail(c, 400, "Bad Request");
    if (head.close) c.closeAfter = true;
    c.phase = "answer";
    c.since = c.requestAt = performance.now();
    c.socket.pause();
    if (!pace.take()) {
      c.queued = true;
      (c.served ? repeats : firsts).push([c, head]);
      pace.schedule();
      return;
    }
    answer(c, head);
  };

  /** Answers one request head. */
  const answer = (c: Connection, head: RequestHead) => {
    c.queued = false;
    if (!connections.has(c)) return;
    if (head.method !== "GET" || head.path !== "/metrics") return send(c, "404 Not Found", "text/plain; charset=utf-8", NOT_FOUND);
    snapshot.get().then(
      (body) => send(c, "200 OK", snapshot.contentType, body),
      (err: unknown) => send(c, "500 Internal Server Error", "text/plain; charset=utf-8", Buffer.from(`${String(err)}\n`)),
    );
  };

  /** Answers a malformed request with `status` and closes the connection. */
  const fail = (c: Connection, code: number, reason: string) => {
    c.pending = Buffer.alloc(0);
    c.closeAfter = true;
    c.phase = "answer";
    c.since = performance.now();
    c.socket.pause();
    send(c, `${code} ${reason}`, "text/plain; charset=utf-8", Buffer.from(`${code} ${reason}\n`));
  };

  /** Writes one answer; the connection reads its next request only after the answer has been flushed. */
  const send = (c: Connection, status: string, contentType: string, body: Buffer) => {
    if (!connections.has(c)) return; // closed while the snapshot rendered
    const head = Buffer.from(
      `HTTP/1.1 ${status}\r\nContent-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n${c.closeAfter ? "Connection: close\r\n" : ""}\r\n`,
      "latin1",
    );
    const size = head.length + body.length;
    // Over the process-wide budget: the answers that have waited longest go first.
    while (unsentTotal + size > limits.maxUnsentBytes) {
      const victim = oldest((o) => o !== c && o.unsent > 0);
      if (!victim) break;
      drop(victim);
    }
    c.unsent = size;
    unsentTotal += size;
    c.since = performance.now(); // the answer timeout runs again from the write
    c.socket.cork();
    c.socket.write(head);
    c.socket.write(body, (err) => flushed(c, err));
    c.socket.uncork();
  };

  const flushed = (c: Connection, err: Error | null | undefined) => {
    if (!connections.has(c)) return;
    unsentTotal -= c.unsent;
    c.unsent = 0;
    if (err) return drop(c);
    c.served++;
    c.since = performance.now();
    if (c.closeAfter) {
      c.phase = "closing";
      c.socket.end(() => drop(c));
      return;
    }
    c.phase = "head";
    const wait = c.requestAt + limits.minRequestIntervalMs - c.since;
    if (wait > 0) c.pacer = setTimeout(() => nextRequest(c), wait);
    else nextRequest(c);
  };

  /** Reads the connection's next request (its previous answer is flushed and its pacing interval over). */
  const nextRequest = (c: Connection) => {
    c.pacer = undefined;
    if (!connections.has(c)) return;
    c.socket.resume();
    if (c.pending.length) readHead(c);
  };

  const server = net.createServer(admit);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(Number(match[2]), host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  // accept() failures (EMFILE…) cost only the connection being accepted.
  server.on("error", () => {});
  const bound = server.address() as net.AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    address: `${bound.address}:${bound.port}`,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        closed = true;
        pace.stop();
        server.close(() => resolve());
        for (const c of [...connections]) drop(c);
      })),
  };
}

/** The index just past the blank line ending the head that starts at `from` (CRLF or bare LF line ends), or -1. */
function headEnd(buf: Buffer, from: number): number {
  for (let i = buf.indexOf(10, from); i >= 0; i = buf.indexOf(10, i + 1)) {
    if (buf[i + 1] === 10) return i + 2;
    if (buf[i + 1] === 13 && buf[i + 2] === 10) return i + 3;
  }
  return -1;
}

/** The request line and the headers that matter here; undefined when malformed. A request with a body closes the connection (bodies are not read). */
function parseHead(text: string): RequestHead | undefined {
  const lines = text.split(/\r?\n/);
  const parts = lines[0].split(" ");
  if (parts.length !== 3 || !parts[0] || !parts[1] || !/^HTTP\/1\.[01]$/.test(parts[2])) return undefined;
  let close = parts[2] === "HTTP/1.0";
  for (const line of lines.slice(1)) {
    if (!line) continue;
    const colon = line.indexOf(":");
    if (colon <= 0) return undefined;
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim().toLowerCase();
    if (name === "connection" && value.split(/\s*,\s*/).includes("close")) close = true;
    if (name === "transfer-encoding" || (name === "content-length" && value !== "0")) close = true;
  }
  return { method: parts[0], path: parts[1].split("?")[0], close };
}

/** A token bucket of answers per second, with one timer that serves waiting requests as tokens come. */
class AnswerPace {
  private timer?: NodeJS.Timeout;
  private readonly bucket: RateBucket;
  /** Milliseconds between two tokens. */
  private readonly everyMs: number;
  /** Serves waiting requests; true while some still wait. */
  private readonly serve: () => boolean;

  constructor(perSecond: number, burst: number, serve: () => boolean) {
    this.bucket = new RateBucket(burst, perSecond);
    this.everyMs = Math.max(1, Math.ceil(1000 / perSecond));
    this.serve = serve;
  }

  take(): boolean {
    return this.bucket.take();
  }

  /** Serves the waiting requests once a token is due (one timer at a time). */
  schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.serve()) this.schedule();
    }, this.everyMs);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}
