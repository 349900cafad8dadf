// A path on a hung filesystem (a FUSE daemon stopped with SIGSTOP, standing in for a hung SMB mapping
// or a dead device) must hold only the calls that touch it: other calls, on the same endpoint and on
// others, keep answering, and the hung calls answer once the filesystem does.
// More hung calls than libuv's default pool (4 threads) are survived: PathExists on a path the
// kernel has cached needs no pool thread at all, and the pool is larger (src/boot/thread-pool-size.ts).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import * as path from "node:path";
import { startDaemonProcess, type DaemonProcess } from "../helpers/daemon-process.ts";
import { startStoppableFuse, fuseSkipReason, type StoppableFuse } from "../helpers/stoppable-fuse.ts";
import { connectGroup } from "../../src/client/connect-group.ts";

type Fs = Awaited<ReturnType<typeof connectGroup<"filesystem", "v1">>>;

/** Resolves with the call's answer, or rejects when it takes longer than `ms`. */
const within = <T>(ms: number, what: string, p: Promise<T>) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms).unref())]);

describe("a hung mount under the kubelet dir", { skip: fuseSkipReason() }, () => {
  let daemon: DaemonProcess;
  let fuse: StoppableFuse | undefined;
  let fs: Fs;
  let normal: string;
  before(async () => {
    daemon = await startDaemonProcess();
    normal = path.join(daemon.kubeletDir, "pods", "volume");
    mkdirSync(normal, { recursive: true });
    fuse = await startStoppableFuse(path.join(daemon.kubeletDir, "hung"));
    fs = await connectGroup("filesystem", { socketDir: daemon.socketDir, versions: ["v1"] });
    // The daemon has seen the new mount table and the normal path once (both now cached).
    assert.equal((await fs.client.pathExists({ path: normal })).exists, true);
  });
  after(async () => {
    fuse?.remove();
    fs?.close();
    await daemon?.stop();
  });

  it("holds only the calls on it: the same endpoint and others keep answering, the held calls answer after", async () => {
    fuse!.stop();
    const held = ["a", "b"].map((n) => fs.client.pathExists({ path: path.join(fuse!.mountpoint, n) }));
    let settled = 0;
    for (const h of held) void h.then(() => settled++, () => settled++);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(settled, 0, "the calls on the stopped filesystem are waiting for it");

    const volume = await connectGroup("volume", { socketDir: daemon.socketDir, versions: ["v1"] });
    try {
      for (let i = 0; i < 20; i++) assert.equal((await within(2000, "PathExists", fs.client.pathExists({ path: normal }))).exists, true);
      // Calls that need the host thread pool (lstat, mkdir, realpath of the parent) still get a thread.
      assert.equal((await within(2000, "IsSymlink", fs.client.isSymlink({ path: normal }))).isSymlink, false);
      await within(2000, "Mkdir", fs.client.mkdir({ path: path.join(daemon.kubeletDir, "pods", "new") }));
      await within(2000, "volume GetVolumeStats", volume.client.getVolumeStats({ volumeId: "no-such-volume" }).catch((e: Error) => e));
    } finally {
      volume.close();
    }
    assert.equal(settled, 0, "still waiting while the filesystem is stopped");

    fuse!.resume();
    const answers = await within(10_000, "held calls after resume", Promise.all(held));
    assert.deepEqual(answers.map((a) => a.exists), [false, false]);
  });

  it("more hung calls than libuv's default pool of 4 threads leave the other calls answering", async () => {
    fuse!.stop();
    const held = Array.from({ length: 8 }, (_, i) => fs.client.pathExists({ path: path.join(fuse!.mountpoint, `pool-${i}`) }));
    await new Promise((r) => setTimeout(r, 300));
    // Answered from the kernel's caches, without the pool:
    for (let i = 0; i < 20; i++) assert.equal((await within(2000, "PathExists", fs.client.pathExists({ path: normal }))).exists, true);
    // Calls that need a pool thread (src/boot/thread-pool-size.ts):
    assert.equal((await within(2000, "IsSymlink", fs.client.isSymlink({ path: normal }))).isSymlink, false);
    await within(2000, "Mkdir", fs.client.mkdir({ path: path.join(daemon.kubeletDir, "pods", "pool") }));
    fuse!.resume();
    const answers = await within(10_000, "held calls after resume", Promise.all(held));
    assert.ok(answers.every((a) => !a.exists));
  });
});
