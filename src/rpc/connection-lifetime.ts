import type { Duplex } from "node:stream";
import { NO_ERROR, goaway, ping } from "./http2-frames.ts";
import type { AdmissionEntry } from "./connection-admission.ts";
import type { TransportLimits } from "./transport-limits.ts";

/** What the lifetime reads of its connection. */
export interface LifetimeView {
  /** Streams counted against maxConcurrentStreams (open, or closed while their handler runs). */
  active(): number;
  /** Highest stream id processed (the final GOAWAY's last stream id). */
  lastStreamId(): number;
  closed(): boolean;
  handshakeComplete(): boolean;
}

/**
 * When one connection ends without an error: the handshake timeout (a client that has not sent the
 * preface and its SETTINGS within handshakeTimeoutMs is closed), and the idle timeout with grpc-go's
 * graceful close (GOAWAY(2^31-1, NO_ERROR) and a PING; once acknowledged, or after 1 s, GOAWAY with
 * the last stream id; the socket ends once no call is in flight). One timer per connection, run every
 * idleTimeoutMs (no timer work per call): a connection is idle when no stream started during a whole
 * period and none is active at its end, so it is ended between idleTimeoutMs and twice that after its
 * last call. With an admission entry, it reports the handshake and calls to admission, and is
 * ended by it when admission needs room (connection-admission.ts).
 */
export class ConnectionLifetime {
  private readonly socket: Duplex;
  private readonly sender: { write(bytes: Buffer): void; flush(): void };
  private readonly limits: TransportLimits;
  private readonly view: LifetimeView;
  private readonly admission?: AdmissionEntry;
  private timer: NodeJS.Timeout;
  /** A stream started since the idle timer last ran. */
  private touched = false;
  /** The first GOAWAY (2^31 - 1) was sent. */
  private draining = false;
  /** The second GOAWAY, with the last stream id processed, was sent: later streams are ignored. */
  finalGoaway = false;

  constructor(socket: Duplex, sender: { write(bytes: Buffer): void; flush(): void }, limits: TransportLimits, view: LifetimeView, admission?: AdmissionEntry) {
    this.socket = socket;
    this.sender = sender;
    this.limits = limits;
    this.view = view;
    this.admission = admission;
    if (admission) {
      admission.busy = () => view.active() > 0;
      admission.evict = () => this.evict();
    }
    this.timer = setTimeout(this.onHandshakeTimeout, limits.handshakeTimeoutMs);
    this.timer.unref();
  }

  /** The client's preface and first SETTINGS arrived: the idle timer replaces the handshake timer. */
  handshakeDone(): void {
    this.armIdleTimer();
    this.admission?.handshakeDone();
  }

  streamStarted(): void {
    this.touched = true;
    this.admission?.called();
  }

  /** A PING ACK: ours (sent with the first GOAWAY) lets the final GOAWAY go at once. */
  pingAck(buf: Buffer, start: number, end: number): void {
    if (this.draining && !this.finalGoaway && buf.compare(GOAWAY_PING, 0, 8, start, end) === 0) this.sendFinalGoaway();
  }

  /** The last active stream retired. */
  idle(): void {
    this.admission?.called();
    if (this.finalGoaway && !this.view.closed()) this.endSocket();
  }

  /** The connection closed: no timer is left. */
  stop(): void {
    clearTimeout(this.timer);
    this.admission?.closed();
  }

  /** Admission chose this connection (no call in flight) to make room: GOAWAY(NO_ERROR) and closed at once (a connection in its handshake: closed). */
  private evict(): void {
    if (this.view.closed()) return;
    if (this.view.handshakeComplete()) {
      this.sender.write(goaway(this.view.lastStreamId(), NO_ERROR, "evicted"));
      this.sender.flush();
    }
    this.socket.destroy();
  }

  private readonly onHandshakeTimeout = () => {
    if (!this.view.handshakeComplete()) this.socket.destroy();
  };

  private armIdleTimer(): void {
    clearTimeout(this.timer);
    if (!this.limits.idleTimeoutMs) return;
    this.timer = setTimeout(this.onIdleTimer, this.limits.idleTimeoutMs);
    this.timer.unref();
  }

  private readonly onIdleTimer = () => {
    if (this.view.closed() || this.draining) return;
    if (this.view.active() > 0 || this.touched) {
      this.touched = false;
      return this.armIdleTimer();
    }
    this.draining = true;
    this.sender.write(goaway(0x7fffffff, NO_ERROR, "max_idle"));
    this.sender.write(ping(false, GOAWAY_PING));
    this.timer = setTimeout(() => this.sendFinalGoaway(), 1000);
    this.timer.unref();
  };

  private sendFinalGoaway(): void {
    if (this.finalGoaway || this.view.closed()) return;
    this.finalGoaway = true;
    clearTimeout(this.timer);
    this.sender.write(goaway(this.view.lastStreamId(), NO_ERROR, "max_idle"));
    if (this.view.active() === 0) this.endSocket();
  }

  private endSocket(): void {
    this.sender.flush();
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }
}

const GOAWAY_PING = Buffer.from("csiproxy", "latin1");
