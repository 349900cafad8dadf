/**
 * The outbound budget: memory a connection holds for its calls, bounded per connection and in all
 * (the outbound counterpart of the request-data budgets). What a connection holds:
 * - `reserveBytes` for each call from the start of its handler (or decompression) until the
 *   handler ends: its state and a typical answer (a stream still receiving its request holds no
 *   reservation: its body is charged to the request-data budgets, and its DATA must stay readable);
 * - its unsent bytes: answers queued in this turn, the socket's unwritten bytes (the client does not
 *   read), and answers waiting for the client's flow-control window.
 * Before each frame is read the connection asks `mayRead()`: no when its socket holds more than
 * `highWaterBytes` unread by the client; it then stops reading (the frames already read wait, the
 * socket is paused) until its client reads. Before a call starts it asks `mayStart()`: no when one
 * more call would not fit its own budget or the process's; the call then waits, read and queued
 * (its deadline runs and is answered on time), and `awaitStart()` has the connection's
 * `startWaiting()` called when its calls end or the process budget frees. When the process budget is over its limit, the connection holding the
 * most unsent bytes (at least `highWaterBytes`) is closed first, then the next, until it is not.
 */
export class OutboundBudget {
  readonly limit: number;
  private held = 0;
  /** The part of `held` that is unsent bytes (the rest: reservations). */
  private unsentHeld = 0;
  /** Unsent bytes when a search for a connection to close last found none: no new search until there are more. */
  private unsentSearched = -1;
  /** Accounts holding anything. */
  private holding = 0;
  private readonly accounts = new Set<OutboundAccount>();
  private readonly waiting = new Set<OutboundAccount>();
  private wakeScheduled = false;

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Bytes held by every connection of the process (reservations and unsent bytes as last measured). */
  get used(): number {
    return this.held;
  }

  /**
   * True when `bytes` more fit: under the limit, or within the account's fair share (the limit
   * divided among the connections holding anything), or once the connections holding the most
   * unsent bytes (each at least its high-water mark) were closed to make room.
   */
  admit(account: OutboundAccount, bytes: number): boolean {
    if (this.held + bytes <= this.limit) return true;
    if (account.total + bytes <= this.limit / (this.holding + (account.total ? 0 : 1))) return true;
    this.relieve(bytes);
    return this.held + bytes <= this.limit;
  }

  /** @internal Accounts report their changes here. */
  change(delta: number, unsentDelta: number, holdingDelta: number): void {
    this.held += delta;
    this.unsentHeld += unsentDelta;
    this.holding += holdingDelta;
    if (delta < 0 && this.waiting.size && !this.wakeScheduled) {
      this.wakeScheduled = true;
      setImmediate(this.wake);
    }
    if (delta > 0 && this.held > this.limit) this.relieve(0);
  }

  /** @internal */
  register(account: OutboundAccount): void {
    this.accounts.add(account);
  }

  /** @internal */
  unregister(account: OutboundAccount): void {
    this.accounts.delete(account);
    this.waiting.delete(account);
  }

  /** @internal A paused account waits for the process budget to free. */
  wait(account: OutboundAccount): void {
    this.waiting.add(account);
  }

  private readonly wake = () => {
    this.wakeScheduled = false;
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const account of waiting) account.check();
  };

  /**
   * Closes the connections holding the most unsent bytes (at least their high-water mark) until
   * `bytes` more fit. O(connections) per search; a search that found no such connection is not
   * repeated until the process holds more unsent bytes.
   */
  private relieve(bytes: number): void {
    while (this.held + bytes > this.limit && this.unsentHeld > this.unsentSearched) {
      let largest: OutboundAccount | undefined;
      for (const account of this.accounts) if (!largest || account.unsent > largest.unsent) largest = account;
      if (!largest || largest.unsent < largest.highWaterBytes) {
        this.unsentSearched = this.unsentHeld;
        return;
      }
      largest.evict();
    }
  }
}

/** What an account reads of and does to its connection. */
export interface OutboundConnection {
  /** Bytes queued for the socket in this turn plus the socket's unwritten bytes. */
  socketUnsent(): number;
  /** Answer bytes waiting for the client's flow-control window. */
  pendingUnsent(): number;
  pauseSocket(): void;
  resumeSocket(): void;
  /** Hand on the frames read but held while paused (they may pause reading again). */
  resumeFrames(): void;
  /** Close the connection: the process budget needs its bytes. */
  evict(): void;
  /** Start the calls waiting for the budget (each asks mayStart; awaitStart again if some still wait). */
  startWaiting(): void;
}

/** One connection's share of the outbound budget; see OutboundBudget. */
export class OutboundAccount {
  readonly highWaterBytes: number;
  private readonly budget: OutboundBudget;
  private readonly connectionLimit: number;
  private readonly reserveBytes: number;
  private readonly conn: OutboundConnection;
  private reserved = 0;
  /** Unsent bytes as last measured (what the process budget holds for them). */
  unsent = 0;
  private paused = false;
  private closed = false;
  /** Calls wait for room (awaitStart). */
  private startWanted = false;

  constructor(budget: OutboundBudget, options: { connectionLimit: number; highWaterBytes: number; reserveBytes: number }, conn: OutboundConnection) {
    this.budget = budget;
    this.connectionLimit = options.connectionLimit;
    this.highWaterBytes = options.highWaterBytes;
    this.reserveBytes = options.reserveBytes;
    this.conn = conn;
    budget.register(this);
  }

  /** Asked before each frame is read: false while the client leaves more than highWaterBytes unread. */
  mayRead(): boolean {
    return this.conn.socketUnsent() <= this.highWaterBytes;
  }

  /** Calls wait for room: startWaiting() is called once a call's handler ends or the process budget frees. */
  awaitStart(): void {
    if (this.closed) return;
    this.startWanted = true;
    this.budget.wait(this);
  }

  /** True when one more call fits the connection's budget and the process's (OutboundBudget.admit). */
  mayStart(): boolean {
    const unsent = this.conn.socketUnsent() + this.conn.pendingUnsent();
    return this.reserved + unsent + this.reserveBytes <= this.connectionLimit && this.budget.admit(this, this.reserveBytes);
  }

  /** Reservations and unsent bytes as last measured. */
  get total(): number {
    return this.reserved + this.unsent;
  }

  /** A call started. */
  reserve(): void {
    this.add(this.reserveBytes, 0);
  }

  /** A call's handler ended. */
  release(): void {
    this.add(-this.reserveBytes, 0);
    this.check();
  }

  /** Measures the unsent bytes again (no other effect on this connection). */
  measure(): void {
    if (this.closed) return;
    const unsent = this.conn.socketUnsent() + this.conn.pendingUnsent();
    if (unsent !== this.unsent) this.add(0, unsent - this.unsent);
  }

  private add(reserved: number, unsent: number): void {
    const before = this.total;
    this.reserved += reserved;
    this.unsent += unsent;
    this.budget.change(reserved + unsent, unsent, (this.total > 0 ? 1 : 0) - (before > 0 ? 1 : 0));
  }

  /** After a flush or a drain: measures again; pauses the socket when reading must stop, resumes when it may go on. */
  sync(): void {
    this.measure();
    if (this.closed) return;
    if (!this.paused && this.conn.socketUnsent() > this.highWaterBytes) this.pause();
    else if (this.paused) this.check();
  }

  /** Reading stopped (the reader held frames back, or the socket holds too much): the socket is paused until check() finds room. */
  pause(): void {
    if (this.closed) return;
    if (!this.paused) {
      this.paused = true;
      this.conn.pauseSocket();
    }
    this.waitForBudget();
  }

  /** Resumes reading if it may go on; otherwise keeps waiting. */
  check(): void {
    if (this.closed) return;
    if (this.startWanted) {
      this.startWanted = false;
      this.conn.startWaiting();
    }
    if (!this.paused) return;
    if (!this.mayRead()) return this.waitForBudget();
    this.paused = false;
    this.conn.resumeSocket();
    this.conn.resumeFrames();
  }

  /** A connection paused by its own unread bytes resumes on drain (sync); one paused by a budget, when the process budget frees. */
  private waitForBudget(): void {
    if (this.conn.socketUnsent() <= this.highWaterBytes) this.budget.wait(this);
  }

  evict(): void {
    this.conn.evict();
    this.close();
  }

  /** The connection closed: its unsent bytes are gone; reservations stay until its streams retire. */
  close(): void {
    if (this.closed) return;
    this.add(0, -this.unsent);
    this.closed = true;
    this.budget.unregister(this);
  }
}
