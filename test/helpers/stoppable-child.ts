// A child process that does its work only between go() and stop() (SIGCONT / SIGSTOP), each returning
// once /proc shows the new state, so a race test decides exactly when the racing process runs.
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";

export class StoppableChild {
  protected readonly child: ChildProcess;
  readonly #what: string;

  constructor(child: ChildProcess, what: string) {
    this.child = child;
    this.#what = what;
  }

  #waitState(want: "T" | "R") {
    for (let i = 0; i < 100_000; i++) {
      const stat = readFileSync(`/proc/${this.child.pid}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (want === "T" ? state === "T" || state === "t" : state !== "T" && state !== "t") return;
    }
    throw new Error(`${this.#what} did not change state`);
  }

  /** Lets it run; returns once it is running. */
  go() {
    process.kill(this.child.pid!, "SIGCONT");
    this.#waitState("R");
  }

  /** Stops it; returns once it is stopped. */
  stop() {
    process.kill(this.child.pid!, "SIGSTOP");
    this.#waitState("T");
  }

  kill() {
    this.child.kill("SIGKILL");
  }
}
