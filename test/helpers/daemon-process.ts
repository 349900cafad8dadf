// Starts the real daemon (src/main.ts) as a child process on temporary directories, for
// integration tests. Everything it creates is removed by stop(), which tests call in `after`.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { assertNoInternalAnswers } from "./internal-guard.ts";

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
export const nodeBinary = process.execPath;

export interface DaemonProcess {
  child: ChildProcess;
  /** Temporary root holding socketDir, kubeletDir and anything else the test puts there. */
  root: string;
  socketDir: string;
  kubeletDir: string;
  /** Everything the daemon wrote to stderr so far. */
  stderr(): string;
  /** Resolves with the first stderr line matching `pattern` (rejects after timeoutMs). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code once the process exits. */
  exited: Promise<number | null>;
  /** SIGTERM, wait for exit, remove the temporary root; throws when the daemon answered any call Internal/Unknown (internal-guard.ts). */
  stop(): Promise<number | null>;
}

export interface StartOptions {
  /** Extra flags after -socket-dir/-kubelet-path. */
  args?: string[];
  /** Wait until all 23 endpoints are served (default true). */
  waitReady?: boolean;
  env?: Record<string, string>;
  /** Reuse this socket dir instead of a fresh one (it is not removed by stop()). */
  socketDir?: string;
  /** Options for node itself, e.g. ["--max-old-space-size=256"]. */
  nodeArgs?: string[];
  /** A command the daemon runs under, e.g. ["prlimit", "--nofile=600:600", "--"]. */
  wrap?: string[];
}

export async function startDaemonProcess(options: StartOptions = {}): Promise<DaemonProcess> {
  const root = mkdtempSync(path.join(tmpdir(), "csi-proxy-it-"));
  const socketDir = options.socketDir ?? path.join(root, "sockets");
  const kubeletDir = path.join(root, "kubelet");
  mkdirSync(kubeletDir);
  const argv = [nodeBinary, ...(options.nodeArgs ?? []), path.join(repoRoot, "src/main.ts"), "-socket-dir", socketDir, "-kubelet-path", kubeletDir, ...(options.args ?? [])];
  const [command, ...args] = [...(options.wrap ?? []), ...argv];
  const child = spawn(
    command,
    args,
    { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...options.env } },
  );
  let log = "";
  const listeners = new Set<() => void>();
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    log += chunk;
    for (const l of listeners) l();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const waitFor = (pattern: RegExp, timeoutMs = 20_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const m = log.match(pattern);
        if (m) {
          listeners.delete(check);
          clearTimeout(timer);
          resolve(m);
        }
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`daemon did not log ${pattern} within ${timeoutMs} ms; stderr:\n${log}`));
      }, timeoutMs);
      listeners.add(check);
      void exited.then(() => setTimeout(() => {
        listeners.delete(check);
        clearTimeout(timer);
        const m = log.match(pattern);
        if (m) resolve(m);
        else reject(new Error(`daemon exited before logging ${pattern}; stderr:\n${log}`));
      }, 50));
      check();
    });
  const daemon: DaemonProcess = {
    child, root, socketDir, kubeletDir, exited, waitFor,
    stderr: () => log,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const code = await exited;
      rmSync(root, { recursive: true, force: true });
      assertNoInternalAnswers(log);
      return code;
    },
  };
  if (options.waitReady ?? true) {
    try {
      await waitFor(/Serving 23 endpoints/);
    } catch (err) {
      await daemon.stop();
      throw err;
    }
  }
  return daemon;
}
