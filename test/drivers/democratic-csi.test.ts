// Replay of democratic-csi's csi-proxy node paths (src/utils/csi_proxy_client.js and the csi-proxy
// branches of src/driver/index.js; filesystem v1, smb v1, volume v1, iscsi v1alpha2) against the
// daemon through the SMB stand-in. Its branches are text matches on grpc-js `details` (String
// includes); the model below repeats each one, so the test proves the client takes the same branch
// against us as against the csi-proxy its author used (PowerShell era). iSCSI logins cannot run
// here (no iscsi_tcp): the iSCSI unstage is replayed for a target the initiator does not know —
// exactly the "already gone" and "stage failed halfway" cases its matches exist for.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import * as path from "node:path";
import { CsiError, outcome, ProxyError, smbSkipReason, startSmbEnv, type Proxy, type SmbEnv } from "./replay-harness.ts";

const skip = smbSkipReason();
const includes = (e: unknown, text: string) => e instanceof ProxyError && e.details.includes(text);

class DemocraticCsi {
  readonly proxy: Proxy;
  /** Which branch each text match took, in order. */
  readonly branches: string[] = [];
  constructor(proxy: Proxy) {
    this.proxy = proxy;
  }
  async pathExists(p: string): Promise<boolean> {
    try {
      return ((await this.proxy.call("filesystem", "pathExists", { path: p })) as { exists: boolean }).exists;
    } catch (e) {
      if (includes(e, "not an absolute Windows path")) {
        this.branches.push("PathExists: not absolute → absent");
        return false;
      }
      throw e;
    }
  }
  async isSymlink(p: string): Promise<boolean> {
    try {
      return ((await this.proxy.call("filesystem", "isSymlink", { path: p })) as { isSymlink: boolean }).isSymlink;
    } catch (e) {
      if (includes(e, "not an absolute Windows path")) {
        this.branches.push("IsSymlink: not absolute → false");
        return false;
      }
      throw e;
    }
  }
  /** removePath: Rmdir without force; "cannot find the file" = already gone. */
  async removePath(p: string): Promise<void> {
    try {
      await this.proxy.call("filesystem", "rmdir", { path: p });
    } catch (e) {
      if (!includes(e, "The system cannot find the file specified")) throw e;
      this.branches.push("Rmdir: already gone");
    }
  }
  async nodeStageSmb(remote: string, staging: string): Promise<void> {
    try {
      await this.proxy.call("smb", "newSmbGlobalMapping", { remotePath: remote, localPath: staging, username: "u", password: "p" });
    } catch (e) {
      if (!includes(e, "ResourceExists")) throw new CsiError("Internal", (e as Error).message);
      this.branches.push("NewSmbGlobalMapping: ResourceExists → IsSymlink");
      if (!(await this.isSymlink(staging))) throw new CsiError("Internal", (e as Error).message);
    }
  }
  async nodePublish(staging: string, target: string): Promise<void> {
    if ((await this.pathExists(target)) && (await this.isSymlink(target))) return;
    if (await this.pathExists(target)) await this.removePath(target);
    await this.proxy.call("filesystem", "createSymlink", { sourcePath: staging, targetPath: target });
  }
  async nodeUnpublish(target: string): Promise<void> {
    await this.removePath(target);
  }
  async nodeUnstageSmb(remote: string, staging: string): Promise<void> {
    try {
      await this.proxy.call("smb", "removeSmbGlobalMapping", { remotePath: remote });
    } catch (e) {
      if (!includes(e, "No MSFT_SmbGlobalMapping objects found")) throw new CsiError("Internal", (e as Error).message);
      this.branches.push("RemoveSmbGlobalMapping: already unmapped");
    }
    await this.removePath(staging).catch((e) => {
      throw new CsiError("Internal", (e as Error).message);
    });
  }
  async nodeGetVolumeStats(p: string): Promise<void> {
    if (!(await this.pathExists(p))) throw new CsiError("NotFound", `volume_path ${p} is not currently mounted`);
  }
  /** getDiskNumberFromIscsiTarget: "ObjectNotFound" = no disk. */
  async diskOfTarget(targetPortal: object, iqn: string): Promise<string | null> {
    try {
      const { diskIDs } = (await this.proxy.call("iscsi", "getTargetDisks", { targetPortal, iqn })) as { diskIDs: string[] };
      return diskIDs[0] ?? null;
    } catch (e) {
      if (!includes(e, "ObjectNotFound")) throw e;
      this.branches.push("GetTargetDisks: ObjectNotFound → no disk");
      return null;
    }
  }
  async nodeUnstageIscsi(targetPortal: object, iqn: string, staging: string): Promise<void> {
    try {
      const disk = await this.diskOfTarget(targetPortal, iqn);
      if (disk !== null) throw new Error("a disk was found for a target that was never connected");
      try {
        await this.proxy.call("iscsi", "disconnectTarget", { targetPortal, iqn });
      } catch (e) {
        if (!includes(e, "ObjectNotFound")) throw e;
        this.branches.push("DisconnectTarget: ObjectNotFound → ignored");
      }
      await this.removePath(staging);
    } catch (e) {
      throw e instanceof CsiError ? e : new CsiError("Internal", (e as Error).message);
    }
  }
}

describe("democratic-csi (csi-proxy client) replay", { skip: skip ?? false }, () => {
  let env: SmbEnv;
  before(async () => {
    env = await startSmbEnv("democratic");
  });
  after(async () => {
    await env?.stop();
  });

  it("SMB: stage/publish/stats/unpublish/unstage, each twice, every text branch as against upstream", async () => {
    const proxy = env.proxy({ filesystem: "v1", smb: "v1", volume: "v1", iscsi: "v1alpha2" });
    const d = new DemocraticCsi(proxy);
    const step = async (label: string, p: Promise<unknown>, want = "OK") => {
      const got = await outcome(p);
      proxy.take();
      assert.ok(want === "OK" ? got === "OK" : got.startsWith(want), `${label}: ${got}`);
    };
    const remote = "\\\\nas\\share";
    const staging = path.join(env.kubelet, "plugins", "org.democratic-csi.smb", "pv1", "globalmount");
    const publish = path.join(env.kubelet, "pods", "p1", "volumes", "kubernetes.io~csi", "pv1", "mount");
    mkdirSync(path.dirname(staging), { recursive: true });

    await step("NodeStage", d.nodeStageSmb(remote, staging));
    await step("NodeStage again", d.nodeStageSmb(remote, staging)); // master-style success: the same link already there
    // a kubelet-made directory where the link must go: ResourceExists → IsSymlink false → throws (as upstream)
    const plain = path.join(env.kubelet, "plugins", "org.democratic-csi.smb", "plain");
    mkdirSync(plain);
    await step("NodeStage over a plain directory", d.nodeStageSmb(remote, plain), "Internal");
    assert.deepEqual(d.branches.splice(0), ["NewSmbGlobalMapping: ResourceExists → IsSymlink"]);

    mkdirSync(publish, { recursive: true });
    await step("NodePublish", d.nodePublish(staging, publish));
    await step("NodePublish again", d.nodePublish(staging, publish));
    await step("NodeGetVolumeStats", d.nodeGetVolumeStats(publish));
    await step("NodeGetVolumeStats missing path", d.nodeGetVolumeStats(path.join(env.kubelet, "pods", "gone")), "NotFound");
    // kubelet's Windows form of a path (no drive on Linux): "not an absolute Windows path" → absent, not a throw
    await step("NodeGetVolumeStats relative path", d.nodeGetVolumeStats("var\\lib\\kubelet\\pods\\x"), "NotFound");
    assert.deepEqual(d.branches.splice(0), ["PathExists: not absolute → absent"]);
    // NodeExpandVolume for SMB does not reach csi-proxy

    await step("NodeUnpublish", d.nodeUnpublish(publish));
    await step("NodeUnpublish again", d.nodeUnpublish(publish));
    assert.deepEqual(d.branches.splice(0), ["Rmdir: already gone"]);
    await step("NodeUnstage", d.nodeUnstageSmb(remote, staging));
    assert.equal((await env.mounts()).length, 0);
    await step("NodeUnstage again", d.nodeUnstageSmb(remote, staging));
    assert.deepEqual(d.branches.splice(0), ["RemoveSmbGlobalMapping: already unmapped", "Rmdir: already gone"]);
    // unstage after a stage that failed before anything was mapped or linked
    await step("NodeUnstage after a failed stage", d.nodeUnstageSmb("\\\\nas\\other", path.join(env.kubelet, "plugins", "org.democratic-csi.smb", "pv-half", "globalmount")), "Internal");
    // (the parent is missing too: upstream says "…cannot find the path specified." — not matched, so
    // democratic-csi throws against upstream as against us)
    assert.deepEqual(d.branches.splice(0), ["RemoveSmbGlobalMapping: already unmapped"]);
  });

  it("iSCSI: unstage of a target the initiator does not know (never connected / already gone), twice", { skip: process.getuid?.() !== 0 && "needs root for iscsiadm" }, async () => {
    const proxy = env.proxy({ filesystem: "v1", iscsi: "v1alpha2", volume: "v1" });
    const d = new DemocraticCsi(proxy);
    const portal = { targetAddress: "192.0.2.10", targetPort: 3260 };
    const staging = path.join(env.kubelet, "plugins", "org.democratic-csi.iscsi", "pv1", "globalmount");
    mkdirSync(staging, { recursive: true });
    assert.equal(await outcome(d.nodeUnstageIscsi(portal, "iqn.2000-01.org.example:gone", staging)), "OK");
    assert.equal(await outcome(d.nodeUnstageIscsi(portal, "iqn.2000-01.org.example:gone", staging)), "OK");
    assert.deepEqual(d.branches, [
      "GetTargetDisks: ObjectNotFound → no disk",
      "DisconnectTarget: ObjectNotFound → ignored",
      "GetTargetDisks: ObjectNotFound → no disk",
      "DisconnectTarget: ObjectNotFound → ignored",
      "Rmdir: already gone",
    ]);
  });
});
