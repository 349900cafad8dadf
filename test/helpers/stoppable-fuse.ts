// A FUSE filesystem (bindfs mirroring a fresh directory) whose daemon a test can stop with SIGSTOP:
// every lookup the kernel must ask the daemon about then waits, exactly like a path on a hung SMB
// mapping or a dead device. remove() resumes the daemon, unmounts and deletes everything.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";

export interface StoppableFuse {
  /** The directory bindfs mirrors (write here without going through FUSE). */
  source: string;
  mountpoint: string;
  /** SIGSTOP the daemon: lookups it has to answer hang from now on. */
  stop(): void;
  /** SIGCONT: the waiting lookups are answered. */
  resume(): void;
  /** Resume, unmount (lazily if busy), kill the daemon, remove both directories. */
  remove(): void;
}

const bindfs = "/usr/bin/bindfs";

export function fuseSkipReason(): string | undefined {
  if (process.platform !== "linux") return "Linux only";
  if (process.getuid?.() !== 0) return "needs root (FUSE mount with allow_other)";
  if (!existsSync(bindfs)) return "bindfs not installed (scripts/install-test-tools.sh)";
  if (!existsSync("/dev/fuse")) return "no /dev/fuse";
  return undefined;
}

const mounted = (mountpoint: string) => readFileSync("/proc/self/mountinfo", "utf8").split("\n").some((l) => l.split(" ")[4] === mountpoint);

/**
 * Mounts bindfs at `mountpoint` (created) over `<mountpoint>.src` and waits until the mount is there.
 * `mountOptions` are added to `allow_other` (e.g. FUSE's `attr_timeout=…`).
 */
export async function startStoppableFuse(mountpoint: string, mountOptions: string[] = []): Promise<StoppableFuse> {
  const source = `${mountpoint}.src`;
  mkdirSync(source, { recursive: true });
  mkdirSync(mountpoint, { recursive: true });
  const child: ChildProcess = spawn(bindfs, ["-f", "-o", ["allow_other", ...mountOptions].join(","), source, mountpoint], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr!.setEncoding("utf8").on("data", (c: string) => (log += c));
  for (let t0 = Date.now(); !mounted(mountpoint); await new Promise((r) => setTimeout(r, 20))) {
    if (child.exitCode !== null || Date.now() - t0 > 10_000) {
      child.kill("SIGKILL");
      throw new Error(`bindfs did not mount ${mountpoint}: ${log}`);
    }
  }
  const signal = (s: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(s);
  };
  return {
    source,
    mountpoint,
    stop: () => signal("SIGSTOP"),
    resume: () => signal("SIGCONT"),
    remove() {
      signal("SIGCONT");
      if (mounted(mountpoint)) {
        try {
          execFileSync("umount", [mountpoint], { stdio: "ignore" });
        } catch {
          execFileSync("umount", ["-l", mountpoint], { stdio: "ignore" });
        }
      }
      signal("SIGKILL");
      rmSync(source, { recursive: true, force: true });
      rmSync(mountpoint, { recursive: true, force: true });
    },
  };
}
