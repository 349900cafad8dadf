// Loop-device fixture for the disk/volume integration tests: a sparse file attached with
// `losetup --find --show --partscan`. Cleanup (unmount everything mounted from the device or its
// partitions, detach, delete the file) always runs: call it from `after`, and it is also
// registered for process exit, so a crashed test leaves nothing attached.
// Only devices created here are ever touched.
import { execFileSync } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, ftruncateSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

export interface LoopDevice {
  /** The backing file (the disk's serial number through ListDiskIDs). */
  file: string;
  /** e.g. /dev/loop3 */
  device: string;
  /** e.g. loop3 */
  name: string;
  major: number;
  minor: number;
  /** Disk number: (major << 20) | minor. */
  diskNumber: number;
  /** Grows (or shrinks) the sparse backing file; the kernel sees it after a Rescan. */
  resize(bytes: number): void;
  /** Mount points of the device and its partitions, from /proc/self/mountinfo. */
  mounts(): string[];
  /** Unmounts, detaches and deletes. Idempotent; never throws. */
  cleanup(): void;
}

/** Why loop-device tests cannot run here, or null when they can. */
export function loopDeviceSkipReason(): string | null {
  if (process.platform !== "linux") return "loop devices need Linux";
  if (process.getuid?.() !== 0) return "needs root (losetup, mkfs, mount); run the tests as root";
  try {
    execFileSync("losetup", ["--version"], { stdio: "ignore" });
    execFileSync("sfdisk", ["--version"], { stdio: "ignore" });
  } catch {
    return "util-linux/fdisk tools missing: run scripts/install-linux-tools.sh";
  }
  if (!existsSync("/dev/loop-control")) return "no /dev/loop-control (loop driver not available)";
  return null;
}

const live = new Set<LoopDevice>();
let exitHookInstalled = false;

function devNumbers(name: string): string[] {
  const dir = `/sys/block/${name}`;
  const out: string[] = [];
  try {
    out.push(readFileSync(`${dir}/dev`, "utf8").trim());
    for (const e of readdirSync(dir)) if (e.startsWith(name)) out.push(readFileSync(`${dir}/${e}/dev`, "utf8").trim());
  } catch {
    // detached meanwhile
  }
  return out;
}

function mountPointsOf(name: string): string[] {
  const devs = new Set(devNumbers(name));
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" "))
    .filter((f) => f.length > 4 && devs.has(f[2]))
    .map((f) => unescape(f[4]));
}

/** Creates a sparse file of `bytes` in `dir` and attaches it. */
export function createLoopDevice(dir: string, bytes: number, label = "disk"): LoopDevice {
  const file = path.join(dir, `${label}-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}.img`);
  const fd = openSync(file, "wx", 0o600);
  try {
    ftruncateSync(fd, bytes);
  } finally {
    closeSync(fd);
  }
  let device: string;
  try {
    device = execFileSync("losetup", ["--find", "--show", "--partscan", file], { encoding: "utf8" }).trim();
  } catch (err) {
    rmSync(file, { force: true });
    throw err;
  }
  const name = path.basename(device);
  const [major, minor] = readFileSync(`/sys/block/${name}/dev`, "utf8").trim().split(":").map(Number);
  let cleaned = false;
  const loop: LoopDevice = {
    file,
    device,
    name,
    major,
    minor,
    diskNumber: major * 2 ** 20 + minor,
    resize(size: number) {
      const f = openSync(file, "r+");
      try {
        ftruncateSync(f, size);
      } finally {
        closeSync(f);
      }
    },
    mounts: () => mountPointsOf(name),
    cleanup() {
      if (cleaned) return;
      cleaned = true;
      live.delete(loop);
      // Only detach if the device still belongs to our file (never a device someone else re-used).
      let backing = "";
      try {
        backing = readFileSync(`/sys/block/${name}/loop/backing_file`, "utf8").trim();
      } catch {
        // already detached
      }
      if (backing === file) {
        for (const mp of mountPointsOf(name).reverse()) {
          try {
            execFileSync("umount", [mp], { stdio: "ignore" });
          } catch {
            try {
              execFileSync("umount", ["--lazy", mp], { stdio: "ignore" });
            } catch {
              // reported by the detach failure below if it matters
            }
          }
        }
        try {
          execFileSync("blockdev", ["--setrw", device], { stdio: "ignore" });
        } catch {
          // best effort
        }
        try {
          execFileSync("losetup", ["--detach", device], { stdio: "ignore" });
        } catch (err) {
          process.stderr.write(`loop-device cleanup: could not detach ${device}: ${(err as Error).message}\n`);
        }
      }
      rmSync(file, { force: true });
    },
  };
  live.add(loop);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", () => {
      for (const l of [...live]) l.cleanup();
    });
  }
  return loop;
}

/** Runs `fn` on a fresh loop device of `bytes` over an image in a temporary directory of its own; cleans up both after, whatever `fn` did. */
export async function withLoopDevice<T>(bytes: number, label: string, fn: (loop: LoopDevice) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(path.join(tmpdir(), `csi-${label}-`));
  try {
    const loop = createLoopDevice(dir, bytes, label);
    try {
      return await fn(loop);
    } finally {
      loop.cleanup();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
