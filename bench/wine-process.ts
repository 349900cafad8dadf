// Running Windows programs under the repository's Wine prefix for the Windows bench: stdout/stderr go
// to a file (Wine hands a Linux pipe to node.exe as a pipe libuv cannot open), the process is the
// spawned wine64 process itself (the loader execs the preloader in place), CPU from /proc.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { repoRoot } from "./production-server.ts";

export interface WineEnv {
  wine: string;
  wineserver: string;
  prefix: string;
  driveC: string;
  env: NodeJS.ProcessEnv;
  logDir: string;
}

/** Installs Wine and the prefix when missing (scripts/install-wine.sh); throws with its reason otherwise. */
export function wineEnv(): WineEnv {
  const wine = execFileSync("bash", [path.join(repoRoot, "scripts", "install-wine.sh")], { encoding: "utf8" }).trim();
  const prefix = path.join(repoRoot, ".cache", "wine-prefix");
  const env: NodeJS.ProcessEnv = { ...process.env, WINEPREFIX: prefix, WINEDEBUG: "-all", WINEDLLOVERRIDES: "mscoree,mshtml=" };
  delete env.DISPLAY;
  const logDir = path.join(prefix, "drive_c", "csi-bench", "out");
  fs.mkdirSync(logDir, { recursive: true });
  return { wine, wineserver: path.join(path.dirname(wine), "wineserver64"), prefix, driveC: path.join(prefix, "drive_c"), env, logDir };
}

/** Linux path → the Windows path Wine shows for it (C:\ inside drive_c, Z:\ otherwise). */
export function winPath(w: WineEnv, linux: string): string {
  const abs = path.resolve(linux);
  if (abs.startsWith(w.driveC + "/")) return "C:\\" + path.relative(w.driveC, abs).split("/").join("\\");
  return "Z:" + abs.split("/").join("\\");
}

/** Ends every process of this prefix, then starts a persistent wineserver in the foreground (its pid is known). */
export async function startWineserver(w: WineEnv): Promise<ChildProcess> {
  try {
    execFileSync(w.wineserver, ["-k"], { env: w.env, stdio: "ignore", timeout: 30_000 });
  } catch {
    // none was running
  }
  const child = spawn(w.wineserver, ["-f", "-p"], { env: w.env, stdio: "ignore" });
  await new Promise((r) => setTimeout(r, 300));
  if (child.exitCode !== null) throw new Error("wineserver exited at start");
  return child;
}

let seq = 0;

export interface WineProcess {
  child: ChildProcess;
  pid: number;
  output(): string;
  exited: Promise<number | null>;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  kill(): Promise<void>;
}

export function startWine(w: WineEnv, args: string[], extraEnv: NodeJS.ProcessEnv = {}): WineProcess {
  const file = path.join(w.logDir, `${process.pid}-${++seq}.log`);
  const fd = fs.openSync(file, "w");
  const child = spawn(w.wine, args, { env: { ...w.env, ...extraEnv }, stdio: ["ignore", fd, fd] });
  fs.closeSync(fd);
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  const output = () => {
    try {
      return fs.readFileSync(file, "utf8").replace(/\r/g, "");
    } catch {
      return "";
    }
  };
  return {
    child,
    pid: child.pid!,
    output,
    exited,
    async waitFor(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(output())) {
        if (child.exitCode !== null) throw new Error(`${args[0]} exited before printing ${pattern}:\n${output()}`);
        if (Date.now() > deadline) throw new Error(`${args[0]}: no ${pattern} within ${timeoutMs} ms:\n${output()}`);
        await new Promise((r) => setTimeout(r, 2));
      }
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Runs a Windows program to its end; returns its output and the wall time (ms) from spawn to exit. */
export async function runWine(w: WineEnv, args: string[], timeoutMs = 300_000): Promise<{ code: number | null; out: string; ms: number }> {
  const t0 = performance.now();
  const p = startWine(w, args);
  const timer = setTimeout(() => p.child.kill("SIGKILL"), timeoutMs);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, out: p.output(), ms: performance.now() - t0 };
}

/** The `REPORT {…}` line of a bench client run. */
export function report(out: string): Record<string, any> {
  const line = out.split("\n").find((l) => l.startsWith("REPORT "));
  if (!line) throw new Error(`no REPORT line in:\n${out}`);
  const r = JSON.parse(line.slice(7));
  if (r.fatal) throw new Error(r.fatal);
  return r;
}

/** CPU time (user + system, all threads) a process used so far, in ms (/proc/<pid>/stat). */
export function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
