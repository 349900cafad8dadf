// A real mkfs.ext4 on a slow disk, cut short when its call is cancelled, through the daemon: the disk is
// a loop device over an image file on slow-fuse.ts (every write waits 50 ms in the FUSE daemon; the
// loop device's writeback is capped at one page, so mkfs.ext4 spends its time in killable waits and
// takes several seconds instead of a fraction of one). FormatVolume cancelled by its client 2 s after
// its mkfs started (the deadline's path is the same abort of the call's signal: call-deadline.test.ts)
// answers Canceled; that mkfs is gone 1 s after the answer; a retry made at once never runs a
// second mkfs while the first lives (it waits for the disk, or is refused Aborted when the first
// outlived its kill), and the disk is usable afterwards (the retry formats).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { Code } from "../../src/errors.ts";
import { createFaultRig, codeOf, type Clients, type FaultRig } from "../helpers/fault-rig.ts";
import { processAlive } from "../helpers/process-alive.ts";
import { startSlowFuse, slowFuseSkipReason, type SlowFuse } from "../helpers/slow-fuse.ts";

const skip = slowFuseSkipReason();
let mkfsFigures = { checksMs: 0, answeredMs: 0 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Live (not zombie) mkfs.ext4 processes whose argv names `device`. */
function mkfsOn(device: string): number[] {
  const pids: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/comm`, "utf8").trim() !== "mkfs.ext4") continue;
      if (!readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0").includes(device)) continue;
      if (/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${e}/stat`, "utf8"))) continue;
      pids.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe("a real mkfs on a slow disk is cut short when its call is cancelled", { skip }, () => {
  let rig: FaultRig;
  let c: Clients;
  let fuse: SlowFuse | undefined;
  let loop = "";
  let bdi = "";
  const saved: [string, string][] = [];
  before(async () => {
    rig = await createFaultRig("slow-disk");
    await rig.start();
    c = await rig.clients();
    fuse = await startSlowFuse(path.join(rig.dir, "slow"), { writeDelayUs: 50_000, wrapper: rig.ns.enter, mountinfo: `/proc/${rig.ns.enter[2]}/mountinfo` });
    const image = path.join(fuse.source, "image");
    writeFileSync(image, "");
    execFileSync("truncate", ["-s", "64M", image]);
    execFileSync("sfdisk", ["-q", image], { input: "label: gpt\n,,L\n", stdio: ["pipe", "ignore", "pipe"] });
    loop = rig.exec("losetup", ["--find", "--show", "--partscan", path.join(fuse.mountpoint, "image")]).trim();
    if (!existsSync(`${loop}p1`)) rig.exec("partx", ["-a", loop]);
    for (const t0 = Date.now(); !existsSync(`${loop}p1`) && Date.now() - t0 < 10_000; ) await sleep(20);
    bdi = `/sys/class/bdi/${readFileSync(`/sys/block/${path.basename(loop)}/dev`, "utf8").trim()}`;
    for (const f of ["max_ratio", "strict_limit"]) saved.push([f, readFileSync(`${bdi}/${f}`, "utf8").trim()]);
    writeFileSync(`${bdi}/strict_limit`, "1");
    writeFileSync(`${bdi}/max_bytes`, "4096");
  });
  after(async () => {
    c?.close();
    for (const [f, v] of saved) writeFileSync(`${bdi}/${f}`, v);
    if (loop) {
      for (const t0 = Date.now(); mkfsOn(`${loop}p1`).length && Date.now() - t0 < 20_000; ) await sleep(50);
      try {
        execFileSync("losetup", ["--detach", loop], { stdio: "ignore" });
      } catch {
        // already detached
      }
    }
    fuse?.remove();
    await rig?.close();
  });

  it("cancelled 2 s into mkfs: Canceled; no mkfs 1 s after the answer; a retry meanwhile never overlaps it; the retry formats", async () => {
    const { diskIDs } = await c.disk.listDiskIDs({});
    const found = Object.entries(diskIDs as Record<string, { serialNumber: string }>).find(([, ids]) => ids.serialNumber === path.join(fuse!.mountpoint, "image"));
    assert.ok(found, `disk of ${loop}`);
    const volumeId = (await c.volume.listVolumesOnDisk({ diskNumber: Number(found[0]), partitionNumber: 0 })).volumeIds[0] as string;
    const part = `${loop}p1`;

    // Every mkfs seen, and the most seen alive at once.
    const seen = new Set<number>();
    let most = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const now = mkfsOn(part);
        for (const p of now) seen.add(p);
        most = Math.max(most, now.length);
        await sleep(20);
      }
    })();
    try {
      // Cut 2 s after its mkfs started (a fixed deadline from the call's start would depend on how long
      // the checks before mkfs take, 1–8 s here depending on the load): the client cancels the call.
      const t0 = Date.now();
      const ac = new AbortController();
      const call = c.volume.formatVolume({ volumeId }, { signal: ac.signal, timeoutMs: 120_000 }).then(() => null, (e: unknown) => e);
      let settled = false;
      void call.then(() => (settled = true));
      while (seen.size === 0 && !settled) await sleep(10);
      const mkfsAt = Date.now();
      await sleep(2000);
      ac.abort();
      const err = await call;
      const answeredAt = Date.now();
      assert.equal(codeOf(err), Code.Canceled, `${String(err)} after ${answeredAt - t0} ms`);
      mkfsFigures = { checksMs: mkfsAt - t0, answeredMs: answeredAt - mkfsAt };
      const first = [...seen];
      assert.equal(first.length, 1, `the call's mkfs ran: ${String(err)}; tools: ${rig.faults.calls().slice(-5).join(" | ")}`);

      // A retry at once: it may wait for the disk or be refused, never run beside the first mkfs.
      const retries: unknown[] = [];
      const retry = (async () => {
        for (const r0 = Date.now(); Date.now() - r0 < 120_000; await sleep(200)) {
          const r = await c.volume.formatVolume({ volumeId }, { timeoutMs: 120_000 }).then(() => null, (e: unknown) => e);
          retries.push(r);
          if (r === null || codeOf(r) !== Code.Aborted) return r;
        }
        return "still refused after 120 s";
      })();

      // signal 0 every 10 ms (a /proc scan takes hundreds of ms under load); the daemon reaps its children
      let goneMs = -1;
      while (Date.now() < answeredAt + 1000 && goneMs < 0) {
        if (!processAlive(first[0])) goneMs = Date.now() - answeredAt;
        else await sleep(10);
      }
      assert.ok(goneMs >= 0 && goneMs <= 1000, `mkfs ${first[0]} is gone 1 s after the answer (gone after ${goneMs} ms; -1: still there)`);
      const final = await retry;
      assert.equal(final, null, `the retry formats: ${retries.map(String).join("; ")}`);
      for (const r of retries.slice(0, -1)) assert.equal(codeOf(r), Code.Aborted, String(r));
      assert.equal(most, 1, "never two mkfs on the partition at once");
      assert.equal(seen.size, 2, "one mkfs for the cut call, one for the retry");
      assert.equal((await c.volume.isVolumeFormatted({ volumeId })).formatted, true);
      console.log(`slow disk: mkfs started ${mkfsFigures.checksMs} ms after the call, cancelled 2 s later, answered ${mkfsFigures.answeredMs} ms after mkfs started, first mkfs gone ${goneMs} ms after the answer, retries refused ${retries.length - 1}`);
    } finally {
      watching = false;
      await watcher;
    }
  });
});
