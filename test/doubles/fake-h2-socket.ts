// A Duplex stand-in for one client socket of a GrpcConnection, in process: the test hands it the
// client's bytes (`feed`) and reads back the frames the server wrote, without a kernel socket, so
// the server's own cost per frame can be timed apart from any client.
import { EventEmitter } from "node:events";
import type { Duplex } from "node:stream";
import { encodeHeaderBlock, frame, grpcHeaders } from "../helpers/raw-h2-client.ts";

export interface WrittenFrame { type: number; flags: number; id: number; payload: Buffer }

export class FakeH2Socket extends EventEmitter {
  private out: Buffer[] = [];
  writableLength = 0;
  destroyed = false;
  write(bytes: Buffer): boolean {
    if (!this.destroyed) this.out.push(Buffer.from(bytes));
    return true;
  }
  pause(): this {
    return this;
  }
  resume(): this {
    return this;
  }
  end(): this {
    return this;
  }
  destroy(): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    queueMicrotask(() => this.emit("close"));
    return this;
  }
  get duplex(): Duplex {
    return this as unknown as Duplex;
  }
  /** The client's bytes, as one socket chunk. */
  feed(bytes: Buffer): void {
    this.emit("data", bytes);
  }
  /** Every frame the server wrote since the last call (the server preface included on the first). */
  frames(): WrittenFrame[] {
    const all = Buffer.concat(this.out);
    this.out = [];
    const frames: WrittenFrame[] = [];
    for (let p = 0; p + 9 <= all.length; ) {
      const length = all.readUIntBE(p, 3);
      frames.push({ type: all[p + 3], flags: all[p + 4], id: all.readUInt32BE(p + 5) & 0x7fffffff, payload: all.subarray(p + 9, p + 9 + length) });
      p += 9 + length;
    }
    return frames;
  }
}

export const CLIENT_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** SETTINGS with the given [id, value] pairs. */
export function settingsFrame(entries: [number, number][]): Buffer {
  const payload = Buffer.alloc(6 * entries.length);
  entries.forEach(([id, value], i) => (payload.writeUInt16BE(id, 6 * i), payload.writeUInt32BE(value, 6 * i + 2)));
  return frame(0x4, 0, 0, payload);
}

export function windowUpdateFrame(id: number, increment: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(increment, 0);
  return frame(0x8, 0, id, payload);
}

/** HEADERS (literal fields, END_HEADERS) and one DATA frame with END_STREAM carrying an empty gRPC message: a whole unary call. */
export function unaryCallFrames(id: number, path: string, extra: { name: string; value: string }[] = []): Buffer {
  return Buffer.concat([frame(0x1, 0x4, id, encodeHeaderBlock([...grpcHeaders(path, "localhost"), ...extra])), frame(0x0, 0x1, id, Buffer.alloc(5))]);
}
