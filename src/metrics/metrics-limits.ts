/**
 * Every bound the metrics endpoint (-metrics-bind-address) keeps, so that no scraper can take
 * memory, descriptors or event-loop time from the gRPC endpoints sharing the process.
 * docs/reliability.md "Transport limits" lists them beside what Go's net/http (upstream's
 * promhttp), nghttp2 and Node's http server keep.
 */
export interface MetricsLimits {
  /** The exposition is rendered at most once per this many ms; every scrape in between gets that snapshot. */
  renderIntervalMs: number;
  /**
   * Open connections at most. At the cap a new connection is admitted and another closed: the
   * connection idle longest among those already answered (keep-alive, or held back by
   * minRequestIntervalMs); else the one whose request head has been arriving longest (slowloris);
   * else the one whose answer (waiting for maxAnswersPerSecond, rendering or being written) has been
   * pending longest, if at least evictAfterMs. Only when every connection holds a request younger than
   * that is the new one closed. A scraper that sends its request at once is thus never the first to go.
   */
  maxConnections: number;
  /** A connection in the middle of an answer may be evicted by a new connection only after its answer has been pending this long. */
  evictAfterMs: number;
  /**
   * A keep-alive connection's next request is read no sooner than this many ms after its previous
   * request was read (the socket stays paused meanwhile; pipelined bytes wait): each connection gets
   * at most 1000 / minRequestIntervalMs answers per second, so a flood of keep-alive scrapers costs
   * at most maxConnections × that many answers per second.
   */
  minRequestIntervalMs: number;
  /**
   * Answers per second of all connections together (a token bucket with a burst of maxConnections):
   * a request beyond it waits, its connection paused, in arrival order (at most maxConnections
   * wait, one per connection), so churning connections cannot multiply the per-connection pace.
   */
  maxAnswersPerSecond: number;
  /** A request head (request line + headers) larger than this is answered 431 and the connection closed. */
  maxHeadBytes: number;
  /**
   * The complete request head must arrive within this many ms of the connection opening or of the
   * previous answer being flushed (this is also the keep-alive idle time); else the connection is closed.
   */
  headTimeoutMs: number;
  /**
   * A request's snapshot must be ready within this many ms of the request, and its answer flushed to
   * the kernel within this many ms of being written; else the connection is closed.
   */
  answerTimeoutMs: number;
  /**
   * Request bytes read ahead of the request being answered (pipelining) kept at most; more, and the
   * connection is closed once the current answer is flushed. Requests are answered one at a time:
   * the socket is not read while an answer is being written, so unsent bytes per connection are
   * at most one answer.
   */
  maxReadAheadBytes: number;
  /**
   * Unsent answer bytes of all connections together at most (each answer counted in full until it is
   * flushed, though answers written from one snapshot share its memory). An answer that would exceed
   * it first closes the connections whose answers have waited longest; one answer alone is always allowed.
   */
  maxUnsentBytes: number;
}

export const metricsLimits: MetricsLimits = {
  renderIntervalMs: 1000,
  maxConnections: 32,
  evictAfterMs: 1000,
  minRequestIntervalMs: 100,
  maxAnswersPerSecond: 320,
  maxHeadBytes: 8 * 1024,
  headTimeoutMs: 5000,
  answerTimeoutMs: 10_000,
  maxReadAheadBytes: 16 * 1024,
  maxUnsentBytes: 8 * 1024 * 1024,
};
