import { ENHANCE_YOUR_CALM } from "./http2-frames.ts";
import { Http2ConnectionError } from "./http2-connection-error.ts";
import { RateBucket } from "../util/rate-bucket.ts";
import { WINDOW_UPDATE_CREDIT_MAX, WINDOW_UPDATE_CREDIT_PER_SEND, WINDOW_UPDATE_CREDIT_START, type TransportLimits } from "./transport-limits.ts";

/**
 * The abuse accounting of one connection (bounds in transport-limits.ts): the rapid-reset and
 * glitch token buckets, the WINDOW_UPDATE credit, grpc-go's PING strikes, and the size bounds of header blocks and SETTINGS.
 * Each check either returns or throws Http2ConnectionError(ENHANCE_YOUR_CALM, <debug text>), which
 * ends the connection with GOAWAY. O(1) per call, no timers.
 */
export class ConnectionPolicy {
  private readonly limits: TransportLimits;
  private readonly resets: RateBucket;
  private readonly glitches: RateBucket;
  /** PING policy state (grpc-go's): strikes, when the last PING came, and whether we sent HEADERS/DATA since. */
  private pingStrikes = 0;
  private lastPingAt = -Infinity;
  private sentSincePing = false;
  /** WINDOW_UPDATE frames a reading client may still send without a glitch (WINDOW_UPDATE_CREDIT_*). */
  private windowCredit = WINDOW_UPDATE_CREDIT_START;

  constructor(limits: TransportLimits) {
    this.limits = limits;
    this.resets = new RateBucket(limits.resetBurst, limits.resetsPerSecond);
    this.glitches = new RateBucket(limits.glitchBurst, limits.glitchesPerSecond);
  }

  /** One cheap frame that makes work without progress; too many: "too_many_glitches". */
  glitch(): void {
    if (!this.glitches.take()) throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "too_many_glitches");
  }

  /** One RST_STREAM received for a known stream; too many: "too_many_resets" (rapid reset). */
  reset(): void {
    if (!this.resets.take()) throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "too_many_resets");
  }

  /** We sent HEADERS or DATA: the PING strikes start over at the next PING. */
  sent(): void {
    this.sentSincePing = true;
    this.windowCredit = Math.min(WINDOW_UPDATE_CREDIT_MAX, this.windowCredit + WINDOW_UPDATE_CREDIT_PER_SEND);
  }

  /**
   * One WINDOW_UPDATE received. A client that reads sends at most one per stream and one on the
   * connection for what we sent, so each HEADERS/DATA we send earns WINDOW_UPDATE_CREDIT_PER_SEND
   * free ones (banked up to WINDOW_UPDATE_CREDIT_MAX; WINDOW_UPDATE_CREDIT_START at the start for
   * its opening updates); one beyond that — a rate far above the frames we send — is a glitch.
   */
  windowUpdate(): void {
    if (this.windowCredit >= 1) this.windowCredit--;
    else this.glitch();
  }

  /**
   * grpc-go's keepalive enforcement: PINGs faster than pingMinIntervalMs with nothing sent by us in
   * between are strikes. With a call in flight (`callsInFlight`), a PING is never a strike (grpc-go's
   * PermitWithoutStream applies only to connections without streams): a client waiting on a hung
   * call may probe its connection, and is not cut off without an answer.
   */
  ping(now = performance.now(), callsInFlight = false): void {
    if (callsInFlight) {
      this.lastPingAt = now;
      return;
    }
    if (this.sentSincePing) {
      this.sentSincePing = false;
      this.pingStrikes = 0;
      this.lastPingAt = -Infinity;
    }
    if (now < this.lastPingAt + this.limits.pingMinIntervalMs && ++this.pingStrikes > this.limits.maxPingStrikes) {
      throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "too_many_pings");
    }
    this.lastPingAt = now;
  }

  /** A header block of `bytes` so far, in `frames` frames (HEADERS + CONTINUATIONs). */
  headerBlock(bytes: number, frames: number): void {
    if (bytes > this.limits.maxHeaderBlockBytes) throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "header block too large");
    if (frames > this.limits.maxHeaderBlockFrames) throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "header block in too many frames");
  }

  /** A SETTINGS frame of `entries` entries. */
  settings(entries: number): void {
    if (entries > this.limits.maxSettingsEntries) throw new Http2ConnectionError(ENHANCE_YOUR_CALM, "too many SETTINGS entries");
  }
}
