// An attacker run as its own process (test/helpers/h2-attack.ts, slow-scraper.ts...), so its CPU is not
// the daemon's or the legit client's. The script prints "ready\n" once it runs and, at exit 0, its
// report as the last line of JSON. Killed with SIGKILL if it is still running 30 s after `ms`.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { nodeBinary, repoRoot } from "./daemon-process.ts";

export interface AttackerProcess<T> {
  /** Resolves once the script printed "ready" (or exited). */
  ready: Promise<void>;
  /** The script's last JSON line; rejects with its stderr when it exits non-zero. */
  result: Promise<T>;
  child: ChildProcess;
}

/** Runs `test/helpers/<script>` with `args` under this repository's Node. */
export function startAttackerProcess<T>(script: string, args: string[], ms: number): AttackerProcess<T> {
  const child = spawn(nodeBinary, [path.join(repoRoot, "test/helpers", script), ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (err += d));
  let markReady: () => void;
  const ready = new Promise<void>((r) => (markReady = r));
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    out += d;
    if (out.includes("ready\n")) markReady();
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), ms + 30_000);
  const result = new Promise<T>((resolve, reject) =>
    child.once("exit", (code) => {
      clearTimeout(timer);
      markReady();
      if (code === 0) resolve(JSON.parse(out.trim().split("\n").at(-1)!) as T);
      else reject(new Error(`${script} ${args[0] ?? ""}: exit ${code}\n${err}`));
    }),
  );
  return { ready, result, child };
}

/** A process's resident set from /proc/<pid>/status, in MB (MiB). */
export const vmRssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;

/** The 99th percentile of `xs` (nearest rank, the largest value below 100 samples). */
export const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))];
