// Replay of NetApp Trident's Windows SMB node paths (utils/mount/mount_windows.go over filesystem v1
// + smb v1; core/node mount.go/detach.go) against the daemon through the SMB stand-in.
// Model: MountSMBPath (PathExists → Rmdir(force) of what is there, parent PathExists → Mkdir,
// NewSmbGlobalMapping), publish = IsLikelyNotMountPoint (PathExists + IsSymlink) then
// WindowsBindMount (Rmdir(force) + CreateSymlink), unpublish = Rmdir(force), unstage =
// UmountSMBPath (Rmdir(force) then RemoveSmbGlobalMapping) driven by Trident's own tracking file
// (no tracking file → nothing to do). Every error becomes a failed node call.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { CsiError, outcome, smbSkipReason, startSmbEnv, type Proxy, type SmbEnv } from "./replay-harness.ts";

const skip = smbSkipReason();

class Trident {
  readonly proxy: Proxy;
  /** Trident's volume tracking files (staging path → share). */
  readonly tracking = new Map<string, string>();
  constructor(proxy: Proxy) {
    this.proxy = proxy;
  }
  exists = async (p: string) => ((await this.proxy.call("filesystem", "pathExists", { path: p })) as { exists: boolean }).exists;
  rmdir = (p: string) => this.proxy.call("filesystem", "rmdir", { path: p, force: true });
  fail = (e: unknown) => {
    throw new CsiError("Internal", (e as Error).message);
  };

  async nodeStage(share: string, staging: string) {
    try {
      if (await this.exists(staging)) await this.rmdir(staging);
      const parent = path.dirname(staging);
      if (!(await this.exists(parent))) await this.proxy.call("filesystem", "mkdir", { path: parent });
      await this.proxy.call("smb", "newSmbGlobalMapping", { remotePath: share, localPath: staging, username: "svc", password: "pw" });
      this.tracking.set(staging, share);
    } catch (e) {
      this.fail(e);
    }
  }
  async nodePublish(staging: string, target: string) {
    try {
      if ((await this.exists(target)) && ((await this.proxy.call("filesystem", "isSymlink", { path: target })) as { isSymlink: boolean }).isSymlink) return;
      await this.rmdir(target);
      await this.proxy.call("filesystem", "createSymlink", { sourcePath: staging, targetPath: target });
    } catch (e) {
      this.fail(e);
    }
  }
  async nodeUnpublish(target: string) {
    await this.rmdir(target).catch(this.fail);
  }
  async nodeUnstage(staging: string) {
    const share = this.tracking.get(staging);
    if (share === undefined) return; // no tracking information: already unstaged
    this.tracking.delete(staging); // deleted whatever the unmount's outcome (detach.go)
    try {
      await this.rmdir(staging);
      await this.proxy.call("smb", "removeSmbGlobalMapping", { remotePath: share });
    } catch (e) {
      this.fail(e);
    }
  }
}

describe("NetApp Trident (SMB) replay", { skip: skip ?? false }, () => {
  let env: SmbEnv;
  before(async () => {
    env = await startSmbEnv("trident");
  });
  after(async () => {
    await env?.stop();
  });

  it("stage/publish/unpublish/unstage, each twice, and unstage after a stage that failed halfway", async () => {
    const proxy = env.proxy({ filesystem: "v1", smb: "v1" });
    const t = new Trident(proxy);
    const step = async (label: string, p: Promise<unknown>, want = "OK") => {
      const got = await outcome(p);
      const calls = proxy.take();
      assert.ok(want === "OK" ? got === "OK" : got.startsWith(want), `${label}: ${got} (${calls.join(", ")})`);
      return calls;
    };
    const share = "\\\\ontap-svm\\trident_pvc_1";
    const staging = path.join(env.kubelet, "plugins", "kubernetes.io", "csi", "csi.trident.netapp.io", "pv1", "globalmount");
    const publish = path.join(env.kubelet, "pods", "p1", "volumes", "kubernetes.io~csi", "pv1", "mount");

    mkdirSync(staging, { recursive: true });
    await step("NodeStage", t.nodeStage(share, staging));
    // re-stage: the link is removed and made again, the healthy mapping reused and counted once
    const again = await step("NodeStage again", t.nodeStage(share, staging));
    assert.deepEqual(again, ["filesystem.PathExists", "filesystem.Rmdir", "filesystem.PathExists", "smb.NewSmbGlobalMapping"]);
    assert.equal((await env.mounts()).length, 1);
    mkdirSync(publish, { recursive: true });
    await step("NodePublish", t.nodePublish(staging, publish));
    const pub2 = await step("NodePublish again", t.nodePublish(staging, publish));
    assert.deepEqual(pub2, ["filesystem.PathExists", "filesystem.IsSymlink"], "already published");
    await step("NodeUnpublish", t.nodeUnpublish(publish));
    await step("NodeUnpublish again", t.nodeUnpublish(publish));
    await step("NodeUnstage", t.nodeUnstage(staging));
    assert.equal((await env.mounts()).length, 0);
    assert.deepEqual(await step("NodeUnstage again", t.nodeUnstage(staging)), []);

    // halfway: the mapping fails (a file where the parent directory must be); tracking is written only on success
    const halfParent = path.join(env.kubelet, "plugins", "kubernetes.io", "csi", "csi.trident.netapp.io", "half");
    mkdirSync(path.dirname(halfParent), { recursive: true });
    writeFileSync(halfParent, "x");
    await step("NodeStage failing halfway", t.nodeStage(share, path.join(halfParent, "globalmount")), "Internal");
    await step("NodeUnstage after the failed stage", t.nodeUnstage(path.join(halfParent, "globalmount")));
    assert.equal((await env.mounts()).length, 0);

    // an unstage whose mapping is already gone answers the fragment-carrying NotFound (upstream: "not found" too)
    const err = await proxy.call("smb", "removeSmbGlobalMapping", { remotePath: share }).catch((e) => e);
    assert.match(String(err.message), /No MSFT_SmbGlobalMapping objects found/);
  });
});
