// Shared pieces of the driver replays (test/drivers/*.test.ts): a daemon on Unix sockets, clients
// of exactly the group/versions a driver dials, every csi-proxy call recorded in order, and
// csi-proxy errors shaped as the two kinds of client see them: Go's `err.Error()` (`rpc error:
// code = <Name> desc = <message>`) and grpc-js's `details` (democratic-csi). A driver model
// (see block-driver-model.ts and the SMB tests) is a small client-side re-statement of the
// driver's own branches on those answers, written from reading its code (docs/driver-compat.md).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import * as fs from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { connectGroup } from "../../src/client/connect-group.ts";
import { codeName } from "../../src/errors.ts";
import { startDaemonProcess, type DaemonProcess } from "../helpers/daemon-process.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../helpers/loop-device.ts";
import { MOUNT_TMPFS_INSTEAD, mountNamespace, recordingProgram, startDaemon, type MountNamespace, type RunningDaemon } from "../integration/smb-iscsi-system-fixtures.ts";

export const MiB = 1024 * 1024;

/** A csi-proxy error as a Go driver (err.Error()) and democratic-csi (e.details) see it. */
export class ProxyError extends Error {
  readonly code: number;
  readonly details: string;
  constructor(code: number, details: string) {
    super(`rpc error: code = ${codeName(code)} desc = ${details}`);
    this.code = code;
    this.details = details;
  }
}

/** What a CSI driver answers kubelet: OK, or a CSI status code with its message. */
export class CsiError extends Error {
  readonly csiCode: string;
  constructor(csiCode: string, message: string) {
    super(message);
    this.csiCode = csiCode;
  }
}

/** Runs a node call; "OK" or "<CSI code>: <message>". */
export async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "OK";
  } catch (e) {
    if (e instanceof CsiError) return `${e.csiCode}: ${e.message}`;
    throw e;
  }
}

type Group = "disk" | "filesystem" | "volume" | "smb" | "iscsi" | "system";

/** Clients of the given group/versions; every call is logged as `<group>.<Method>` and errors become ProxyError. */
export class Proxy {
  readonly log: string[] = [];
  #clients = new Map<string, { close(): void; client: Record<string, (req: unknown) => Promise<unknown>> }>();
  readonly socketDir: string;
  readonly versions: Partial<Record<Group, string>>;
  constructor(socketDir: string, versions: Partial<Record<Group, string>>) {
    this.socketDir = socketDir;
    this.versions = versions;
  }

  async call<T = Record<string, unknown>>(group: Group, method: string, req: object): Promise<T> {
    const version = this.versions[group];
    if (!version) throw new Error(`the driver does not dial ${group}`);
    let c = this.#clients.get(group);
    if (!c) {
      const g = await connectGroup(group, { socketDir: this.socketDir, versions: [version] as never });
      c = g as unknown as { close(): void; client: Record<string, (req: unknown) => Promise<unknown>> };
      this.#clients.set(group, c);
    }
    const name = method[0].toUpperCase() + method.slice(1);
    this.log.push(`${group}.${name}`);
    const fn = c.client[method];
    if (typeof fn !== "function") throw new Error(`${group} ${version} has no ${method}`);
    try {
      return (await fn.call(c.client, req)) as T;
    } catch (e) {
      const err = e as { code?: number; rawMessage?: string; message: string };
      throw new ProxyError(err.code ?? 2, err.rawMessage ?? err.message);
    }
  }

  /** The calls since the last take(), emptied. */
  take(): string[] {
    return this.log.splice(0);
  }

  close(): void {
    for (const c of this.#clients.values()) c.close();
    this.#clients.clear();
  }
}

export const blockSkipReason = loopDeviceSkipReason;

export interface BlockEnv {
  daemon: DaemonProcess;
  /** The extra allowed directory (-working-dir) when one was asked for. */
  workingDir?: string;
  kubelet: string;
  loop: LoopDevice;
  proxy(versions: Partial<Record<Group, string>>): Proxy;
  /** kubelet's staging and publish paths for one volume. */
  paths(name: string): { staging: string; publish: string };
  stop(): Promise<void>;
}

/** A daemon and one 64 MiB loop device (the "attached disk"). */
export async function startBlockEnv(label: string, options: { workingDir?: boolean } = {}): Promise<BlockEnv> {
  const images = mkdtempSync(path.join(tmpdir(), `csi-replay-${label}-`));
  const workingDir = options.workingDir ? path.join(images, "disks") : undefined;
  if (workingDir) mkdirSync(workingDir);
  const daemon = await startDaemonProcess({ args: ["-state-dir", path.join(images, "state"), ...(workingDir ? ["-working-dir", workingDir] : [])] });
  const loop = createLoopDevice(images, 64 * MiB, label);
  const proxies: Proxy[] = [];
  return {
    daemon,
    workingDir,
    kubelet: daemon.kubeletDir,
    loop,
    proxy(versions) {
      const p = new Proxy(daemon.socketDir, versions);
      proxies.push(p);
      return p;
    },
    paths(name) {
      const staging = path.join(daemon.kubeletDir, "plugins", "kubernetes.io", "csi", label, name, "globalmount");
      const publish = path.join(daemon.kubeletDir, "pods", `pod-${name}`, "volumes", "kubernetes.io~csi", name, "mount");
      return { staging, publish };
    },
    async stop() {
      for (const p of proxies) p.close();
      loop.cleanup();
      await daemon.stop();
      rmSync(images, { recursive: true, force: true });
    },
  };
}

/** What kubelet does before NodeStage / NodePublish on Windows: it creates the parent directories. */
export function kubeletCreatesParents(p: string): void {
  mkdirSync(path.dirname(p), { recursive: true });
}

export const smbSkipReason = (): string | null =>
  process.getuid?.() !== 0 ? "needs root (mount namespace)" : null;

export interface SmbEnv {
  kubelet: string;
  /** The daemon's socket directory (a driver probes an endpoint there as go-winio's DialPipe does). */
  socketDir: string;
  /**
   * What os.Readlink of an SMB staging link gives a driver on Windows: the UNC path it was mapped from.
   * The Linux host links into its CIFS mount instead; that mount's source (the daemon's mount table) gives
   * the share, the rest of the link target the path inside it. null when `linkTarget` is in no CIFS mount.
   */
  remoteOfLink(linkTarget: string): Promise<string | null>;
  proxy(versions: Partial<Record<Group, string>>): Proxy;
  /** CIFS mounts the daemon made (tmpfs stand-ins), by source. */
  mounts(): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * The daemon in a private mount namespace whose `mount` mounts a tmpfs in place of CIFS (as
 * test/integration/smb.test.ts does): everything but the CIFS protocol runs for real.
 */
export async function startSmbEnv(label: string): Promise<SmbEnv> {
  const dir = await fs.mkdtemp(path.join(tmpdir(), `csi-replay-${label}-`));
  const kubelet = path.join(dir, "kubelet");
  const socketDir = path.join(dir, "sock");
  const fakeBin = path.join(dir, "fakebin");
  await fs.mkdir(path.join(kubelet, "plugins"), { recursive: true });
  await fs.mkdir(fakeBin);
  const mount = await recordingProgram(fakeBin, "mount");
  await mount.behave(MOUNT_TMPFS_INSTEAD);
  const ns: MountNamespace = await mountNamespace(`mount --bind ${fakeBin} /usr/local/sbin`);
  const daemon: RunningDaemon = await startDaemon(["-socket-dir", socketDir, "-kubelet-path", kubelet, "-state-dir", path.join(dir, "state")], { wrapper: ns.enter });
  const proxies: Proxy[] = [];
  return {
    kubelet,
    socketDir,
    proxy(versions) {
      const p = new Proxy(socketDir, versions);
      proxies.push(p);
      return p;
    },
    async remoteOfLink(linkTarget) {
      const text = await fs.readFile(`/proc/${daemon.child.pid}/mountinfo`, "utf8");
      for (const line of text.split("\n")) {
        const [left, right] = line.split(" - ");
        const mountPoint = left?.split(" ")[4];
        const source = right?.split(" ")[1];
        if (!mountPoint || !source || !mountPoint.startsWith(path.join(dir, "state"))) continue;
        if (linkTarget !== mountPoint && !linkTarget.startsWith(mountPoint + "/")) continue;
        const rest = linkTarget.slice(mountPoint.length).split("/").filter(Boolean);
        return [source.replaceAll("/", "\\"), ...rest].join("\\");
      }
      return null;
    },
    async mounts() {
      const text = await fs.readFile(`/proc/${daemon.child.pid}/mountinfo`, "utf8");
      return text.split("\n").filter((l) => l.includes(path.join(dir, "state"))).map((l) => l.split(" - ")[1]?.split(" ")[1] ?? "");
    },
    async stop() {
      for (const p of proxies) p.close();
      await daemon.stop();
      await ns.close();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
