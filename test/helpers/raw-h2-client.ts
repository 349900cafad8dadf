// A deliberately low-level HTTP/2 gRPC client for tests: it writes frames byte by byte so tests can
// send what real Go clients send (a raw `\\.\pipe\…` :authority, dynamic-table references,
// CONTINUATION, padding, priority) — things Node's own http2 client will not produce.
import * as net from "node:net";
import hpack from "hpack.js";

export interface RawHeader {
  name: string;
  value: string;
  /** "index": literal with incremental indexing (adds to the dynamic table); "literal": without indexing; a number: send this table index instead. */
  mode?: "index" | "literal" | number;
}

export interface FrameOptions {
  /** Split the header block into this many pieces (HEADERS + CONTINUATIONs). */
  pieces?: number;
  padding?: number;
  priority?: boolean;
}

function int(value: number, prefixBits: number, first: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  for (value -= max; value >= 128; value >>= 7) out.push((value & 127) | 128);
  out.push(value);
  return out;
}
const str = (s: string) => Buffer.concat([Buffer.from(int(Buffer.byteLength(s, "latin1"), 7, 0)), Buffer.from(s, "latin1")]);

export function encodeHeaderBlock(headers: RawHeader[]): Buffer {
  return Buffer.concat(
    headers.map((h) =>
      typeof h.mode === "number"
        ? Buffer.from(int(h.mode, 7, 0x80))
        : Buffer.concat([Buffer.from([h.mode === "index" ? 0x40 : 0x00]), str(h.name), str(h.value)]),
    ),
  );
}

/** One HTTP/2 frame: the 9-byte header (length, type, flags, stream id) and its payload. */
export function frame(type: number, flags: number, stream: number, payload: Uint8Array = Buffer.alloc(0)): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(stream, 5);
  return Buffer.concat([header, payload]);
}

export interface RawResponse {
  status: number;
  message: string;
  body: Buffer;
  /** Set when the server reset the stream (RST_STREAM error code). */
  reset?: number;
}

/** One HTTP/2 connection; `call` sends a unary gRPC request on the next odd stream id. */
export class RawH2Client {
  private readonly socket: net.Socket;
  private buffer = Buffer.alloc(0);
  private nextStream = 1;
  private readonly decoder = hpack.decompressor.create({ table: { maxSize: 4096 } });
  private readonly waiting = new Map<number, { headers: [string, string][]; body: Buffer[]; resolve: (r: RawResponse) => void }>();
  readonly ready: Promise<void>;

  constructor(address: string) {
    this.socket = net.connect(address);
    this.ready = new Promise((resolve, reject) => {
      this.socket.once("connect", () => resolve());
      this.socket.once("error", reject);
    });
    this.socket.on("data", (d: Buffer) => this.onData(d));
    this.socket.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(0x4, 0, 0, Buffer.alloc(0))]));
  }

  call(headers: RawHeader[], message: Buffer, options: FrameOptions = {}): Promise<RawResponse> {
    const stream = this.nextStream;
    this.nextStream += 2;
    const block = encodeHeaderBlock(headers);
    const pieces = Math.max(1, options.pieces ?? 1);
    const size = Math.ceil(block.length / pieces);
    const frames: Buffer[] = [];
    for (let i = 0; i < pieces; i++) {
      const part = block.subarray(i * size, (i + 1) * size);
      const last = i === pieces - 1;
      if (i === 0) {
        let flags = last ? 0x4 : 0;
        const parts: Buffer[] = [];
        if (options.padding) {
          flags |= 0x8;
          parts.push(Buffer.from([options.padding]));
        }
        if (options.priority) {
          flags |= 0x20;
          parts.push(Buffer.from([0, 0, 0, 0, 15]));
        }
        parts.push(part);
        if (options.padding) parts.push(Buffer.alloc(options.padding));
        frames.push(frame(0x1, flags, stream, Buffer.concat(parts)));
      } else frames.push(frame(0x9, last ? 0x4 : 0, stream, part));
    }
    const grpcMessage = Buffer.alloc(5 + message.length);
    grpcMessage.writeUInt32BE(message.length, 1);
    message.copy(grpcMessage, 5);
    frames.push(frame(0x0, 0x1, stream, grpcMessage));
    return new Promise((resolve) => {
      this.waiting.set(stream, { headers: [], body: [], resolve });
      this.socket.write(Buffer.concat(frames));
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer) {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    while (this.buffer.length >= 9) {
      const length = this.buffer.readUIntBE(0, 3);
      if (this.buffer.length < 9 + length) return;
      const type = this.buffer[3], flags = this.buffer[4], stream = this.buffer.readUInt32BE(5) & 0x7fffffff;
      const payload = this.buffer.subarray(9, 9 + length);
      this.buffer = this.buffer.subarray(9 + length);
      const pending = this.waiting.get(stream);
      if (type === 0x4 && !(flags & 0x1)) this.socket.write(frame(0x4, 0x1, 0, Buffer.alloc(0)));
      else if (type === 0x1 && pending) {
        let p = payload;
        if (flags & 0x8) p = p.subarray(1, p.length - p[0]);
        if (flags & 0x20) p = p.subarray(5);
        this.decoder.write(p);
        this.decoder.execute();
        for (let h = this.decoder.read(); h; h = this.decoder.read()) pending.headers.push([h.name, h.value]);
        if (flags & 0x1) this.finish(stream);
      } else if (type === 0x0 && pending) {
        pending.body.push(payload);
        if (flags & 0x1) this.finish(stream);
      } else if (type === 0x3 && pending) {
        this.waiting.delete(stream);
        pending.resolve({ status: -1, message: "", body: Buffer.alloc(0), reset: payload.readUInt32BE(0) });
      }
    }
  }

  private finish(stream: number) {
    const pending = this.waiting.get(stream)!;
    this.waiting.delete(stream);
    const get = (n: string) => pending.headers.find(([k]) => k === n)?.[1];
    const body = Buffer.concat(pending.body);
    pending.resolve({
      status: Number(get("grpc-status") ?? -1),
      message: decodeURIComponent(get("grpc-message") ?? ""),
      body: body.length >= 5 ? body.subarray(5, 5 + body.readUInt32BE(1)) : Buffer.alloc(0),
    });
  }
}

/** The headers a Go gRPC client sends for a unary call, with the given authority. */
export function grpcHeaders(path: string, authority: string, mode: RawHeader["mode"] = "literal"): RawHeader[] {
  return [
    { name: ":method", value: "POST" },
    { name: ":scheme", value: "http" },
    { name: ":path", value: path },
    { name: ":authority", value: authority, mode },
    { name: "content-type", value: "application/grpc" },
    { name: "user-agent", value: "grpc-go/1.33.3" },
    { name: "te", value: "trailers" },
  ];
}
