/**
 * Every bound the HTTP/2 gRPC transport keeps against its clients, in one place. Each value is a
 * contract: what a client may do before it is refused, and what the server then answers. The
 * anchors (nghttp2, grpc-go, Go's x/net/http2, Node's http2) and their values are listed in
 * docs/reliability.md, "Transport limits".
 */
export interface TransportLimits {
  /** Largest request message accepted, bytes; above it the call answers RESOURCE_EXHAUSTED. */
  maxMessageBytes: number;
  /** Concurrent streams advertised (SETTINGS_MAX_CONCURRENT_STREAMS). A stream counts from its HEADERS until both its answer is sent and its handler has ended (a reset or timed-out stream keeps counting while its handler runs); above it: RST_STREAM(REFUSED_STREAM). */
  maxConcurrentStreams: number;
  /** Largest compressed header block (HEADERS + CONTINUATION payloads), bytes; above it: GOAWAY(ENHANCE_YOUR_CALM). */
  maxHeaderBlockBytes: number;
  /** Most frames one header block may span (HEADERS + CONTINUATIONs, empty ones included); above it: GOAWAY(ENHANCE_YOUR_CALM). */
  maxHeaderBlockFrames: number;
  /** Largest decoded header list (RFC 7541 sizes: name + value + 32 per field), bytes; above it the call answers RESOURCE_EXHAUSTED. */
  maxHeaderListBytes: number;
  /** Most entries in one SETTINGS frame; above it: GOAWAY(ENHANCE_YOUR_CALM). */
  maxSettingsEntries: number;
  /** PING policy (grpc-go's): a PING arriving sooner than this many ms after the previous one, with no HEADERS or DATA sent by us in between, is a strike. */
  pingMinIntervalMs: number;
  /** Strikes tolerated; one more: GOAWAY(ENHANCE_YOUR_CALM, "too_many_pings"). */
  maxPingStrikes: number;
  /** Token bucket of RST_STREAM frames received (rapid reset): burst and refill per second; empty: GOAWAY(ENHANCE_YOUR_CALM). */
  resetBurst: number;
  resetsPerSecond: number;
  /** Token bucket of cheap frames that make work without progress (SETTINGS, PRIORITY, empty DATA without END_STREAM, refused streams, WINDOW_UPDATE beyond the credit of WINDOW_UPDATE_CREDIT_*, unknown frame types): burst and refill per second; empty: GOAWAY(ENHANCE_YOUR_CALM). */
  glitchBurst: number;
  glitchesPerSecond: number;
  /** Request data buffered on one connection (capacity of partial request bodies, at most twice the bytes received), bytes; a DATA frame that would exceed it ends its call with RESOURCE_EXHAUSTED. Half of PROCESS_BUFFERED_BYTES: one connection holds at most that share. */
  maxConnectionBufferedBytes: number;
  /** A partial request body that gains less than REQUEST_BODY_MIN_PROGRESS_BYTES (or what it lacks) in this many ms ends its call with RESOURCE_EXHAUSTED "request body stalled: …" (trailers, then RST_STREAM(NO_ERROR)) and returns its budget; found between this and 1.5 × this after its last progress. 0 = never. */
  requestBodyStallMs: number;
  /** Bytes queued for the socket and not yet written (the client does not read) above which the server stops reading from the connection — before the next frame — until the client reads (write back-pressure). */
  writeHighWaterBytes: number;
  /**
   * Outbound budget of one connection, bytes: `streamReserveBytes` per call whose handler runs,
   * plus its unsent answer bytes (queued, unwritten, waiting for flow-control window). Beyond it,
   * no frame is read (so no call starts) until the client reads or calls end (a connection with answers waiting for WINDOW_UPDATE keeps reading, and new streams are
   * refused with RST_STREAM(REFUSED_STREAM)). See outbound-budget.ts.
   */
  maxConnectionOutboundBytes: number;
  /**
   * Calls whose handler (or decompression) runs at once on one connection. A complete call beyond it
   * waits, read and queued in arrival order (its deadline runs and is answered on time), so one
   * connection cannot start host work without bound while others wait; above the outbound budget
   * calls wait the same way.
   */
  maxCallsInFlight: number;
  /**
   * A connection whose answers wait for the client's flow-control window with no DATA sent for this
   * many ms (found between this and 1.5 × this) is ended: GOAWAY(ENHANCE_YOUR_CALM, "answers_stalled"),
   * its calls cancelled. 0 = never.
   */
  answerStallMs: number;
  /** What one call holds against the outbound budgets while its handler (or decompression) runs (its state and a typical answer), bytes. */
  streamReserveBytes: number;
  /** A connection that has not sent the client preface and its first SETTINGS within this many ms is closed. */
  handshakeTimeoutMs: number;
  /**
   * After a call's grpc-timeout passes while its handler runs, the handler's signal is aborted and
   * the answer waits for the handler to end (so it says what the work did and did not do, and is sent
   * only once the work has stopped) for at most this many ms; then DEADLINE_EXCEEDED is sent saying the
   * work had not stopped yet. A call whose handler has not started is answered at once.
   */
  deadlineAnswerGraceMs: number;
  /** A connection on which no call started for this many ms (up to twice that: it is checked once per period) and none is in flight is ended gracefully: GOAWAY(NO_ERROR), then closed once no call is in flight. 0 = never. */
  idleTimeoutMs: number;
}

export const DEFAULT_LIMITS: Readonly<TransportLimits> = Object.freeze({
  maxMessageBytes: 4 * 1024 * 1024,
  maxConcurrentStreams: 1000,
  maxHeaderBlockBytes: 256 * 1024,
  maxHeaderBlockFrames: 32,
  maxHeaderListBytes: 64 * 1024,
  maxSettingsEntries: 32,
  pingMinIntervalMs: 10_000,
  maxPingStrikes: 2,
  resetBurst: 1000,
  resetsPerSecond: 33,
  glitchBurst: 1000,
  glitchesPerSecond: 33,
  maxConnectionBufferedBytes: 8 * 1024 * 1024,
  requestBodyStallMs: 10_000,
  writeHighWaterBytes: 64 * 1024,
  maxConnectionOutboundBytes: 4 * 1024 * 1024,
  streamReserveBytes: 16 * 1024,
  maxCallsInFlight: 64,
  answerStallMs: 60_000,
  handshakeTimeoutMs: 20_000,
  idleTimeoutMs: 30 * 60_000,
  deadlineAnswerGraceMs: 2_000,
});

/**
 * Request data buffered by the whole process (all connections of all endpoints), bytes. A DATA
 * frame that would exceed it ends its call with RESOURCE_EXHAUSTED.
 */
export const PROCESS_BUFFERED_BYTES = 16 * 1024 * 1024;

/**
 * Outbound budget of the whole process (all connections of all endpoints), bytes: reservations of
 * open streams plus unsent answer bytes. Above it, connections stop starting calls until it frees,
 * and the connection holding the most unsent bytes (at least writeHighWaterBytes) is closed first.
 */
export const PROCESS_OUTBOUND_BYTES = 16 * 1024 * 1024;

/** Per-stream receive window advertised (SETTINGS_INITIAL_WINDOW_SIZE): above the largest accepted message, so unary requests never wait for WINDOW_UPDATE. */
export const STREAM_RECEIVE_WINDOW = 8 * 1024 * 1024;
/** Connection receive window: the default 65535 raised by this much at once; replenished in steps of CONNECTION_WINDOW_REPLENISH as DATA arrives. */
export const CONNECTION_WINDOW_BOOST = 16 * 1024 * 1024;
export const CONNECTION_WINDOW_REPLENISH = 4 * 1024 * 1024;
/** Bytes read from client sockets by the process (all connections) after which one young-generation collection frees the dead reads (read-collector.ts). */
export const READ_COLLECT_BYTES = 2 * 1024 * 1024;
/**
 * WINDOW_UPDATE frames free of the glitch bucket: WINDOW_UPDATE_CREDIT_START per connection (its
 * opening updates), plus WINDOW_UPDATE_CREDIT_PER_SEND for each HEADERS or DATA frame we send (one
 * on the stream, one on the connection: what a reading client sends back), banked up to
 * WINDOW_UPDATE_CREDIT_MAX. Each WINDOW_UPDATE beyond the credit takes a glitch token
 * (connection-policy.ts), so a flood on stream 0 or on a stream we send nothing on ends in
 * GOAWAY(ENHANCE_YOUR_CALM, "too_many_glitches") after glitchBurst frames; each frame costs O(1)
 * (send-scheduler.ts).
 */
export const WINDOW_UPDATE_CREDIT_START = 16;
export const WINDOW_UPDATE_CREDIT_PER_SEND = 2;
export const WINDOW_UPDATE_CREDIT_MAX = 4096;
/** Largest frame accepted: the RFC default SETTINGS_MAX_FRAME_SIZE, which the server never raises. Larger: GOAWAY(FRAME_SIZE_ERROR). */
export const MAX_FRAME_ACCEPTED = 16384;

/**
 * Connections the kernel queues on a Unix socket before we accept them (listen(2) backlog; the
 * kernel caps it at net.core.somaxconn, 4096 on current kernels). Node's default, 511, let a burst
 * of 500 clients connecting at once on a loaded machine fail with EAGAIN; Go's net.Listen (grpc-go)
 * asks for somaxconn. Beyond it: EAGAIN at the client's connect.
 */
export const LISTEN_BACKLOG = 4096;
/** Connections accepted per endpoint when descriptors are plentiful. */
export const MAX_CONNECTIONS_PER_ENDPOINT = 1000;
/** Descriptors kept for everything but client connections (listeners, files, pipes of host commands). */
export const DESCRIPTOR_RESERVE = 128;

/** Connections of all endpoints together where descriptors do not bound them (Windows pipe handles). */
export const MAX_CONNECTIONS_WITHOUT_DESCRIPTOR_LIMIT = 8192;

/**
 * Connections the whole process admits (all endpoints): the descriptors left after
 * DESCRIPTOR_RESERVE, or MAX_CONNECTIONS_WITHOUT_DESCRIPTOR_LIMIT where there is no descriptor limit.
 * At it, a new connection takes the place of an idle one (connection-admission.ts).
 */
export function connectionsPerProcess(openFileLimit: number | undefined): number {
  if (openFileLimit === undefined) return MAX_CONNECTIONS_WITHOUT_DESCRIPTOR_LIMIT;
  return Math.max(16, openFileLimit - DESCRIPTOR_RESERVE);
}

/**
 * Connections one endpoint admits (at it, a new connection takes the place of an idle one of that endpoint): at most MAX_CONNECTIONS_PER_ENDPOINT,
 * and at most half of the descriptors left after DESCRIPTOR_RESERVE, so a flood on one endpoint
 * leaves the other endpoints at least the other half. `openFileLimit`: RLIMIT_NOFILE's soft value,
 * or undefined where there is none (Windows handles).
 */
export function connectionsPerEndpoint(openFileLimit: number | undefined): number {
  if (openFileLimit === undefined) return MAX_CONNECTIONS_PER_ENDPOINT;
  return Math.max(8, Math.min(MAX_CONNECTIONS_PER_ENDPOINT, Math.floor((openFileLimit - DESCRIPTOR_RESERVE) / 2)));
}

/** The RESOURCE_EXHAUSTED status message for a request message of `length` bytes over the limit `max` (grpc-go's and grpc-js's text). */
export const messageTooLarge = (length: number, max: number): string => `Received message larger than max (${length} vs. ${max})`;
