import { Http2ConnectionError } from "./http2-connection-error.ts";
import type { ConnectionPolicy } from "./connection-policy.ts";
import {
  CLIENT_PREFACE, FLAG_ACK, FLAG_END_HEADERS, FLAG_END_STREAM, FLAG_PADDED, FLAG_PRIORITY, FLOW_CONTROL_ERROR, FRAME_SIZE_ERROR,
  MAX_WINDOW, PROTOCOL_ERROR, SETTINGS_ENABLE_PUSH, SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_FRAME_SIZE, TYPE_CONTINUATION,
  TYPE_DATA, TYPE_GOAWAY, TYPE_HEADERS, TYPE_PING, TYPE_PRIORITY, TYPE_PUSH_PROMISE, TYPE_RST_STREAM, TYPE_SETTINGS,
  TYPE_WINDOW_UPDATE,
} from "./http2-frames.ts";
import { MAX_FRAME_ACCEPTED } from "./transport-limits.ts";

/**
 * What the reader hands on: frames checked against RFC 9113's frame-level rules (sizes, stream 0,
 * padding, SETTINGS values), header blocks whole (HEADERS + CONTINUATION joined). Payload ranges
 * `[start, end)` point into the reader's buffer and are valid only during the call.
 */
export interface FrameHandler {
  /** The client's first SETTINGS arrived (called before that frame is handed on). */
  handshakeDone(): void;
  /** DATA without its padding; `frameLength` is the whole payload (padding included, what flow control counts). */
  data(id: number, endStream: boolean, buf: Buffer, start: number, end: number, frameLength: number): void;
  /** A complete header block; `flags` are those of its HEADERS frame (END_STREAM). */
  headerBlock(id: number, flags: number, block: Buffer): void;
  rstStream(id: number): void;
  /** A SETTINGS frame (not ACK), its values checked; undefined: not in the frame. */
  settings(initialWindow: number | undefined, maxFrameSize: number | undefined): void;
  ping(buf: Buffer, start: number, end: number): void;
  pingAck(buf: Buffer, start: number, end: number): void;
  /** WINDOW_UPDATE; a 0 increment on stream 0 was already refused. */
  windowUpdate(id: number, increment: number): void;
  /** PRIORITY on a stream; `wellFormed`: its payload is 5 bytes. */
  priority(id: number, wellFormed: boolean): void;
}

/** Asked before each frame: whether it may be handed on now; told when frames are held back. */
export interface ReadGate {
  mayRead(): boolean;
  /** Frames are held back until resume(). */
  paused(): void;
}

/**
 * Reads the client side of one HTTP/2 connection (golang/net http2's Framer, server side): checks
 * the client preface, reassembles frames across socket chunks (at most one partial frame is kept,
 * as a copy, so no chunk is retained), checks each frame and hands it on in order. Throws
 * Http2ConnectionError for a connection error; the caller ends the connection with GOAWAY.
 * Header blocks are assembled under `policy`'s size bounds; SETTINGS, PRIORITY and unknown frames
 * are glitches to the policy. With a `gate`, a frame the gate does not let through is held back
 * with everything after it (bytes arriving meanwhile are appended) until resume().
 */
export class FrameReader {
  private readonly handler: FrameHandler;
  private readonly policy: ConnectionPolicy;
  private rest: Buffer = EMPTY;
  private prefaceDone = false;
  private settingsSeen = false;
  /** A header block awaiting CONTINUATION frames. */
  private continuing: { id: number; flags: number; fragments: Buffer[]; size: number; frames: number } | null = null;
  /** Set by the owner: no frame is handed on once true (the connection closed). */
  stopped = false;
  private readonly gate?: ReadGate;
  /** Frames read but held back by the gate: `rest` starts at a frame boundary and may hold many frames. */
  private holding = false;

  constructor(handler: FrameHandler, policy: ConnectionPolicy, gate?: ReadGate) {
    this.handler = handler;
    this.policy = policy;
    this.gate = gate;
  }

  /** The client's preface and first SETTINGS have arrived. */
  get handshakeComplete(): boolean {
    return this.settingsSeen;
  }

  /** Bytes of a partial frame (or preface) held between chunks. */
  get heldBytes(): number {
    return this.rest.length;
  }

  /**
   * Reads one socket chunk. False when the bytes are not the client preface (the caller closes the
   * socket without an answer). Throws Http2ConnectionError.
   */
  push(chunk: Buffer): boolean {
    if (this.holding) {
      this.rest = Buffer.concat([this.rest, chunk]);
      return true;
    }
    let buf = chunk, pos = 0;
    if (!this.prefaceDone) {
      if (this.rest.length) buf = Buffer.concat([this.rest, chunk]);
      const have = Math.min(buf.length, CLIENT_PREFACE.length);
      if (buf.compare(CLIENT_PREFACE, 0, have, 0, have) !== 0) return false;
      if (buf.length < CLIENT_PREFACE.length) {
        this.rest = Buffer.from(buf);
        return true;
      }
      this.rest = EMPTY;
      this.prefaceDone = true;
      pos = CLIENT_PREFACE.length;
    } else if (this.rest.length) {
      // Complete the partial frame with the first bytes of the chunk (no copy of the whole chunk).
      pos = this.completeFrame(chunk);
      if (pos < 0) return true;
    }
    if (this.rest.length) {
      const first = this.rest;
      this.rest = EMPTY;
      if (this.frames(first, 0) === 0 && this.holding) {
        this.rest = Buffer.concat([first, buf.subarray(pos)]);
        this.gate!.paused();
        return true;
      }
    }
    pos = this.frames(buf, pos);
    // Keep a copy of a partial frame (or of the frames held back) so the socket's chunk is not retained.
    if (!this.stopped && pos < buf.length) this.rest = Buffer.from(buf.subarray(pos));
    if (this.holding) this.gate!.paused();
    return true;
  }

  /** Frames are held back by the gate. */
  get held(): boolean {
    return this.holding;
  }

  /** Hands on the frames held back, while the gate lets it (it may hold the rest again). Throws Http2ConnectionError. */
  resume(): void {
    if (!this.holding || this.stopped) return;
    this.holding = false;
    const buf = this.rest;
    this.rest = EMPTY;
    const pos = this.frames(buf, 0);
    if (!this.stopped && pos < buf.length) this.rest = pos === 0 ? buf : buf.subarray(pos);
    if (this.holding) this.gate!.paused();
  }

  /** Drops what is held (the connection closed). */
  clear(): void {
    this.stopped = true;
    this.holding = false;
    this.rest = EMPTY;
    this.continuing = null;
  }

  /**
   * Appends to `rest` (a partial frame) what it lacks from the start of `chunk`. Returns the offset
   * in `chunk` after the bytes taken, with `rest` then one whole frame; or -1 when the chunk did not
   * complete it (all of it is in `rest`).
   */
  private completeFrame(chunk: Buffer): number {
    let rest = this.rest, used = 0;
    if (rest.length < 9) {
      used = Math.min(9 - rest.length, chunk.length);
      rest = Buffer.concat([rest, chunk.subarray(0, used)]);
      if (rest.length < 9) {
        this.rest = rest;
        return -1;
      }
    }
    const length = (rest[0] << 16) | (rest[1] << 8) | rest[2];
    const take = Math.min(9 + Math.min(length, MAX_FRAME_ACCEPTED + 1) - rest.length, chunk.length - used);
    this.rest = Buffer.concat([rest, chunk.subarray(used, used + take)]);
    used += take;
    return this.rest.length >= 9 + length || length > MAX_FRAME_ACCEPTED ? used : -1;
  }

  /** Handles the whole frames of `buf` from `pos`; returns the offset of the first incomplete one. */
  private frames(buf: Buffer, pos: number): number {
    while (buf.length - pos >= 9 && !this.stopped) {
      if (this.gate && !this.gate.mayRead()) {
        this.holding = true;
        break;
      }
      const length = (buf[pos] << 16) | (buf[pos + 1] << 8) | buf[pos + 2];
      if (length > MAX_FRAME_ACCEPTED) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "frame too large");
      if (buf.length - pos < 9 + length) break;
      const type = buf[pos + 3], flags = buf[pos + 4];
      const id = buf.readUInt32BE(pos + 5) & 0x7fffffff;
      this.frame(type, flags, id, buf, pos + 9, pos + 9 + length);
      pos += 9 + length;
    }
    return pos;
  }

  private frame(type: number, flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (this.continuing && type !== TYPE_CONTINUATION) throw new Http2ConnectionError(PROTOCOL_ERROR, "expected CONTINUATION");
    if (!this.settingsSeen) {
      if (type !== TYPE_SETTINGS || flags & FLAG_ACK) throw new Http2ConnectionError(PROTOCOL_ERROR, "the client preface must start with SETTINGS");
      this.settingsSeen = true;
      this.handler.handshakeDone();
    }
    const h = this.handler;
    switch (type) {
      case TYPE_DATA: {
        if (id === 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "DATA on stream 0");
        const length = end - start;
        if (flags & FLAG_PADDED) {
          if (end - start < 1 || buf[start] >= end - start) throw new Http2ConnectionError(PROTOCOL_ERROR, "bad padding");
          end -= buf[start];
          start += 1;
        }
        if (end === start && !(flags & FLAG_END_STREAM)) this.policy.glitch();
        return h.data(id, (flags & FLAG_END_STREAM) !== 0, buf, start, end, length);
      }
      case TYPE_HEADERS: {
        if (id === 0 || (id & 1) === 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "bad stream id");
        let s = start, e = end;
        if (flags & FLAG_PADDED) {
          if (e - s < 1 || buf[s] >= e - s) throw new Http2ConnectionError(PROTOCOL_ERROR, "bad padding");
          e -= buf[s];
          s += 1;
        }
        if (flags & FLAG_PRIORITY) s += 5;
        if (s > e) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "short HEADERS");
        const fragment = buf.subarray(s, e);
        if (flags & FLAG_END_HEADERS) return h.headerBlock(id, flags, fragment);
        this.policy.headerBlock(fragment.length, 1);
        this.continuing = { id, flags, fragments: [Buffer.from(fragment)], size: fragment.length, frames: 1 };
        return;
      }
      case TYPE_CONTINUATION: {
        const c = this.continuing;
        if (!c || c.id !== id) throw new Http2ConnectionError(PROTOCOL_ERROR, "unexpected CONTINUATION");
        c.size += end - start;
        this.policy.headerBlock(c.size, ++c.frames);
        if (end > start) c.fragments.push(Buffer.from(buf.subarray(start, end)));
        if (!(flags & FLAG_END_HEADERS)) return;
        this.continuing = null;
        return h.headerBlock(id, c.flags, c.fragments.length === 1 ? c.fragments[0] : Buffer.concat(c.fragments));
      }
      case TYPE_RST_STREAM:
        if (id === 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "RST_STREAM on stream 0");
        if (end - start !== 4) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "bad RST_STREAM");
        return h.rstStream(id);
      case TYPE_SETTINGS:
        return this.settingsFrame(flags, id, buf, start, end);
      case TYPE_PING:
        if (id !== 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "PING on a stream");
        if (end - start !== 8) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "bad PING");
        return flags & FLAG_ACK ? h.pingAck(buf, start, end) : h.ping(buf, start, end);
      case TYPE_WINDOW_UPDATE: {
        if (end - start !== 4) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "bad WINDOW_UPDATE");
        const increment = buf.readUInt32BE(start) & 0x7fffffff;
        if (id === 0 && increment === 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
        return h.windowUpdate(id, increment);
      }
      case TYPE_PRIORITY:
        if (id === 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "PRIORITY on stream 0");
        this.policy.glitch();
        return h.priority(id, end - start === 5);
      case TYPE_PUSH_PROMISE:
        throw new Http2ConnectionError(PROTOCOL_ERROR, "PUSH_PROMISE from a client");
      case TYPE_GOAWAY:
        return; // the client closes the socket itself; calls in flight still get their answers
      default:
        this.policy.glitch(); // extension frames: ignored (RFC 9113 §5.5), but they cost a read
        return;
    }
  }

  private settingsFrame(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id !== 0) throw new Http2ConnectionError(PROTOCOL_ERROR, "SETTINGS on a stream");
    if (flags & FLAG_ACK) {
      if (end !== start) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "SETTINGS ACK with a payload");
      return;
    }
    if ((end - start) % 6) throw new Http2ConnectionError(FRAME_SIZE_ERROR, "bad SETTINGS");
    this.policy.settings((end - start) / 6);
    this.policy.glitch();
    let initialWindow: number | undefined, maxFrameSize: number | undefined;
    for (let p = start; p < end; p += 6) {
      const key = buf.readUInt16BE(p), value = buf.readUInt32BE(p + 2);
      if (key === SETTINGS_INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW) throw new Http2ConnectionError(FLOW_CONTROL_ERROR, "window too large");
        initialWindow = value;
      } else if (key === SETTINGS_MAX_FRAME_SIZE) {
        if (value < 16384 || value > 16777215) throw new Http2ConnectionError(PROTOCOL_ERROR, "bad max frame size");
        maxFrameSize = value;
      } else if (key === SETTINGS_ENABLE_PUSH && value > 1) {
        throw new Http2ConnectionError(PROTOCOL_ERROR, "bad ENABLE_PUSH");
      }
    }
    this.handler.settings(initialWindow, maxFrameSize);
  }
}

const EMPTY = Buffer.alloc(0);
