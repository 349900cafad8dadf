/**
 * Shared setup of the Wine suites: Debian's wine64 with one private WINEPREFIX
 * (scripts/install-wine.sh), the csi-proxy.exe built once per content hash (scripts/build-exe.ts),
 * the client fixture bundled for node.exe 22, and helpers to run Windows processes.
 */
import { assertNoInternalAnswers } from "../helpers/internal-guard.ts";
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { before, after } from "node:test";
import * as esbuild from "esbuild";
import { buildExe, esbuildOptions, type BuiltExe } from "../../scripts/build-exe.ts";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export interface Wine {
  wine: string;
  prefix: string;
  driveC: string;
  env: NodeJS.ProcessEnv;
  exe: BuiltExe;
  /** Windows path of csi-proxy.exe (Z:\…). */
  exeWin: string;
  /** Windows path of node.exe 22 (the one the exe was made from). */
  nodeWin: string;
  /** Windows path of the bundled client fixture. */
  clientWin: string;
  /** Windows path of the directory holding koffi\win32_x64\koffi.node (for the client's `dacl` mode). */
  koffiDirWin: string;
  /** A C:\ work directory for this suite (and its Linux path). */
  work: { win: string; linux: string };
}

/** Linux path → the Windows path Wine shows for it (C:\ inside the prefix's drive_c, Z:\ otherwise). */
export function winPath(linux: string, driveC: string): string {
  const abs = path.resolve(linux);
  if (abs === driveC || abs.startsWith(driveC + "/")) return "C:\\" + path.relative(driveC, abs).split("/").join("\\");
  return "Z:" + abs.split("/").join("\\");
}

/** Sets Wine up, builds the exe and bundles the client. Returns a skip reason when Wine cannot be installed. */
export async function setupWine(suite: string): Promise<Wine | { skip: string }> {
  let wine: string;
  try {
    wine = execFileSync("bash", [path.join(root, "scripts", "install-wine.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  } catch (err) {
    return { skip: `Wine is not available: ${String((err as { stderr?: string }).stderr ?? err).trim()}` };
  }
  const prefix = path.join(root, ".cache", "wine-prefix");
  const driveC = path.join(prefix, "drive_c");
  const env: NodeJS.ProcessEnv = { ...process.env, WINEPREFIX: prefix, WINEDEBUG: "-all", WINEDLLOVERRIDES: "mscoree,mshtml=" };
  delete env.DISPLAY;
  const exe = await buildExe({ quiet: true });
  const client = path.join(root, ".cache", "exe", "wine-client.cjs");
  await esbuild.build(esbuildOptions(path.join(root, "test", "windows", "fixtures", "wine-client.ts"), client));
  const workLinux = path.join(driveC, `csi-e2e-${suite}`);
  fs.rmSync(workLinux, { recursive: true, force: true });
  fs.mkdirSync(workLinux, { recursive: true });
  return {
    wine,
    prefix,
    driveC,
    env,
    exe,
    exeWin: winPath(exe.exe, driveC),
    nodeWin: winPath(exe.nodeExe, driveC),
    clientWin: winPath(client, driveC),
    koffiDirWin: winPath(exe.dir, driveC),
    work: { win: winPath(workLinux, driveC), linux: workLinux },
  };
}

/**
 * A suite's Wine (setupWine) and its skip reason — `w` is usable only when `skip` is false — with
 * the suite's hooks registered: before, the prefix's leftover processes are ended, the suite's
 * kubelet directory is made, then `hooks.before` runs; after, `hooks.after` runs, then the
 * prefix's processes are ended. Neither hook runs when the suite is skipped.
 *
 * With `keepAlive`, an idle node.exe runs from before `hooks.before` until after `hooks.after`:
 * the wineserver tells services.exe (and the services it runs) to exit about a second after the
 * prefix's last ordinary process exits, so without one, back-to-back `sc` calls may each meet a
 * Service Control Manager that is shutting down or starting again.
 */
export async function wineSuite(suite: string, hooks: { keepAlive?: boolean; before?: (w: Wine) => Promise<void> | void; after?: (w: Wine) => Promise<void> | void } = {}): Promise<{ w: Wine; skip: string | false }> {
  const setup = await setupWine(suite);
  const skip = "skip" in setup ? setup.skip : false;
  const w = setup as Wine;
  let keepAlive: Background | undefined;
  before(async () => {
    if (skip) return;
    killWineServer(w);
    fs.mkdirSync(path.join(w.work.linux, "kubelet"), { recursive: true });
    if (hooks.keepAlive) keepAlive = startWine(w, [w.nodeWin, "-e", "setTimeout(() => {}, 3600000)"]);
    await hooks.before?.(w);
  });
  after(async () => {
    if (skip) return;
    try {
      await hooks.after?.(w);
    } finally {
      await keepAlive?.kill();
      killWineServer(w);
    }
  });
  return { w, skip };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

let seq = 0;
/**
 * stdio of Windows programs goes to files: Wine hands a Linux pipe to node.exe as a named pipe that
 * libuv cannot open (`open EBADF` while creating process.stderr).
 */
function outputFile(w: Wine): string {
  const dir = path.join(w.work.linux, "out");
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, `${process.pid}-${++seq}.log`);
}

const readOut = (file: string) => {
  try {
    return fs.readFileSync(file, "utf8").replace(/\r/g, "");
  } catch {
    return "";
  }
};

/** Runs a Windows program to completion (killed after timeoutMs); stdout and stderr are merged. */
export function runWine(w: Wine, args: string[], timeoutMs = 60_000): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const file = outputFile(w);
    const fd = fs.openSync(file, "w");
    const child = spawn(w.wine, args, { env: w.env, stdio: ["ignore", fd, fd] });
    fs.closeSync(fd);
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      const out = readOut(file);
      resolve({ code, stdout: out, stderr: "" });
    });
  });
}

export interface Background {
  child: ChildProcess;
  /** The Linux file collecting the program's stdout+stderr. */
  file: string;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<number | null>;
  /** SIGKILL, wait; throws when the program (the daemon) logged an Internal/Unknown answer (test/helpers/internal-guard.ts). */
  kill(): Promise<void>;
}

/** Starts a Windows program in the background, collecting stdout+stderr (through a file). */
export function startWine(w: Wine, args: string[]): Background {
  const file = outputFile(w);
  const fd = fs.openSync(file, "w");
  const child = spawn(w.wine, args, { env: w.env, stdio: ["ignore", fd, fd] });
  fs.closeSync(fd);
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  let done = false;
  void exited.then(() => (done = true));
  return {
    child,
    file,
    output: () => readOut(file),
    exited,
    async waitFor(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const out = readOut(file);
        const m = pattern.exec(out);
        if (m) return m[0];
        if (done) throw new Error(`process exited before ${pattern}; output:\n${out}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}; output so far:\n${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
      assertNoInternalAnswers(readOut(file), "csi-proxy.exe under Wine"); // a client program logs no such line
    },
  };
}

/** Runs the client fixture in node.exe 22 under Wine; returns its REPORT object. */
export async function clientReport(w: Wine, mode: string, args: object = {}, timeoutMs = 120_000): Promise<Record<string, any>> {
  const argsFile = path.join(w.work.linux, `args-${mode}.json`);
  fs.writeFileSync(argsFile, JSON.stringify(args));
  const r = await runWine(w, [w.nodeWin, w.clientWin, mode, winPath(argsFile, w.driveC)], timeoutMs);
  const line = r.stdout.split("\n").find((l) => l.startsWith("REPORT "));
  if (!line) throw new Error(`client ${mode} printed no report (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  const report = JSON.parse(line.slice("REPORT ".length));
  if (report.fatal) throw new Error(`client ${mode} failed: ${report.fatal}`);
  return report;
}

/**
 * Runs Wine's sc.exe. Its failures print nothing under WINEDEBUG=-all (the Win32 error is a `trace:sc`
 * line), so it runs with that channel and errors on: the output names the error of a failed call.
 */
export function runSc(w: Wine, args: string[], timeoutMs = 60_000): Promise<RunResult> {
  return runWine({ ...w, env: { ...w.env, WINEDEBUG: "err+all,+sc" } }, ["sc", ...args], timeoutMs);
}

/** Ends every process of the suite's prefix (wineserver -k: only this private prefix). */
export function killWineServer(w: Wine): void {
  try {
    execFileSync(path.join(path.dirname(w.wine), "wineserver64"), ["-k"], { env: w.env, stdio: "ignore", timeout: 30_000 });
  } catch {
    // nothing was running
  }
}
