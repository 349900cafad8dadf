// The replay of AzureFile's node calls (smb-driver-model.ts) against the daemon in the SMB stand-in
// namespace: stage twice, publish twice, stats (kubelet-side), expand (unimplemented by the driver),
// unpublish twice, unstage twice, and unstage after a stage that failed halfway (azurefile.test.ts).
import assert from "node:assert/strict";
import { existsSync, lstatSync, mkdirSync, readlinkSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { outcome, type SmbEnv } from "./replay-harness.ts";
import { SmbDriver } from "./smb-driver-model.ts";

export async function replaySmbDriver(env: SmbEnv, name: string, removesMapping = true): Promise<Record<string, string[]>> {
  const proxy = env.proxy({ filesystem: "v1", smb: "v1" });
  const driver = new SmbDriver(proxy, removesMapping);
  const calls: Record<string, string[]> = {};
  const step = async (label: string, p: Promise<unknown>, want = "OK") => {
    const got = await outcome(p);
    calls[label] = proxy.take();
    assert.ok(want === "OK" ? got === "OK" : got.startsWith(want), `${name} ${label}: ${got} (calls ${calls[label].join(", ")})`);
  };
  // the share root: the stand-in tmpfs is empty, so a subdirectory would make the link dangle
  const remote = "\\\\fileserver\\share";
  const staging = path.join(env.kubelet, "plugins", "kubernetes.io", "csi", name, "pv1", "globalmount");
  const publish = path.join(env.kubelet, "pods", "p1", "volumes", "kubernetes.io~csi", "pv1", "mount");

  mkdirSync(staging, { recursive: true }); // kubelet's directory: the driver removes it first (prepareStagePath)
  await step("NodeStage", driver.nodeStage(remote, staging, "vol-1"));
  assert.equal((await env.mounts()).length, 1);
  // (the CIFS stand-in lives in the daemon's mount namespace: the test checks links, not file contents)
  assert.ok(lstatSync(staging).isSymbolicLink());
  await step("NodeStage again", driver.nodeStage(remote, staging, "vol-1"));
  assert.ok(!calls["NodeStage again"].includes("smb.NewSmbGlobalMapping"), "already staged: no new mapping");

  mkdirSync(publish, { recursive: true });
  await step("NodePublish", driver.nodePublish(staging, publish));
  await step("NodePublish again", driver.nodePublish(staging, publish));
  assert.equal(readlinkSync(publish), staging);
  // NodeGetVolumeStats: a local stat (missing path → NotFound) and GetDiskFreeSpaceEx, no csi-proxy call;
  // NodeExpandVolume: Unimplemented. Neither reaches csi-proxy.

  await step("NodeUnpublish", driver.nodeUnpublish(publish));
  await step("NodeUnpublish again", driver.nodeUnpublish(publish));
  assert.ok(!existsSync(publish) && lstatSync(staging).isSymbolicLink(), "unpublish removed the publish link only");

  await step("NodeUnstage", driver.nodeUnstage(staging, "vol-1"));
  if (removesMapping) {
    assert.ok(calls.NodeUnstage.includes("smb.RemoveSmbGlobalMapping"));
    assert.equal((await env.mounts()).length, 0, "last use: mapping removed");
  } else {
    // AzureFile only removes its link; the use is stale from then on and the daemon's sweep (periodic,
    // and on the next call for that share) removes the mapping — upstream keeps it until reboot
    assert.deepEqual(calls.NodeUnstage, ["filesystem.Rmdir"]);
    assert.equal((await env.mounts()).length, 1);
    await proxy.call("smb", "removeSmbGlobalMapping", { remotePath: remote }).catch(() => null); // any call for the root sweeps it
    proxy.take();
    assert.equal((await env.mounts()).length, 0, "stale use swept, mapping removed");
  }
  assert.ok(!existsSync(staging));
  await step("NodeUnstage again", driver.nodeUnstage(staging, "vol-1"));

  // a stage that fails halfway: the mapping cannot be made (a file where the parent directory should be)
  const halfParent = path.join(env.kubelet, "plugins", "kubernetes.io", "csi", name, "pv-half");
  mkdirSync(path.dirname(halfParent), { recursive: true });
  writeFileSync(halfParent, "not a directory");
  const half = path.join(halfParent, "globalmount");
  await step("NodeStage failing halfway", driver.nodeStage(remote, half, "vol-half"), "Internal");
  await step("NodeUnstage after the failed stage", driver.nodeUnstage(half, "vol-half"));
  assert.equal((await env.mounts()).length, 0, "nothing left mapped");
  return calls;
}
