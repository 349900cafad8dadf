// Replay of csi-driver-smb (kubernetes-csi/csi-driver-smb)'s Windows node calls against the daemon through the
// SMB stand-in (a tmpfs mounted where CIFS would be), from the driver's code (csi-driver-smb-model.ts cites
// file:line): the v1 mounter with its file-kept reference count across a driver restart, the codes it answers
// kubelet with (prepare-path failures reach kubelet as Unknown), and the v1beta1 mounter it falls back to
// when csi-proxy serves no v1 endpoints.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { outcome, smbSkipReason, startSmbEnv, type SmbEnv } from "./replay-harness.ts";
import { CsiDriverSmb } from "./csi-driver-smb-model.ts";

const skip = smbSkipReason();

describe("csi-driver-smb replay (from the driver's code)", { skip: skip ?? false }, () => {
  let env: SmbEnv;
  let refBase: string;
  before(async () => {
    env = await startSmbEnv("csi-driver-smb");
    refBase = mkdtempSync(path.join(tmpdir(), "csi-replay-smb-refs-"));
  });
  after(async () => {
    await env?.stop();
    if (refBase) rmSync(refBase, { recursive: true, force: true });
  });

  const remote = "\\\\fileserver\\share"; // the stand-in tmpfs is empty: a subdirectory would make the link dangle
  const paths = (name: string) => ({
    staging: path.join(env.kubelet, "plugins", "kubernetes.io", "csi", "smb.csi.k8s.io", name, "globalmount"),
    publish: path.join(env.kubelet, "pods", `p-${name}`, "volumes", "kubernetes.io~csi", name, "mount"),
  });

  it("v1: stage, publish, unpublish; two volumes of one share; after a driver restart the file-kept count removes the mapping with the last volume", async () => {
    let driver = await CsiDriverSmb.start(env, refBase);
    assert.equal(driver.version, "v1");
    const step = async (label: string, p: Promise<unknown>, want: string, calls: string[]) => {
      assert.equal(await outcome(p), want, label);
      assert.deepEqual(driver.proxy.take(), calls, `${label}: calls`);
    };
    const a = paths("pv-a"), b = paths("pv-b");
    mkdirSync(a.staging, { recursive: true }); // kubelet's directory: prepareStagePath removes it
    await step("NodeStage a", driver.nodeStage(remote, a.staging, "vol-a"), "OK", [
      "filesystem.PathExists", "filesystem.IsSymlink", // ensureMountPoint
      "filesystem.PathExists", "filesystem.Rmdir", // prepareStagePath
      "filesystem.PathExists", "smb.NewSmbGlobalMapping", // SMBMount: parent exists
    ]);
    assert.ok(lstatSync(a.staging).isSymbolicLink());
    assert.equal(await env.remoteOfLink(readlinkSync(a.staging)), remote, "os.Readlink gives the remote path");
    await step("NodeStage a again", driver.nodeStage(remote, a.staging, "vol-a"), "OK", ["filesystem.PathExists", "filesystem.IsSymlink"]);

    mkdirSync(a.publish, { recursive: true });
    await step("NodePublish a", driver.nodePublish(a.staging, a.publish), "OK", ["filesystem.PathExists", "filesystem.IsSymlink", "filesystem.PathExists", "filesystem.Rmdir", "filesystem.CreateSymlink"]);
    await step("NodePublish a again", driver.nodePublish(a.staging, a.publish), "OK", ["filesystem.PathExists", "filesystem.IsSymlink"]);
    assert.equal(readlinkSync(a.publish), a.staging);

    // a second volume of the same share: a second reference file, the same mapping
    await step("NodeStage b", driver.nodeStage(remote, b.staging, "vol-b"), "OK", [
      "filesystem.PathExists", "filesystem.PathExists", "filesystem.PathExists", "filesystem.Mkdir", "smb.NewSmbGlobalMapping", // staging missing; its parent created
    ]);
    assert.equal(readdirSync(driver.refDir("\\\\fileserver\\share")).length, 2);
    assert.equal((await env.mounts()).length, 1);

    await step("NodeUnpublish a", driver.nodeUnpublish(a.publish), "OK", ["filesystem.Rmdir"]);
    await step("NodeUnpublish a again", driver.nodeUnpublish(a.publish), "OK", ["filesystem.Rmdir"]);

    // the driver restarts: its in-memory state is gone, the reference files are not
    driver.proxy.close();
    driver = await CsiDriverSmb.start(env, refBase);
    await step("NodeUnstage a (one reference left)", driver.nodeUnstage(a.staging, "vol-a"), "OK", ["filesystem.Rmdir"]);
    assert.equal((await env.mounts()).length, 1, "b still uses the share");
    await step("NodeUnstage b (count 0: RemoveSmbGlobalMapping)", driver.nodeUnstage(b.staging, "vol-b"), "OK", ["smb.RemoveSmbGlobalMapping", "filesystem.Rmdir"]);
    // The driver removes the mapping before its link (safe_mounter_windows.go:155-170): csi-proxy then still
    // sees b's link, drops a's stale use as the released one and keeps the mapping for b; b's link goes
    // right after, and the sweep (the next call for the share, or within 5 minutes) removes the mapping.
    // Upstream removes it at once (Remove-SmbGlobalMapping -Force). docs/driver-compat.md.
    assert.equal((await env.mounts()).length, 1, "kept until the sweep");
    await driver.proxy.call("smb", "removeSmbGlobalMapping", { remotePath: remote }).catch(() => null); // any call for the share sweeps
    driver.proxy.take();
    assert.equal((await env.mounts()).length, 0, "swept: mapping removed");
    assert.ok(!existsSync(a.staging) && !existsSync(b.staging));
    // again: the link is gone, Readlink fails (only logged), Rmdir of a missing path is OK
    await step("NodeUnstage b again", driver.nodeUnstage(b.staging, "vol-b"), "OK", ["filesystem.Rmdir"]);
    driver.proxy.close();
  });

  it("the codes it answers: a prepare-path failure reaches kubelet as Unknown (a plain Go error), a failed mapping as Internal", async () => {
    const driver = await CsiDriverSmb.start(env, refBase);
    // preparePublishPath's Rmdir refused (the kubelet directory itself): not a status error → Unknown
    const got = await outcome(driver.nodePublish(paths("pv-c").staging, env.kubelet));
    assert.match(got, new RegExp(`^Unknown: prepare publish failed for ${env.kubelet.replace(/[.]/g, "\\.")} with error: rpc error: code = \\w+ desc = `));
    // the mapping cannot be made (a file where the parent directory should be): Internal from mountWithTimeout
    const parent = path.join(env.kubelet, "plugins", "kubernetes.io", "csi", "smb.csi.k8s.io", "pv-half");
    mkdirSync(path.dirname(parent), { recursive: true });
    (await import("node:fs")).writeFileSync(parent, "not a directory");
    const half = path.join(parent, "globalmount");
    assert.match(await outcome(driver.nodeStage(remote, half, "vol-half")), /^Internal: volume\(vol-half\) mount ".*" on ".*" failed with /);
    assert.equal((await env.mounts()).length, 0, "nothing left mapped");
    assert.equal(existsSync(driver.refDir("\\\\fileserver\\share")) ? readdirSync(driver.refDir("\\\\fileserver\\share")).length : 0, 0, "no reference counted");
    driver.proxy.close();
  });

  it("v1beta1 when csi-proxy serves no v1 endpoints: IsMountPoint, LinkPath, Rmdir with a context; unstage never removes the mapping", async () => {
    for (const group of ["filesystem", "smb"]) unlinkSync(path.join(env.socketDir, `csi-proxy-${group}-v1.sock`)); // an older csi-proxy
    const driver = await CsiDriverSmb.start(env, refBase);
    assert.equal(driver.version, "v1beta1");
    const step = async (label: string, p: Promise<unknown>, want: string, calls: string[]) => {
      assert.equal(await outcome(p), want, label);
      assert.deepEqual(driver.proxy.take(), calls, `${label}: calls`);
    };
    const d = paths("pv-d");
    mkdirSync(d.staging, { recursive: true });
    await step("NodeStage", driver.nodeStage(remote, d.staging, "vol-d"), "OK", [
      "filesystem.PathExists", "filesystem.IsMountPoint", "filesystem.PathExists", "filesystem.Rmdir", "filesystem.PathExists", "smb.NewSmbGlobalMapping",
    ]);
    await step("NodeStage again", driver.nodeStage(remote, d.staging, "vol-d"), "OK", ["filesystem.PathExists", "filesystem.IsMountPoint"]);
    mkdirSync(d.publish, { recursive: true });
    await step("NodePublish", driver.nodePublish(d.staging, d.publish), "OK", ["filesystem.PathExists", "filesystem.IsMountPoint", "filesystem.PathExists", "filesystem.Rmdir", "filesystem.LinkPath"]);
    assert.equal(readlinkSync(d.publish), d.staging);
    await step("NodeUnpublish", driver.nodeUnpublish(d.publish), "OK", ["filesystem.Rmdir"]);
    await step("NodeUnstage", driver.nodeUnstage(d.staging, "vol-d"), "OK", ["filesystem.Rmdir"]);
    assert.equal((await env.mounts()).length, 1, "v1beta1's SMBUnmount leaves the global mapping (safe_mounter_v1beta_windows.go:96-101)");
    driver.proxy.close();
  });
});
