import { Http2ConnectionError } from "./http2-connection-error.ts";
import { FLOW_CONTROL_ERROR, MAX_WINDOW, PROTOCOL_ERROR, SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_CONCURRENT_STREAMS, settings, windowUpdate } from "./http2-frames.ts";
import { CONNECTION_WINDOW_BOOST, CONNECTION_WINDOW_REPLENISH, STREAM_RECEIVE_WINDOW } from "./transport-limits.ts";

/** A stream's send window as flow control sees it (CallStream has it). */
export interface WindowedStream {
  /** Our send window for this stream, bytes (may go negative after the client lowers SETTINGS_INITIAL_WINDOW_SIZE). */
  sendWindow: number;
}

/**
 * HTTP/2 flow control of one connection, server side (RFC 9113 §5.2, §6.9; grpc-go's
 * flowcontrol.go): our send windows (the connection's and, on each stream, the stream's) as the
 * client's SETTINGS and WINDOW_UPDATEs set them, the client's largest frame, and the receive side:
 * request bytes are acknowledged on the connection in steps of CONNECTION_WINDOW_REPLENISH (the
 * stream windows are larger than any accepted message, so streams get no WINDOW_UPDATE).
 */
export class FlowControl {
  /** Our send window on the connection, bytes. */
  connection = 65535;
  /** SETTINGS_INITIAL_WINDOW_SIZE of the client: a new stream's send window. */
  initialStreamWindow = 65535;
  /** SETTINGS_MAX_FRAME_SIZE of the client: the largest DATA payload we send. */
  maxFrame = 16384;
  private receivedUnacked = 0;

  /** DATA of `bytes` (whole payload) received: the WINDOW_UPDATE increment to send on stream 0 now, or 0. */
  received(bytes: number): number {
    this.receivedUnacked += bytes;
    if (this.receivedUnacked < CONNECTION_WINDOW_REPLENISH) return 0;
    const increment = this.receivedUnacked;
    this.receivedUnacked = 0;
    return increment;
  }

  /** WINDOW_UPDATE on stream 0. Throws FLOW_CONTROL_ERROR above 2^31-1 (0 was refused by the reader). */
  connectionUpdate(increment: number): void {
    this.connection += increment;
    if (this.connection > MAX_WINDOW) throw new Http2ConnectionError(FLOW_CONTROL_ERROR, "connection window above 2^31-1");
  }

  /** WINDOW_UPDATE on a stream: 0 when applied, else the RST_STREAM code the stream ends with. */
  streamUpdate(stream: WindowedStream, increment: number): number {
    if (increment === 0) return PROTOCOL_ERROR;
    stream.sendWindow += increment;
    return stream.sendWindow > MAX_WINDOW ? FLOW_CONTROL_ERROR : 0;
  }

  /** The client's new SETTINGS_INITIAL_WINDOW_SIZE: every open stream's window moves by the difference. */
  setInitialWindow(value: number, streams: Iterable<WindowedStream>): void {
    const delta = value - this.initialStreamWindow;
    this.initialStreamWindow = value;
    for (const stream of streams) stream.sendWindow += delta;
  }

  /** True when a DATA frame of `payload` bytes may go out on `stream` now, in one frame. */
  fitsWhole(stream: WindowedStream, payload: number): boolean {
    return payload <= this.maxFrame && payload <= this.connection && payload <= stream.sendWindow;
  }

  /** The largest DATA payload that may go out on `stream` now (≤ `wanted`; 0: blocked), taken from both windows. */
  take(stream: WindowedStream, wanted: number): number {
    const size = Math.min(wanted, this.maxFrame, this.connection, stream.sendWindow);
    if (size <= 0) return 0;
    this.connection -= size;
    stream.sendWindow -= size;
    return size;
  }
}

/** What the server sends first on every connection: SETTINGS (max concurrent streams, the stream receive window) and the connection-window boost. */
export function serverPreface(maxConcurrentStreams: number): Buffer {
  return Buffer.concat([
    settings([[SETTINGS_MAX_CONCURRENT_STREAMS, maxConcurrentStreams], [SETTINGS_INITIAL_WINDOW_SIZE, STREAM_RECEIVE_WINDOW]]),
    windowUpdate(0, CONNECTION_WINDOW_BOOST),
  ]);
}
