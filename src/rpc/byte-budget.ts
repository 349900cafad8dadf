/** Bytes held against a fixed bound, shared by its owners (e.g. every connection of the process). */
export class ByteBudget {
  readonly limit: number;
  private held = 0;

  constructor(limit: number) {
    this.limit = limit;
  }

  get used(): number {
    return this.held;
  }

  /** Charges `bytes` when they fit under the limit; false (nothing charged) when they do not. */
  tryCharge(bytes: number): boolean {
    if (this.held + bytes > this.limit) return false;
    this.held += bytes;
    return true;
  }

  /** Returns bytes charged earlier. */
  release(bytes: number): void {
    this.held -= bytes;
  }
}
