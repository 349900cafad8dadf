/** One admitted connection, as admission sees it; the connection reports its life through it. */
export class AdmissionEntry {
  readonly endpoint: number;
  /** Clock time of the last change of class or of the last call start/end. */
  since: number;
  state: "handshake" | "fresh" | "used" | "closed" = "handshake";
  private readonly admission: ConnectionAdmission;
  /** Set by the connection: whether a call is in flight. */
  busy: () => boolean = () => false;
  /** Set by the connection: ends it with GOAWAY(NO_ERROR) (or closes it when still in the handshake). */
  evict: () => void = () => {};

  constructor(admission: ConnectionAdmission, endpoint: number) {
    this.admission = admission;
    this.endpoint = endpoint;
    this.since = admission.now();
  }

  /** The client's preface and SETTINGS arrived. */
  handshakeDone(): void {
    if (this.state === "handshake") this.admission.move(this, "fresh");
  }

  /** A call started, or the last call in flight ended. */
  called(): void {
    this.admission.move(this, "used");
  }

  closed(): void {
    this.admission.remove(this);
  }
}

/**
 * Admission of connections, for all endpoints of the process together: at most `limit`
 * connections in all (from RLIMIT_NOFILE: connections share the process's descriptors) and at most
 * `perEndpoint` on one endpoint. A connection arriving at either bound is admitted in place of the
 * one that has gone longest without a call — first those in the handshake for at least
 * `handshakeGraceMs` (1 s), then those that never made a call, then the others, and last those
 * still within their handshake grace (a client that has just connected); within each class the oldest first — which is ended with
 * GOAWAY(NO_ERROR) (a connection still in its handshake is closed); a connection with a call in
 * flight is never chosen; when there is none to choose, the new one is closed. Under pressure (at
 * least 3/4 of a bound in use), connections in the handshake or that never made a call are closed
 * once idle for `pressureIdleMs`. The same for Unix sockets and Windows named-pipe instances.
 * O(1) per call (a Map move); O(connections skipped) per eviction.
 */
export class ConnectionAdmission {
  readonly limit: number;
  readonly perEndpoint: number;
  readonly pressureIdleMs: number;
  /** A connection in its handshake for less than this many ms is evicted only after every idle one. */
  readonly handshakeGraceMs: number;
  private readonly classes = { handshake: new Map<AdmissionEntry, true>(), fresh: new Map<AdmissionEntry, true>(), used: new Map<AdmissionEntry, true>() };
  private readonly counts: number[] = [];
  private total = 0;
  private sweeper?: NodeJS.Timeout;

  /** The clock, ms (monotonic by default). */
  readonly now: () => number;

  constructor(options: { limit: number; perEndpoint: number; pressureIdleMs?: number; handshakeGraceMs?: number; now?: () => number }) {
    this.handshakeGraceMs = options.handshakeGraceMs ?? 1000;
    this.now = options.now ?? (() => performance.now());
    this.limit = options.limit;
    this.perEndpoint = options.perEndpoint;
    this.pressureIdleMs = options.pressureIdleMs ?? 5000;
  }

  /** Connections admitted and not closed. */
  get connections(): number {
    return this.total;
  }

  /** Admits a new connection on `endpoint` (evicting one if a bound is reached), or undefined: it must be closed. */
  admit(endpoint: number): AdmissionEntry | undefined {
    const onEndpoint = this.counts[endpoint] ?? 0;
    if (onEndpoint >= this.perEndpoint) {
      if (!this.evictOne(endpoint)) return undefined;
    } else if (this.total >= this.limit && !this.evictOne(undefined)) return undefined;
    const entry = new AdmissionEntry(this, endpoint);
    this.classes.handshake.set(entry, true);
    this.counts[endpoint] = (this.counts[endpoint] ?? 0) + 1;
    this.total++;
    this.watchPressure();
    return entry;
  }

  /** @internal */
  move(entry: AdmissionEntry, to: "fresh" | "used"): void {
    if (entry.state === "closed") return;
    this.classes[entry.state].delete(entry);
    entry.state = to;
    entry.since = this.now();
    this.classes[to].set(entry, true);
  }

  /** @internal */
  remove(entry: AdmissionEntry): void {
    if (entry.state === "closed") return;
    this.classes[entry.state].delete(entry);
    entry.state = "closed";
    this.counts[entry.endpoint]--;
    this.total--;
  }

  /**
   * Evicts the first candidate (on `endpoint` when given); false when there is none. Order: in the
   * handshake for at least handshakeGraceMs (half-open), never called, longest without a call, and
   * last those still within their handshake grace — so a client that has just connected is not the
   * first to make room for the next newcomer while older idle connections exist.
   */
  private evictOne(endpoint: number | undefined): boolean {
    const graceStart = this.now() - this.handshakeGraceMs;
    const candidate = (entry: AdmissionEntry) => !entry.busy() && (endpoint === undefined || entry.endpoint === endpoint);
    const pick = (): AdmissionEntry | undefined => {
      for (const entry of this.classes.handshake.keys()) {
        if (entry.since > graceStart) break; // in age order: the rest are younger
        if (candidate(entry)) return entry;
      }
      for (const cls of [this.classes.fresh, this.classes.used, this.classes.handshake]) {
        for (const entry of cls.keys()) if (candidate(entry)) return entry;
      }
      return undefined;
    };
    const entry = pick();
    if (!entry) return false;
    this.remove(entry);
    entry.evict();
    return true;
  }

  private underPressure(): boolean {
    return this.total * 4 >= this.limit * 3 || this.counts.some((n) => n * 4 >= this.perEndpoint * 3);
  }

  private watchPressure(): void {
    if (this.sweeper || !this.underPressure()) return;
    this.sweeper = setInterval(this.sweep, Math.max(100, this.pressureIdleMs / 4));
    this.sweeper.unref();
  }

  /** Under pressure: closes connections in the handshake or without a call, idle for pressureIdleMs (each class is in age order). */
  private readonly sweep = () => {
    if (!this.underPressure()) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
      return;
    }
    const before = this.now() - this.pressureIdleMs;
    for (const cls of [this.classes.handshake, this.classes.fresh]) {
      for (const entry of cls.keys()) {
        if (entry.since > before) break;
        this.remove(entry);
        entry.evict();
      }
    }
  };
}
