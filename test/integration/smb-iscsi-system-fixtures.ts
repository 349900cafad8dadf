/**
 * Fixtures for the SMB/iSCSI/System tests: recording stand-ins for host programs, and a daemon
 * runner. A recording program is a real executable (a Node script with an absolute shebang) that
 * appends one JSON line per invocation to `<dir>/<name>.jsonl`: argv, environment, stdin, and —
 * for a `credentials=<file>` mount option — the credentials file's mode, owner, directory mode
 * and content as seen while the program runs. What it does next is read from
 * `<dir>/<name>.behaviour.json` at every invocation, so a test can change it between calls:
 * `{ "exec": "/path/to/real", "args": [...] }` runs a real program (argv placeholders `$1`..`$n`
 * replaced by the recorded argv; without `args` the recorded argv is passed through unchanged), `{ "stdout": "...", "stderr": "...", "exitCode": n }` answers
 * like the tool would, `{}` exits 0.
 */
import { existsSync } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { assertNoInternalAnswers } from "../helpers/internal-guard.ts";

export interface Invocation {
  argv: string[];
  env: Record<string, string>;
  stdin: string;
  credentials?: { path: string; mode: number; uid: number; dirMode: number; content: string };
}

export interface RecordingProgram {
  path: string;
  invocations(): Promise<Invocation[]>;
  behave(behaviour: { exec?: string; args?: string[]; stdout?: string; stderr?: string; exitCode?: number }): Promise<void>;
}

const script = (log: string, behaviourFile: string) => `#!${process.execPath}
const fs = require("fs"), path = require("path"), cp = require("child_process");
const argv = process.argv.slice(2);
let stdin = "";
try { stdin = fs.readFileSync(0, "utf8"); } catch {}
const rec = { argv, env: process.env, stdin };
const o = argv.indexOf("-o");
const m = o >= 0 ? /(?:^|,)credentials=([^,]+)/.exec(argv[o + 1] || "") : null;
if (m) {
  const st = fs.statSync(m[1]);
  rec.credentials = { path: m[1], mode: st.mode & 0o777, uid: st.uid, dirMode: fs.statSync(path.dirname(m[1])).mode & 0o777, content: fs.readFileSync(m[1], "utf8") };
}
fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify(rec) + "\\n");
let b = {};
try { b = JSON.parse(fs.readFileSync(${JSON.stringify(behaviourFile)}, "utf8")); } catch {}
if (b.exec) {
  const args = b.args ? b.args.map((a) => a.replace(/^\\$(\\d+)$/, (_, n) => argv[Number(n) - 1] ?? "")) : argv;
  const r = cp.spawnSync(b.exec, args, { stdio: "inherit" });
  process.exit(r.status === null ? 1 : r.status);
}
if (b.stdout) process.stdout.write(b.stdout);
if (b.stderr) process.stderr.write(b.stderr);
process.exit(b.exitCode || 0);
`;

/** Creates a recording program `<dir>/<name>` (see module doc). */
export async function recordingProgram(dir: string, name: string): Promise<RecordingProgram> {
  const file = path.join(dir, name);
  const log = path.join(dir, `${name}.jsonl`);
  const behaviourFile = path.join(dir, `${name}.behaviour.json`);
  await fs.writeFile(file, script(log, behaviourFile), { mode: 0o755 });
  return {
    path: file,
    async invocations() {
      const text = await fs.readFile(log, "utf8").catch(() => "");
      return text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Invocation);
    },
    async behave(behaviour) {
      await fs.writeFile(behaviourFile, JSON.stringify(behaviour));
    },
  };
}

/** What a recording `mount` does in place of CIFS: mounts a tmpfs with the same source at the same directory. */
export const MOUNT_TMPFS_INSTEAD = { exec: "/usr/bin/mount", args: ["-t", "tmpfs", "-o", "size=1m", "$3", "$4"] };

/** `<dir>/fakebin` (to bind over /usr/local/sbin in a mount namespace) holding only a recording `mount` that mounts a tmpfs in place of CIFS. */
export async function recordingMount(dir: string): Promise<{ fakeBin: string; mount: RecordingProgram }> {
  const fakeBin = path.join(dir, "fakebin");
  await fs.mkdir(fakeBin);
  const mount = await recordingProgram(fakeBin, "mount");
  await mount.behave(MOUNT_TMPFS_INSTEAD);
  return { fakeBin, mount };
}

/**
 * `<dir>/fakebin` (to bind over /usr/local/sbin in a mount namespace) holding a recording `mount`
 * that mounts a tmpfs in place of CIFS and a recording `iscsiadm` whose behaviour is the caller's.
 */
export async function recordingMountAndIscsiadm(dir: string): Promise<{ fakeBin: string; mount: RecordingProgram; iscsiadm: RecordingProgram }> {
  const { fakeBin, mount } = await recordingMount(dir);
  const iscsiadm = await recordingProgram(fakeBin, "iscsiadm");
  return { fakeBin, mount, iscsiadm };
}

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
export const isRoot = process.getuid?.() === 0;

export interface RunningDaemon {
  child: ChildProcess;
  /** Everything the daemon wrote to stderr so far (its klog output). */
  stderr(): string;
  /** SIGTERM, then waits for the exit; returns the exit code. Throws when the daemon answered any call Internal/Unknown (internal-guard.ts). */
  stop(): Promise<number | null>;
}

/**
 * Starts `node src/main.ts <args>` (optionally wrapped, e.g. in `nsenter`/`unshare`) and waits
 * until every endpoint socket in `socketDir` answers (the "Serving N endpoints" log line).
 */
export async function startDaemon(args: string[], options: { wrapper?: string[]; timeoutMs?: number } = {}): Promise<RunningDaemon> {
  const argv = [...(options.wrapper ?? []), process.execPath, path.join(repoRoot, "src/main.ts"), ...args];
  const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "ignore", "pipe"], cwd: repoRoot });
  let err = "";
  child.stderr!.on("data", (b: Buffer) => (err += b.toString("utf8")));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  while (!/Serving \d+ endpoints/.test(err)) {
    if (child.exitCode !== null) throw new Error(`daemon exited with ${child.exitCode}:\n${err}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`daemon did not start in time:\n${err}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    stderr: () => err,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const code = await exited;
      assertNoInternalAnswers(err);
      return code;
    },
  };
}

/* ------------------------------------------------------------------ private mount namespaces */

export interface MountNamespace {
  /** Prefix that runs a command inside the namespace: `nsenter -t <pid> -m --`. */
  enter: string[];
  /** Ends the namespace's holder process (start no daemon in it afterwards). */
  close(): Promise<void>;
}

/**
 * A private mount namespace kept alive by a holder process, set up by `setup` (bash, run inside
 * it as root). Mounts made in it — by the setup or by daemons started with `enter` — are invisible
 * to the rest of the machine and vanish with it, so a test can shadow /usr/local/sbin (first on
 * the daemon's fixed PATH) with recording programs without touching the host. Daemons started
 * one after the other with `enter` share the namespace's mounts, like daemon restarts on a node.
 */
export async function mountNamespace(setup: string): Promise<MountNamespace> {
  const script = `set -e\n${setup}\necho READY\nexec sleep 100000`;
  const holder = spawn("unshare", ["--mount", "--propagation", "private", "--", "bash", "-c", script], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  holder.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  holder.stderr!.on("data", (b: Buffer) => (err += b.toString()));
  const deadline = Date.now() + 10_000;
  while (!out.includes("READY")) {
    if (holder.exitCode !== null || Date.now() > deadline) {
      holder.kill("SIGKILL");
      throw new Error(`mount namespace setup failed:\n${err}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const exited = new Promise<void>((resolve) => holder.once("exit", () => resolve()));
  return {
    enter: ["nsenter", "-t", String(holder.pid), "-m", "--"],
    async close() {
      if (holder.exitCode === null) holder.kill("SIGKILL");
      await exited;
    },
  };
}

/* ------------------------------------------------------------------ iSCSI: a tgt target and a stand-in iscsid */

/** Whether `program` is on PATH. */
export const which = (program: string) => spawnSync("sh", ["-c", `command -v ${program}`]).status === 0;
/** Root, tgtd (Debian package `tgt`), iscsiadm (open-iscsi) and unshare: what the tests against a real target need. */
export const canRunIscsiTarget = () => isRoot && which("tgtd") && which("iscsiadm") && which("unshare");
/** This kernel has iscsi_tcp (logins can succeed there, so the tests' no-module expectations do not apply). */
export const kernelHasIscsiTcp = () => existsSync("/sys/module/iscsi_tcp");

export interface TgtTarget {
  port: number;
  iqns: string[];
  stop(): Promise<void>;
}

const run = (file: string, args: string[]) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(file, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`${file} ${args.join(" ")}: exit ${code}: ${out}`))));
  });

/**
 * A real iSCSI target: tgtd (Debian package `tgt`) on 127.0.0.1:<port> with its own control port,
 * serving each IQN with one 16 MiB file-backed LUN in `dir`. Stopped by deleting the targets and
 * the system (tgtd ignores SIGTERM while targets exist), SIGKILL of our own child as a last resort.
 */
export async function startTgt(dir: string, port: number, iqns: string[]): Promise<TgtTarget> {
  const control = String(port % 100);
  const tgtd = spawn("tgtd", ["-f", "-C", control, "--iscsi", `portal=127.0.0.1:${port}`], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  tgtd.stderr!.on("data", (b: Buffer) => (log += b.toString()));
  const exited = new Promise<void>((resolve) => tgtd.once("exit", () => resolve()));
  const tgtadm = (...args: string[]) => run("tgtadm", ["-C", control, "--lld", "iscsi", ...args]);
  for (let i = 0; ; i++) {
    try {
      await run("tgtadm", ["-C", control, "--op", "show", "--mode", "sys"]);
      break;
    } catch (e) {
      if (i > 50 || tgtd.exitCode !== null) throw new Error(`tgtd did not start: ${log} ${String(e)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  for (const [i, iqn] of iqns.entries()) {
    const tid = String(i + 1);
    const lun = path.join(dir, `lun-${tid}.img`);
    await fs.writeFile(lun, "");
    await fs.truncate(lun, 16 * 1024 * 1024);
    await tgtadm("--op", "new", "--mode", "target", "--tid", tid, "-T", iqn);
    await tgtadm("--op", "new", "--mode", "logicalunit", "--tid", tid, "--lun", "1", "-b", lun);
    await tgtadm("--op", "bind", "--mode", "target", "--tid", tid, "-I", "ALL");
  }
  return {
    port,
    iqns,
    async stop() {
      for (const i of iqns.keys()) await tgtadm("--op", "delete", "--mode", "target", "--tid", String(i + 1), "--force").catch(() => {});
      await run("tgtadm", ["-C", control, "--op", "delete", "--mode", "system"]).catch(() => {});
      const timer = setTimeout(() => tgtd.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * A stand-in for iscsid on its abstract socket `ISCSIADM_ABSTRACT_NAMESPACE`, for a kernel
 * without the iSCSI modules (the real iscsid cannot start there: it needs NETLINK_ISCSI). It
 * answers the configuration queries iscsiadm makes during SendTargets discovery (initiator name,
 * alias, config file) and answers every other request — a login — with
 * ISCSI_ERR_TRANS_NOT_FOUND (12), which is what a real iscsid answers when the iscsi_tcp module is
 * missing. It performs no iSCSI itself: discovery is done by iscsiadm against the real target.
 */
export interface FakeIscsid {
  /** The request codes received, in order. */
  requests(): number[];
  stop(): Promise<void>;
}

export async function startFakeIscsid(initiatorName: string): Promise<FakeIscsid> {
  const net = await import("node:net");
  const requests: number[] = [];
  const server = net.createServer((sock) => {
    let answered = false;
    sock.on("data", (b: Buffer) => {
      if (answered || b.length < 4) return;
      answered = true;
      const cmd = b.readInt32LE(0);
      requests.push(cmd);
      const rsp = Buffer.alloc(16 * 1024); // larger than iscsiadm_rsp_t, which is read whole
      rsp.writeInt32LE(cmd, 0);
      if (cmd === 8) rsp.write(initiatorName, 8); // MGMT_IPC_CONFIG_INAME
      else if (cmd !== 9 && cmd !== 10) rsp.writeInt32LE(12, 4); // not IALIAS / CONFIG_FILE: ISCSI_ERR_TRANS_NOT_FOUND
      sock.end(rsp);
    });
    sock.on("error", () => {});
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen("\0ISCSIADM_ABSTRACT_NAMESPACE", () => resolve());
  });
  return {
    requests: () => [...requests],
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Bash lines that register a fake `tcp` iSCSI transport in /sys/class (overlay, namespace-private). */
export const fakeIscsiTransportSetup = (workDir: string) => `
mkdir -p ${workDir}/sysclass-upper/iscsi_transport/tcp ${workDir}/sysclass-work
echo 1 > ${workDir}/sysclass-upper/iscsi_transport/tcp/handle
echo 0x39 > ${workDir}/sysclass-upper/iscsi_transport/tcp/caps
mount -t overlay overlay -o lowerdir=/sys/class,upperdir=${workDir}/sysclass-upper,workdir=${workDir}/sysclass-work /sys/class
`;

/**
 * What lets iscsiadm do SendTargets discovery on this kernel: an iscsid stand-in (initiator name
 * `iqn.2024-01.io.csi-proxy.test:initiator`) and a private mount namespace with `fakeBin` bound over
 * /usr/local/sbin and the fake `tcp` transport registered (fakeIscsiTransportSetup in `workDir`).
 */
export async function iscsiTransportNamespace(workDir: string, fakeBin: string): Promise<{ iscsid: FakeIscsid; ns: MountNamespace }> {
  const iscsid = await startFakeIscsid("iqn.2024-01.io.csi-proxy.test:initiator");
  try {
    return { iscsid, ns: await mountNamespace(`mount --bind ${fakeBin} /usr/local/sbin\n${fakeIscsiTransportSetup(workDir)}`) };
  } catch (err) {
    await iscsid.stop();
    throw err;
  }
}

/* ------------------------------------------------------------------ systemd stand-in */

export interface FakeUnit {
  active: "active" | "inactive" | "failed";
  file: string;
  desc: string;
  requiredBy?: string[];
}

/**
 * A `systemctl` stand-in for machines whose PID 1 is not systemd: answers `show`, `start` and
 * `stop` for the units in its JSON state file (`<dir>/systemctl.state.json`), logging argv to
 * `<dir>/systemctl.argv.jsonl`. Unknown units: `LoadState=not-found` for show, exit 5 otherwise.
 */
export async function fakeSystemctl(dir: string, units: Record<string, FakeUnit>): Promise<{ path: string; argv(): Promise<string[][]>; units(): Promise<Record<string, FakeUnit>> }> {
  const file = path.join(dir, "systemctl");
  const stateFile = path.join(dir, "systemctl.state.json");
  const log = path.join(dir, "systemctl.argv.jsonl");
  await fs.writeFile(stateFile, JSON.stringify(units));
  await fs.writeFile(
    file,
    `#!${process.execPath}
const fs = require("fs");
const argv = process.argv.slice(2);
fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify(argv) + "\\n");
const units = JSON.parse(fs.readFileSync(${JSON.stringify(stateFile)}, "utf8"));
const unit = argv[argv.length - 1];
const u = units[unit.replace(/\\.service$/, "")];
if (argv[0] === "show") {
  if (!u) { process.stdout.write("LoadState=not-found\\nActiveState=inactive\\nUnitFileState=\\nDescription=" + unit + "\\n"); process.exit(0); }
  if (argv[1].includes("RequiredBy")) { process.stdout.write("RequiredBy=" + (u.requiredBy || []).map((d) => d + ".service").join(" ") + "\\nBoundBy=\\n"); process.exit(0); }
  process.stdout.write("LoadState=loaded\\nActiveState=" + u.active + "\\nUnitFileState=" + u.file + "\\nDescription=" + u.desc + "\\n");
  process.exit(0);
}
if (!u) { process.stderr.write("Failed to " + argv[0] + " " + unit + ": Unit " + unit + " not found.\\n"); process.exit(5); }
u.active = argv[0] === "start" ? "active" : "inactive";
fs.writeFileSync(${JSON.stringify(stateFile)}, JSON.stringify(units));
`,
    { mode: 0o755 },
  );
  return {
    path: file,
    async argv() {
      return (await fs.readFile(log, "utf8").catch(() => "")).split("\n").filter(Boolean).map((l) => JSON.parse(l) as string[]);
    },
    async units() {
      return JSON.parse(await fs.readFile(stateFile, "utf8"));
    },
  };
}
