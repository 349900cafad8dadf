// ResizeVolume of an unmounted ext4 on a slow disk, cut short — by the call's deadline, by the
// daemon's -host-command-timeout 5, by a SIGTERM of the daemon — never leaves a filesystem fsck
// rejects, and a retry converges (the filesystem fills its grown partition, fsck clean). The disk is a
// loop device over an image on slow-fuse.ts (every FUSE write waits 50 ms; the loop device's writeback
// capped at one page, so writes wait in killable places). The ext4 is grown online on a private
// temporary mount (the kernel's journaled resize); the steps that rewrite metadata in place (sfdisk,
// partx) are never signalled (src/host/exec/host-steps.ts).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { Code } from "../../src/errors.ts";
import { createFaultRig, codeOf, type Clients, type FaultRig } from "../helpers/fault-rig.ts";
import { startSlowFuse, slowFuseSkipReason, type SlowFuse } from "../helpers/slow-fuse.ts";

const skip = slowFuseSkipReason();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MiB = 1024 * 1024;
/** ResizeVolume's size: 0, the largest the disk allows (growth below upstream's 100 MiB threshold is no change). */
const TARGET = 0n;

/** Live host tools named `comm` whose argv mentions `device` (resize2fs, e2fsck, sfdisk …). */
function toolsOn(comm: string, device: string): number[] {
  const pids: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/comm`, "utf8").trim() !== comm) continue;
      if (!readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0").some((a) => a.startsWith(device))) continue;
      if (/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${e}/stat`, "utf8"))) continue;
      pids.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe("a ResizeVolume cut short on a slow disk leaves a filesystem fsck accepts, and a retry converges", { skip }, () => {
  let rig: FaultRig;
  let c: Clients;
  let fuse: SlowFuse | undefined;
  /** A slower mount for the cap's case: a step must outlast the 5 s cap even on a quiet machine. */
  let slower: SlowFuse | undefined;
  const loops: { loop: string; bdi: string; saved: [string, string][] }[] = [];
  before(async () => {
    rig = await createFaultRig("slow-resize", ["-host-command-timeout", "5"]);
    await rig.start();
    c = await rig.clients();
    fuse = await startSlowFuse(path.join(rig.dir, "slow"), { writeDelayUs: 50_000, wrapper: rig.ns.enter, mountinfo: `/proc/${rig.ns.enter[2]}/mountinfo` });
    slower = await startSlowFuse(path.join(rig.dir, "slower"), { writeDelayUs: 250_000, wrapper: rig.ns.enter, mountinfo: `/proc/${rig.ns.enter[2]}/mountinfo` });
  });
  after(async () => {
    c?.close();
    for (const { loop, bdi, saved } of loops) {
      for (const [f, v] of saved) writeFileSync(`${bdi}/${f}`, v);
      for (const t0 = Date.now(); toolsOn("resize2fs", loop).length && Date.now() - t0 < 30_000; ) await sleep(100);
      spawnSync("nsenter", ["-t", rig.ns.enter[2], "-m", "--", "umount", "-R", "-l", `${loop}p1`], { stdio: "ignore" });
      spawnSync("losetup", ["--detach", loop], { stdio: "ignore" });
    }
    fuse?.remove();
    slower?.remove();
    await rig?.close();
  });

  /** A 256 MiB disk on the slow mount with a 24 MiB ext4 partition (made on the image directly, fast), as a slow loop device; its volume id. */
  async function slowVolume(label: string, on: SlowFuse = fuse!): Promise<{ loop: string; volumeId: string }> {
    const image = path.join(on.source, label);
    writeFileSync(image, "");
    execFileSync("truncate", ["-s", "256M", image]);
    execFileSync("sfdisk", ["-q", image], { input: "label: gpt\nstart=2048, size=49152, type=L\n", stdio: ["pipe", "ignore", "pipe"] });
    execFileSync("mkfs.ext4", ["-q", "-F", "-E", `offset=${MiB}`, image, "24M"], { stdio: "ignore" });
    const loop = rig.exec("losetup", ["--find", "--show", "--partscan", path.join(on.mountpoint, label)]).trim();
    if (!existsSync(`${loop}p1`)) rig.exec("partx", ["-a", loop]);
    for (const t0 = Date.now(); !existsSync(`${loop}p1`) && Date.now() - t0 < 10_000; ) await sleep(20);
    const bdi = `/sys/class/bdi/${readFileSync(`/sys/block/${path.basename(loop)}/dev`, "utf8").trim()}`;
    const saved: [string, string][] = ["max_ratio", "strict_limit"].map((f) => [f, readFileSync(`${bdi}/${f}`, "utf8").trim()]);
    loops.push({ loop, bdi, saved });
    writeFileSync(`${bdi}/strict_limit`, "1");
    writeFileSync(`${bdi}/max_bytes`, "4096");
    const { diskIDs } = await c.disk.listDiskIDs({});
    const found = Object.entries(diskIDs as Record<string, { serialNumber: string }>).find(([, ids]) => ids.serialNumber === path.join(on.mountpoint, label));
    assert.ok(found, `disk of ${loop}`);
    const volumeId = (await c.volume.listVolumesOnDisk({ diskNumber: Number(found[0]), partitionNumber: 0 })).volumeIds[0] as string;
    return { loop, volumeId };
  }

  /** e2fsck -fn once nothing runs on it any more: exit status and output. */
  async function fsck(loop: string): Promise<{ status: number | null; out: string }> {
    for (const t0 = Date.now(); (toolsOn("resize2fs", loop).length || toolsOn("e2fsck", loop).length) && Date.now() - t0 < 60_000; ) await sleep(100);
    const r = spawnSync("e2fsck", ["-fn", `${loop}p1`], { encoding: "utf8" });
    return { status: r.status, out: `${r.stdout}${r.stderr}`.trim().split("\n").slice(-4).join(" | ") };
  }

  /** The retry converges: OK, the filesystem fills the partition, fsck clean. */
  async function retryConverges(loop: string, volumeId: string): Promise<void> {
    let last: Error | null = null;
    for (let i = 0; i < 5; i++) {
      last = await c.volume.resizeVolume({ volumeId, sizeBytes: TARGET }, { timeoutMs: 300_000 }).then(() => null, (e: Error) => e);
      if (last === null) break;
      assert.equal(codeOf(last), Code.Aborted, `a retry is OK or refused while a step runs on: ${String(last)}`);
      await sleep(1000);
    }
    assert.equal(last, null, String(last));
    const dump = execFileSync("dumpe2fs", ["-h", `${loop}p1`], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    const bytes = Number(/^Block count:\s+(\d+)/m.exec(dump)![1]) * Number(/^Block size:\s+(\d+)/m.exec(dump)![1]);
    assert.ok(bytes > 200 * MiB, `the filesystem fills its grown partition (${bytes} bytes)`);
    const after = await fsck(loop);
    assert.equal(after.status, 0, `fsck after the retry: ${after.out}`);
  }

  it("the call's deadline (4 s) during the resize", async () => {
    const { loop, volumeId } = await slowVolume("deadline");
    const t0 = Date.now();
    const err = await c.volume.resizeVolume({ volumeId, sizeBytes: TARGET }, { timeoutMs: 4000 }).then(() => null, (e: unknown) => e);
    console.log(`deadline: answered after ${Date.now() - t0} ms: ${String(err)}`);
    if (err !== null) assert.equal(codeOf(err), Code.DeadlineExceeded, String(err));
    const cut = await fsck(loop);
    assert.equal(cut.status, 0, `fsck after the cut: ${cut.out}`);
    await retryConverges(loop, volumeId);
  });

  it("-host-command-timeout 5 during the resize", async () => {
    const { loop, volumeId } = await slowVolume("cap", slower);
    const t0 = Date.now();
    const err = await c.volume.resizeVolume({ volumeId, sizeBytes: TARGET }, { timeoutMs: 300_000 }).then(() => null, (e: unknown) => e);
    console.log(`cap: answered after ${Date.now() - t0} ms: ${String(err)}`);
    assert.equal(codeOf(err), Code.DeadlineExceeded, `the 5 s cap cut a step: ${String(err)}`);
    const cut = await fsck(loop);
    assert.equal(cut.status, 0, `fsck after the cut: ${cut.out}`);
    await retryConverges(loop, volumeId);
  });

  it("a SIGTERM of the daemon (systemctl stop/restart) during the resize", async () => {
    const { loop, volumeId } = await slowVolume("sigterm");
    const call = c.volume.resizeVolume({ volumeId, sizeBytes: TARGET }, { timeoutMs: 300_000 }).then(() => null, (e: unknown) => e);
    let settled = false;
    void call.then(() => (settled = true));
    for (const t0 = Date.now(); !toolsOn("resize2fs", loop).length && !settled && Date.now() - t0 < 120_000; ) await sleep(10);
    assert.equal(settled, false, "the daemon is stopped while resize2fs runs");
    await sleep(500);
    const t0 = Date.now();
    c.close();
    await rig.restart();
    c = await rig.clients();
    console.log(`sigterm: restarted after ${Date.now() - t0} ms; the call: ${String(await call)}`);
    const cut = await fsck(loop);
    assert.equal(cut.status, 0, `fsck after the stop: ${cut.out}`);
    await retryConverges(loop, volumeId);
  });
});
