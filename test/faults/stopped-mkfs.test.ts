// A stopped mkfs (the one stoppable step that writes a volume, src/host/exec/host-steps.ts) leaves a
// volume IsVolumeFormatted answers false for, so the driver's retry formats it again: FormatVolume
// cancelled while mkfs.ext4 / mkfs.xfs runs on a slow disk (a loop device over an image on
// slow-fuse.ts, writes 50 ms each, writeback capped at one page), then IsVolumeFormatted.
// The Linux volume host and service as the daemon composes them, in process.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { createLinuxBlockTools } from "../../src/host/linux/block/linux-block-tools.ts";
import { LinuxVolumeHost } from "../../src/host/linux/volume.ts";
import { createVolumeService } from "../../src/groups/volume/volume-service.ts";
import { createKeyedMutex } from "../../src/util/keyed-mutex.ts";
import { Code, CsiProxyError } from "../../src/errors.ts";
import { startSlowFuse, slowFuseSkipReason, type SlowFuse } from "../helpers/slow-fuse.ts";

const skip = slowFuseSkipReason();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Live processes named `comm` whose argv names `device`. */
function running(comm: string, device: string): number[] {
  const pids: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/comm`, "utf8").trim() !== comm) continue;
      if (!readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0").includes(device)) continue;
      if (/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${e}/stat`, "utf8"))) continue;
      pids.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe("a stopped mkfs leaves a volume IsVolumeFormatted answers false for", { skip }, () => {
  let dir = "";
  let fuse: SlowFuse | undefined;
  const cleanups: (() => void)[] = [];
  before(async () => {
    dir = mkdtempSync("/var/tmp/csi-stopped-mkfs-");
    fuse = await startSlowFuse(path.join(dir, "slow"), { writeDelayUs: 50_000 });
  });
  after(() => {
    for (const c of cleanups.reverse()) c();
    fuse?.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const fsType of ["xfs", "ext4"] as const) {
    it(`${fsType}: FormatVolume cancelled 1 s into mkfs.${fsType}, then IsVolumeFormatted is false`, async () => {
      const image = path.join(fuse!.source, fsType);
      writeFileSync(image, "");
      execFileSync("truncate", ["-s", "320M", image]);
      execFileSync("sfdisk", ["-q", image], { input: "label: gpt\n,,L\n", stdio: ["pipe", "ignore", "pipe"] });
      const loop = execFileSync("losetup", ["--find", "--show", "--partscan", path.join(fuse!.mountpoint, fsType)], { encoding: "utf8" }).trim();
      if (!existsSync(`${loop}p1`)) execFileSync("partx", ["-a", loop]);
      for (const t0 = Date.now(); !existsSync(`${loop}p1`) && Date.now() - t0 < 10_000; ) await sleep(20);
      const bdi = `/sys/class/bdi/${readFileSync(`/sys/block/${path.basename(loop)}/dev`, "utf8").trim()}`;
      const saved = ["max_ratio", "strict_limit"].map((f) => [f, readFileSync(`${bdi}/${f}`, "utf8").trim()] as const);
      cleanups.push(() => {
        for (const [f, v] of saved) writeFileSync(`${bdi}/${f}`, v);
        spawnSync("losetup", ["--detach", loop], { stdio: "ignore" });
      });
      writeFileSync(`${bdi}/strict_limit`, "1");
      writeFileSync(`${bdi}/max_bytes`, "4096");

      const tools = createLinuxBlockTools({ stateFile: path.join(dir, `marks-${fsType}.json`) });
      const volume = createVolumeService({ host: new LinuxVolumeHost(tools, { defaultFileSystem: fsType }), locks: createKeyedMutex() });
      const [maj, min] = readFileSync(`/sys/block/${path.basename(loop)}/dev`, "utf8").trim().split(":").map(Number);
      const volumeId = (await volume.listVolumesOnDisk({ diskNumber: maj * 2 ** 20 + min, partitionNumber: 0 })).volumeIds[0];
      assert.equal((await volume.isVolumeFormatted({ volumeId })).formatted, false);

      const ac = new AbortController();
      const call = volume.formatVolume({ volumeId }, { signal: ac.signal }).then(() => null, (e: unknown) => e);
      let settled = false;
      void call.then(() => (settled = true));
      const mkfs = `mkfs.${fsType}`;
      for (const t0 = Date.now(); !running(mkfs, `${loop}p1`).length && !settled && Date.now() - t0 < 60_000; ) await sleep(10);
      assert.equal(settled, false, `${mkfs} ran: ${String(await Promise.race([call, sleep(0)]))}`);
      await sleep(1000);
      ac.abort();
      const err = await call;
      assert.ok(err instanceof CsiProxyError && err.code === Code.Canceled, `the call was cut during ${mkfs}: ${String(err)}`);
      for (const t0 = Date.now(); running(mkfs, `${loop}p1`).length && Date.now() - t0 < 30_000; ) await sleep(50);
      assert.equal((await volume.isVolumeFormatted({ volumeId })).formatted, false, `after a stopped ${mkfs}: blkid -p says ${spawnSync("blkid", ["-p", `${loop}p1`], { encoding: "utf8" }).stdout.trim() || "nothing"}`);
    });
  }
});
