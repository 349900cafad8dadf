import { internal } from "../../src/errors.ts";

/**
 * The call log and failure injection of a stateful fake world: the fake hosts call {@link enter} at
 * the start of every method; mutating calls are logged in {@link calls}.
 */
export class FakeCallLog {
  /** Mutating host calls, e.g. "createGptTable /dev/loop3". */
  calls: string[] = [];
  readonly #failures = new Map<string, Error>();

  /** The next call of host method `method` rejects with `error` (once). */
  failNext(method: string, error: Error = internal(`${method}: injected failure`)): void {
    this.#failures.set(method, error);
  }

  /** Called by the fake hosts at the start of every method. */
  enter(method: string, detail = "", mutating = false): void {
    if (mutating) this.calls.push(`${method}${detail ? ` ${detail}` : ""}`);
    const failure = this.#failures.get(method);
    if (failure) {
      this.#failures.delete(method);
      throw failure;
    }
  }
}
