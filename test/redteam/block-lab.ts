/**
 * The red-team lab for the disk and volume groups: sparse images in a private directory, loop devices
 * attached only by this lab (with or without partition scanning, offsets, size limits, stacked on
 * each other), the Linux group services in process, and checksums of image regions and files.
 *
 * Safety: every destructive call goes through {@link Lab.guardDisk} / {@link Lab.guardVolume}, which
 * fail the test unless the disk or volume lies on a loop device this lab attached to one of its own
 * images. Cleanup unmounts only this lab's mounts and detaches only this lab's loop devices (checked
 * against their backing file or device first).
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, existsSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createServices } from "../../src/index.ts";
import type { Services } from "../../src/groups/services.ts";

export const MiB = 1024 * 1024;

export const run = (file: string, args: string[], input?: string) =>
  execFileSync(file, args, { stdio: ["pipe", "pipe", "pipe"], encoding: "utf8", input });

/** Why the lab cannot run here, or null. */
export function labSkipReason(): string | null {
  if (process.platform !== "linux") return "loop devices need Linux";
  if (process.getuid?.() !== 0) return "needs root (losetup, mkfs, mount)";
  if (!existsSync("/dev/loop-control")) return "no loop driver";
  for (const tool of ["losetup", "sfdisk", "mkfs.ext4", "wipefs"]) {
    if (spawnSync(tool, ["--version"], { stdio: "ignore" }).error) return `${tool} missing: run scripts/install-host-tools.sh --test`;
  }
  return null;
}

export const hasTool = (tool: string) => !spawnSync(tool, ["--help"], { stdio: "ignore" }).error;

export interface Loop {
  device: string;
  name: string;
  major: number;
  minor: number;
  diskNumber: number;
  backing: string;
}

/** sha256 of `length` bytes at `offset` of a file or device. */
export function hashRegion(file: string, offset: number, length: number): string {
  const fd = openSync(file, "r");
  try {
    const h = createHash("sha256");
    const buf = Buffer.alloc(MiB);
    for (let done = 0; done < length; ) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, length - done), offset + done);
      if (n <= 0) break;
      h.update(buf.subarray(0, n));
      done += n;
    }
    return h.digest("hex");
  } finally {
    closeSync(fd);
  }
}

/** name → sha256 of every regular file directly in `dir`. */
export function hashFiles(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const f of readdirSync(dir).sort()) {
    const p = path.join(dir, f);
    if (statSync(p).isFile()) out.set(f, createHash("sha256").update(readFileSync(p)).digest("hex"));
  }
  return out;
}

/** Writes `count` files of distinct content into `dir` and syncs them. */
export function writeFiles(dir: string, count: number, tag: string): void {
  for (let i = 0; i < count; i++) writeFileSync(path.join(dir, `f${i}.dat`), `${tag}-${i}-`.repeat(1000 + i));
  run("sync", ["-f", dir]);
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Partition scanning is asynchronous: waits (up to 5 s) until every partition the kernel lists has its /dev node. */
export function waitForPartitions(loop: { name: string }): void {
  for (let i = 0; i < 100; i++) {
    const parts = readdirSync(`/sys/block/${loop.name}`).filter((e) => e.startsWith(loop.name));
    if (i >= 4 && parts.every((p) => existsSync(`/dev/${p}`))) return;
    sleep(50);
  }
}

export class Lab {
  readonly dir: string;
  readonly kubelet: string;
  readonly outside: string;
  readonly services: Services;
  readonly #loops: Loop[] = [];
  readonly #mounts: string[] = [];
  readonly #ownVolumeIds = new Set<string>();

  private constructor(dir: string, services: Services) {
    this.dir = dir;
    this.kubelet = path.join(dir, "kubelet");
    this.outside = path.join(dir, "outside");
    this.services = services;
  }

  /** `baseDir`: where the lab's directory (its images among them) is made; the system's temporary directory by default. */
  static async create(defaultFsType: "ext4" | "xfs" = "ext4", baseDir = tmpdir()): Promise<Lab> {
    const dir = mkdtempSync(path.join(baseDir, "csi-redteam-"));
    mkdirSync(path.join(dir, "kubelet"));
    mkdirSync(path.join(dir, "outside"));
    const services = await createServices({
      platform: "linux",
      kubeletPath: path.join(dir, "kubelet"),
      workingDirs: [],
      socketDir: path.join(dir, "sockets"),
      requirePrivacy: true,
      defaultFsType,
      stateDir: path.join(dir, "state"),
      allowedServices: [],
    });
    return new Lab(dir, services);
  }

  /** A sparse image of `mib` MiB in the lab directory. */
  image(mib: number, label = "img"): string {
    const file = path.join(this.dir, `${label}-${Math.random().toString(36).slice(2, 8)}.img`);
    const fd = openSync(file, "wx", 0o600);
    try {
      ftruncateSync(fd, mib * MiB);
    } finally {
      closeSync(fd);
    }
    return file;
  }

  #isOurs(backing: string): boolean {
    return backing.startsWith(this.dir + "/") || this.#loops.some((l) => backing === l.device || backing.startsWith(l.device + "p"));
  }

  /** Attaches `backing` (an image of this lab, or a device of this lab's loops). */
  attach(backing: string, opts: { partscan?: boolean; offset?: number; sizelimit?: number } = {}): Loop {
    assert.ok(this.#isOurs(backing), `lab guard: ${backing} is not this lab's`);
    const args = ["--find", "--show"];
    if (opts.partscan) args.push("--partscan");
    if (opts.offset !== undefined) args.push("--offset", String(opts.offset));
    if (opts.sizelimit !== undefined) args.push("--sizelimit", String(opts.sizelimit));
    const device = run("losetup", [...args, backing]).trim();
    const name = path.basename(device);
    const [major, minor] = readFileSync(`/sys/block/${name}/dev`, "utf8").trim().split(":").map(Number);
    const loop = { device, name, major, minor, diskNumber: major * 2 ** 20 + minor, backing };
    this.#loops.push(loop);
    // This machine's kernel may lack partition-table parsers: partitions come from partx (BLKPG), as the daemon does.
    if (opts.partscan) {
      spawnSync("partx", ["--update", "--nr", "1:256", device]);
      waitForPartitions(loop);
    }
    return loop;
  }

  detach(loop: Loop): void {
    run("losetup", ["--detach", loop.device]);
    this.#loops.splice(this.#loops.indexOf(loop), 1);
  }

  /** A new mount point directory inside the kubelet dir or outside it. */
  target(where: "kubelet" | "outside", name: string): string {
    const p = path.join(where === "kubelet" ? this.kubelet : this.outside, name);
    mkdirSync(p, { recursive: true });
    return p;
  }

  mount(device: string, dir: string, options?: string): void {
    run("mount", [...(options ? ["-o", options] : []), device, dir]);
    this.#mounts.push(dir);
  }

  umount(dir: string): void {
    run("umount", [dir]);
    const i = this.#mounts.lastIndexOf(dir);
    if (i >= 0) this.#mounts.splice(i, 1);
  }

  /** Records a mount the services made, so that cleanup removes it. */
  adoptMount(dir: string): void {
    this.#mounts.push(dir);
  }

  /** Fails the test unless disk `n` is one of this lab's loop devices. */
  guardDisk(n: number): number {
    assert.ok(this.#loops.some((l) => l.diskNumber === n), `lab guard: disk ${n} is not this lab's`);
    return n;
  }

  /** Volume ids this lab may pass to destructive calls: listed from its own disks, or dev- ids of its own devices. */
  async volumesOf(diskNumber: number): Promise<string[]> {
    const { volumeIds } = await this.services.volume.listVolumesOnDisk({ diskNumber: this.guardDisk(diskNumber), partitionNumber: 0 });
    for (const id of volumeIds) this.#ownVolumeIds.add(id);
    return volumeIds;
  }

  devId(loop: Loop, partition?: number): string {
    const sys = partition ? `/sys/block/${loop.name}/${loop.name}p${partition}/dev` : `/sys/block/${loop.name}/dev`;
    const [major, minor] = readFileSync(sys, "utf8").trim().split(":");
    const id = `\\\\?\\Volume{dev-${major}-${minor}}\\`;
    this.#ownVolumeIds.add(id);
    return id;
  }

  guardVolume(id: string): string {
    assert.ok(this.#ownVolumeIds.has(id), `lab guard: volume ${id} is not this lab's`);
    const dev = /dev-(\d+)-(\d+)/.exec(id);
    if (dev) {
      const real = realpathSync(`/sys/dev/block/${dev[1]}:${dev[2]}`);
      assert.ok(this.#loops.some((l) => real.includes(`/${l.name}`)), `lab guard: ${id} is ${real}`);
    }
    return id;
  }

  /** Unmounts this lab's mounts (newest first), detaches its loops (newest first), deletes its files. */
  cleanup(): void {
    // Also mounts the services made inside this lab's directories (a call that should have been refused).
    const unescape = (x: string) => x.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    const inside = readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .map((l) => unescape(l.split(" ")[4] ?? ""))
      .filter((m) => m.startsWith(this.dir + "/") && !this.#mounts.includes(m));
    for (const m of [...this.#mounts, ...inside].reverse()) {
      if (spawnSync("umount", [m]).status !== 0) spawnSync("umount", ["--lazy", m]);
    }
    this.#mounts.length = 0;
    for (const l of [...this.#loops].reverse()) {
      let backing = "";
      try {
        backing = readFileSync(`/sys/block/${l.name}/loop/backing_file`, "utf8").trim();
      } catch {
        continue;
      }
      if (backing === l.backing) {
        spawnSync("blockdev", ["--setrw", l.device]);
        spawnSync("losetup", ["--detach", l.device]);
      }
    }
    this.#loops.length = 0;
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Writes a GPT to an image file (never to a device) with sfdisk script lines like `start=40MiB,size=60MiB`. */
export function writeTable(image: string, label: "gpt" | "dos", lines: string[]): void {
  run("sfdisk", ["--quiet", "--wipe", "never", "--no-reread", "--no-tell-kernel", image], `label: ${label}\n${lines.join("\n")}\n`);
}
