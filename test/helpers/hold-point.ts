/**
 * A point a test double's method stops at until the test lets it pass: `arrive()` marks `entered`
 * and waits for `pass()`. One-shot: later arrivals pass at once once passed.
 */
export interface HoldPoint {
  /** Settles when the first caller arrived. */
  readonly entered: Promise<void>;
  /** Lets every caller waiting at the point (and every later one) go on. */
  pass(): void;
  /** Called by the double: marks the arrival, then waits for `pass()`. */
  arrive(): Promise<void>;
}

export function holdPoint(): HoldPoint {
  let enter = () => {};
  let open = () => {};
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const passed = new Promise<void>((resolve) => (open = resolve));
  return {
    entered,
    pass: () => open(),
    arrive: async () => {
      enter();
      await passed;
    },
  };
}
