// Builds and starts slow-fuse.c (a FUSE filesystem with slow reads/writes and a file whose lookup can
// be held, so a process touching it sits in the kernel past SIGKILL). The binary is compiled once per
// source text into the temp dir (needs cc and libfuse3-dev: scripts/install-test-tools.sh).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const source = fileURLToPath(new URL("./slow-fuse.c", import.meta.url));

export function slowFuseSkipReason(): string | undefined {
  if (process.platform !== "linux") return "Linux only";
  if (process.getuid?.() !== 0) return "needs root (FUSE mount, loop devices)";
  if (!existsSync("/dev/fuse")) return "no /dev/fuse";
  try {
    execFileSync("pkg-config", ["--exists", "fuse3"], { stdio: "ignore" });
    execFileSync("cc", ["--version"], { stdio: "ignore" });
  } catch {
    return "cc or libfuse3-dev missing (scripts/install-test-tools.sh)";
  }
  return undefined;
}

/** The compiled helper (built on first use, cached by the hash of its source). */
export function slowFuseBinary(): string {
  const text = readFileSync(source);
  const dir = path.join(tmpdir(), `csi-slow-fuse-${createHash("sha256").update(text).digest("hex").slice(0, 16)}`);
  const bin = path.join(dir, "slow-fuse");
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  const flags = execFileSync("pkg-config", ["--cflags", "--libs", "fuse3"], { encoding: "utf8" }).trim().split(/\s+/);
  const tmp = `${bin}.${process.pid}`;
  execFileSync("cc", ["-O2", "-o", tmp, source, ...flags], { stdio: ["ignore", "ignore", "pipe"] });
  renameSync(tmp, bin);
  return bin;
}

export interface SlowFuse {
  mountpoint: string;
  /** The directory whose files it mirrors (write here without going through FUSE). */
  source: string;
  /** While held, a lookup of `<mountpoint>/held` does not answer. */
  heldPath: string;
  hold(): void;
  release(): void;
  /**
   * Sets the faults of reads of mirrored files (slow-fuse.c's $SLOW_FUSE_FAULTS): byte ranges [start, end)
   * where reads fail with EIO or hang until the range is gone. An empty list ends every fault.
   */
  faults(ranges: { kind: "eio" | "hang"; start: number | bigint; end: number | bigint }[]): void;
  /** Releases, unmounts (lazily if busy), kills the daemon. Idempotent. */
  remove(): void;
}

export interface SlowFuseOptions {
  /** Sleep before each write / read of a mirrored file, µs. */
  writeDelayUs?: number;
  readDelayUs?: number;
  /** Prefix running the daemon in another mount namespace (`nsenter -t <pid> -m --`). */
  wrapper?: string[];
  /** Open files with direct_io (no page cache in front of the daemon: every read of a loop device over an image reaches it). */
  directIo?: boolean;
  /** The mount table the daemon's mounts show up in (default /proc/self/mountinfo). */
  mountinfo?: string;
}

/** Mounts slow-fuse at `mountpoint` (created) over `<mountpoint>.src` (created) and waits for the mount. */
export async function startSlowFuse(mountpoint: string, options: SlowFuseOptions = {}): Promise<SlowFuse> {
  const bin = slowFuseBinary();
  const src = `${mountpoint}.src`;
  const holdFile = `${mountpoint}.hold`;
  const faultsFile = `${mountpoint}.faults`;
  mkdirSync(src, { recursive: true });
  mkdirSync(mountpoint, { recursive: true });
  const mountinfo = options.mountinfo ?? "/proc/self/mountinfo";
  const mounted = () => readFileSync(mountinfo, "utf8").split("\n").some((l) => l.split(" ")[4] === mountpoint);
  const wrapper = options.wrapper ?? [];
  const argv = [...wrapper, bin, mountpoint, "-f", "-o", "allow_other"];
  const child: ChildProcess = spawn(argv[0], argv.slice(1), {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, SLOW_FUSE_SRC: src, SLOW_FUSE_HOLD: holdFile, SLOW_FUSE_FAULTS: faultsFile, ...(options.directIo ? { SLOW_FUSE_DIRECT_IO: "1" } : {}), SLOW_FUSE_WRITE_DELAY_US: String(options.writeDelayUs ?? 0), SLOW_FUSE_READ_DELAY_US: String(options.readDelayUs ?? 0) },
  });
  let log = "";
  child.stderr!.setEncoding("utf8").on("data", (c: string) => (log += c));
  for (let t0 = Date.now(); !mounted(); await new Promise((r) => setTimeout(r, 20))) {
    if (child.exitCode !== null || Date.now() - t0 > 10_000) {
      child.kill("SIGKILL");
      throw new Error(`slow-fuse did not mount ${mountpoint}: ${log}`);
    }
  }
  let removed = false;
  return {
    mountpoint,
    source: src,
    heldPath: path.join(mountpoint, "held"),
    hold: () => writeFileSync(holdFile, ""),
    release: () => rmSync(holdFile, { force: true }),
    faults(ranges) {
      // Written whole, then renamed over: a read never sees half a list.
      writeFileSync(`${faultsFile}.tmp`, ranges.map((r) => `${r.kind} ${r.start} ${r.end}\n`).join(""));
      renameSync(`${faultsFile}.tmp`, faultsFile);
    },
    remove() {
      if (removed) return;
      removed = true;
      rmSync(holdFile, { force: true });
      rmSync(faultsFile, { force: true });
      if (mounted()) {
        try {
          execFileSync(wrapper[0] ?? "umount", [...wrapper.slice(1), ...(wrapper.length ? ["umount"] : []), mountpoint], { stdio: "ignore" });
        } catch {
          try {
            execFileSync(wrapper[0] ?? "umount", [...wrapper.slice(1), ...(wrapper.length ? ["umount"] : []), "-l", mountpoint], { stdio: "ignore" });
          } catch {}
        }
      }
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      rmSync(src, { recursive: true, force: true });
      rmSync(mountpoint, { recursive: true, force: true });
    },
  };
}
