/** A token bucket: `burst` events at once, refilled at `perSecond`. O(1) per event. */
export class RateBucket {
  private tokens: number;
  private last = performance.now();
  private readonly burst: number;
  private readonly perMs: number;

  constructor(burst: number, perSecond: number) {
    this.tokens = this.burst = burst;
    this.perMs = perSecond / 1000;
  }

  /** Takes one token; false when the bucket is empty (the caller refuses the event). */
  take(): boolean {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + (now - this.last) * this.perMs);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
