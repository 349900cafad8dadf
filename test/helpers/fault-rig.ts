// A daemon in a private mount namespace whose host tools are fault stand-ins (fault-tools.ts),
// with loop devices, restarts after kill -9, and the driver's call sequences (AzureDisk / GCE PD
// NodeStage: ListDiskIDs → PartitionDisk → ListVolumesOnDisk → IsVolumeFormatted → FormatVolume →
// MountVolume). Used by the fault and kill-point suites; everything is removed by close().
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { connectGroup } from "../../src/client/connect-group.ts";
import { parseMountInfo } from "../../src/host/linux/kernel/mountinfo.ts";
import { mountNamespace, startDaemon, type MountNamespace, type RunningDaemon } from "../integration/smb-iscsi-system-fixtures.ts";
import { createFaultTools, type FaultAction, type FaultTool, type FaultTools } from "./fault-tools.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "./loop-device.ts";

export const MiB = 1024 * 1024;
/** -host-command-timeout of the daemon that meets hanging tools, in seconds. */
export const HANG_TIMEOUT_S = 2;

/** Why a rig cannot be built here (no loop devices, no unshare(1)), or null. */
export const faultRigSkipReason = () => loopDeviceSkipReason() ?? (existsSync("/usr/bin/unshare") ? null : "needs unshare(1)");

/** One fault of a kill-point suite: which tool misbehaves how, on which argv (a pattern), and the first attempt's answer code when the daemon survives. */
export interface FaultCase {
  name: string;
  tool: FaultTool;
  action: FaultAction;
  pattern?: string;
  code?: number;
}

/** gRPC code numbers of a ConnectError-like failure (undefined when the call succeeded). */
export const codeOf = (e: unknown) => (e as { code?: number }).code;

export interface Clients {
  filesystem: any;
  disk: any;
  volume: any;
  smb: any;
  close(): void;
}

export interface FaultRig {
  dir: string;
  kubelet: string;
  stateDir: string;
  faults: FaultTools;
  ns: MountNamespace;
  daemon(): RunningDaemon;
  /** Starts (or restarts) the daemon in the namespace. */
  start(): Promise<void>;
  /** SIGTERM and start again (what an operator's restart does). */
  restart(): Promise<void>;
  /** The main daemon's socket dir (its disk offline-state file lives there). */
  socketDir: string;
  /** The hang daemon's state dir: a 256 KiB tmpfs in the namespace (fill it to make the disk full). */
  hangStateDir: string;
  /** Waits for the daemon to have been killed (by a stand-in), then starts a new one. Returns how long the restart took (ms). */
  restartAfterKill(): Promise<number>;
  /** kill -9 of the main daemon now (a crash right after an answer was sent: the answer is lost to the driver). */
  kill9(): void;
  clients(): Promise<Clients>;
  /**
   * Clients of a second daemon in the same namespace whose host commands are capped at
   * {@link HANG_TIMEOUT_S} (-host-command-timeout), for the one call that meets a hanging tool; the
   * main daemon keeps the default bounds, so real tools on a loaded machine never time out.
   */
  hangClients(): Promise<Clients>;
  newLoop(mib: number, label: string): LoopDevice;
  /** Mounts as the daemon's namespace sees them. */
  mounts(): { mountPoint: string; source: string; fsType: string }[];
  /** A path as seen inside the namespace (through the holder's /proc/<pid>/root). */
  inNs(p: string): string;
  /** Runs a command inside the namespace (as root), e.g. to mount a full or read-only filesystem. */
  exec(file: string, args: string[]): string;
  /** A fresh empty target directory in the kubelet dir. */
  target(name: string): string;
  close(): Promise<void>;
}

export async function createFaultRig(name: string, extraArgs: string[] = []): Promise<FaultRig> {
  const dir = mkdtempSync(path.join(tmpdir(), `csi-${name}-`));
  const kubelet = path.join(dir, "kubelet");
  const stateDir = path.join(dir, "state");
  const socketDir = path.join(dir, "sock");
  mkdirSync(path.join(kubelet, "plugins"), { recursive: true });
  const faults = createFaultTools(path.join(dir, "faults"));
  const hangStateDir = path.join(dir, "state-hang");
  mkdirSync(hangStateDir, { mode: 0o700 });
  const ns = await mountNamespace(`mount --bind ${faults.binDir} /usr/local/sbin\nmount -t tmpfs -o size=256k,mode=0700 csi-test-full ${hangStateDir}`);
  const holderPid = ns.enter[2];
  const loops: LoopDevice[] = [];
  const daemons: RunningDaemon[] = [];
  const open: { close(): void }[] = [];
  let current: RunningDaemon | undefined;
  let hang: RunningDaemon | undefined;
  const hangSocketDir = path.join(dir, "sock-hang");
  // Intent records of this rig's disks beside its state (the default is the node's /var/lib/csi-proxy/intents).
  const args = ["-socket-dir", socketDir, "-kubelet-path", kubelet, "-state-dir", stateDir, "-intent-dir", path.join(stateDir, "intents"), ...extraArgs];
  const connect = async (socket: string) => {
    const disk = await connectGroup("disk", { socketDir: socket, versions: ["v1"] });
    const volume = await connectGroup("volume", { socketDir: socket, versions: ["v1"] });
    const smb = await connectGroup("smb", { socketDir: socket, versions: ["v1"] });
    const filesystem = await connectGroup("filesystem", { socketDir: socket, versions: ["v1"] });
    const all = [disk, volume, smb, filesystem];
    const c = { filesystem: filesystem.client, disk: disk.client, volume: volume.client, smb: smb.client, close: () => all.forEach((x) => x.close()) };
    open.push(c);
    return c;
  };
  const rig: FaultRig = {
    dir,
    kubelet,
    stateDir,
    faults,
    ns,
    socketDir,
    hangStateDir,
    daemon: () => current!,
    async restart() {
      for (const c of open.splice(0)) c.close();
      await current!.stop();
      await rig.start();
    },
    async start() {
      current = await startDaemon(args, { wrapper: ns.enter, timeoutMs: 30_000 });
      daemons.push(current);
    },
    kill9() {
      current!.child.kill("SIGKILL");
    },
    async restartAfterKill() {
      const d = current!;
      const deadline = Date.now() + 20_000;
      while (d.child.exitCode === null && d.child.signalCode === null) {
        if (Date.now() > deadline) throw new Error("the daemon was not killed");
        await new Promise((r) => setTimeout(r, 20));
      }
      for (const c of open.splice(0)) c.close();
      const t0 = Date.now();
      await rig.start();
      return Date.now() - t0;
    },
    clients: () => connect(socketDir),
    async hangClients() {
      if (!hang) {
        hang = await startDaemon(["-socket-dir", hangSocketDir, "-kubelet-path", kubelet, "-state-dir", hangStateDir, "-intent-dir", path.join(stateDir, "intents"), "-host-command-timeout", String(HANG_TIMEOUT_S)], {
          wrapper: ns.enter,
          timeoutMs: 30_000,
        });
        daemons.push(hang);
      }
      return connect(hangSocketDir);
    },
    newLoop(mib, label) {
      const l = createLoopDevice(dir, mib * MiB, label);
      loops.push(l);
      return l;
    },
    mounts: () => parseMountInfo(readFileSync(`/proc/${holderPid}/mountinfo`, "utf8")),
    inNs: (p) => `/proc/${holderPid}/root${p}`,
    exec: (file, args) => execFileSync("nsenter", ["-t", holderPid, "-m", "--", file, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }),
    target(n) {
      const t = path.join(kubelet, "plugins", n);
      mkdirSync(t, { recursive: true });
      return t;
    },
    async close() {
      for (const c of open.splice(0)) c.close();
      for (const d of daemons) if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill("SIGTERM");
      // The namespace's mounts (volumes, SMB tmpfs) vanish with it; then the loops can be detached.
      await ns.close();
      // Every daemon is checked for Internal/Unknown answers; the loops are cleaned up whatever the outcome.
      const problems: unknown[] = [];
      for (const d of daemons) await d.stop().catch((e: unknown) => problems.push(e));
      for (const l of loops.reverse()) l.cleanup();
      rmSync(dir, { recursive: true, force: true });
      if (problems.length) throw problems[0];
    },
  };
  return rig;
}

/** The driver's NodeStage sequence (AzureDisk / GCE PD through csi-proxy v1). Returns the volume id. */
export async function driverStage(c: Clients, serial: string, target: string): Promise<string> {
  const { diskIDs } = await c.disk.listDiskIDs({});
  const found = Object.entries(diskIDs as Record<string, { serialNumber: string }>).find(([, ids]) => ids.serialNumber === serial);
  if (!found) throw new Error(`no disk with serial ${serial}`);
  const diskNumber = Number(found[0]);
  await c.disk.partitionDisk({ diskNumber });
  const { volumeIds } = await c.volume.listVolumesOnDisk({ diskNumber, partitionNumber: 0 });
  if (volumeIds.length === 0) throw new Error(`disk ${diskNumber} shows no volume`);
  const volumeId = volumeIds[0];
  if (!(await c.volume.isVolumeFormatted({ volumeId })).formatted) await c.volume.formatVolume({ volumeId });
  await c.volume.mountVolume({ volumeId, targetPath: target });
  return volumeId;
}

/** blkid's UUID of a device ("" when none). */
export const fsUuid = (dev: string) => spawnSync("blkid", ["-p", "-s", "UUID", "-o", "value", dev], { encoding: "utf8" }).stdout.trim();

/** Writes `text` as /marker.txt into the unmounted ext4 on `dev` (debugfs: no mount needed). */
export function writeMarkerOffline(dev: string, text: string, scratch: string): void {
  const src = path.join(scratch, `marker-${Date.now()}.txt`);
  writeFileSync(src, text);
  execFileSync("debugfs", ["-w", "-R", `write ${src} marker.txt`, dev], { stdio: "ignore" });
  rmSync(src);
}

/** sha256 of a whole device or file. */
export function sha256(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

/** Partition numbers the kernel shows on a loop device. */
export function kernelPartitions(loop: LoopDevice): string[] {
  return execFileSync("ls", [`/sys/block/${loop.name}`], { encoding: "utf8" }).split("\n").filter((e) => e.startsWith(`${loop.name}p`));
}

/** A disk no call names: ext4 with a file, whose bytes every case checks are unchanged. */
export interface Neighbour {
  readonly device: string;
  /** Fails unless the disk is byte-for-byte as it was made. */
  assertIntact(message?: string): void;
}

/** Makes the rig's neighbour disk (before `rig.start()`, so the daemon sees it from the start). */
export function createNeighbour(rig: FaultRig): Neighbour {
  const loop = rig.newLoop(16, "neighbour");
  execFileSync("mkfs.ext4", ["-q", loop.device]);
  writeMarkerOffline(loop.device, "neighbour data", rig.dir);
  const sum = sha256(loop.device);
  return {
    device: loop.device,
    assertIntact: (message = "the neighbouring disk is byte-for-byte intact") => {
      if (sha256(loop.device) !== sum) throw new Error(message);
    },
  };
}

/**
 * Same-run baseline for tests that cut a FormatVolume short: how long the daemon's checks before mkfs
 * take now (they scan every process's descriptors and mount table, so they slow down with the
 * machine's load) — a FormatVolume whose mkfs stand-in fails at once, timed. Leaves no fault armed.
 */
export async function checksBeforeMkfsMs(rig: FaultRig, volume: Clients["volume"], volumeId: string): Promise<number> {
  rig.faults.arm("mkfs.ext4", "fail");
  const t0 = Date.now();
  const err = await volume.formatVolume({ volumeId }).then(() => null, (e: unknown) => e);
  const ms = Date.now() - t0;
  const fired = rig.faults.fired("mkfs.ext4");
  rig.faults.reset();
  if (!err || !fired) throw new Error(`the baseline FormatVolume did not reach mkfs: ${String(err)}`);
  return ms;
}
