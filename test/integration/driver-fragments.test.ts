// Every row of the driver-fragment table (src/compat/driver-fragments.ts) through the real daemon
// on its Unix sockets: the situation is produced for real, the status code is the row's precise
// one and the message contains the fragment (case-sensitive substring, as democratic-csi's
// `includes` and aws-ebs's regexp test it). Plus the counter-cases docs/driver-compat.md insists on (IsSymlink
// never carries the PathExists fragment, a missing parent never carries the Rmdir one) and the
// idempotent successes of upstream master that need no block device.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { connectGroup } from "../../src/client/connect-group.ts";
import { DRIVER_FRAGMENTS, fragmentRow, type FragmentSituation } from "../../src/compat/driver-fragments.ts";
import { startDaemonProcess, type DaemonProcess } from "../helpers/daemon-process.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../helpers/loop-device.ts";
import type { CodedError } from "../helpers/assert-coded.ts";

const MiB = 1024 * 1024;
const loopSkip = loopDeviceSkipReason();
const canIscsi = process.getuid?.() === 0; // iscsiadm lookups below only read the initiator's database

/** Awaits a rejection; returns its code and message (grpc-js `details`, what clients match on). */
async function failure(p: Promise<unknown>): Promise<{ code: number | undefined; text: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as CodedError;
    return { code: e.code, text: e.rawMessage ?? e.message };
  }
  assert.fail("the call succeeded");
}

async function assertRow(situation: FragmentSituation, p: Promise<unknown>, code = fragmentRow(situation).code) {
  const row = fragmentRow(situation);
  const { code: got, text } = await failure(p);
  assert.equal(got, code, `${situation}: code ${got} (${text})`);
  assert.ok(text.includes(row.fragment), `${situation}: ${JSON.stringify(text)} lacks ${JSON.stringify(row.fragment)}`);
  return text;
}

describe("driver fragments through the daemon (Linux sockets)", () => {
  let d: DaemonProcess;
  let images: string;
  const loops: LoopDevice[] = [];
  const closers: (() => void)[] = [];
  const open = async <G extends Parameters<typeof connectGroup>[0]>(group: G, version: string) => {
    const c = await connectGroup(group, { socketDir: d.socketDir, versions: [version] as never });
    closers.push(() => c.close());
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return c.client as any;
  };
  const covered = new Set<FragmentSituation>();

  before(async () => {
    images = mkdtempSync(path.join(tmpdir(), "csi-frag-"));
    d = await startDaemonProcess({ args: ["-state-dir", path.join(images, "state")] });
  });
  after(async () => {
    for (const c of closers) c();
    for (const l of loops) l.cleanup();
    await d?.stop();
    rmSync(images, { recursive: true, force: true });
    const missing = DRIVER_FRAGMENTS.map((r) => r.situation).filter((s) => !covered.has(s));
    if (!loopSkip && canIscsi) assert.deepEqual(missing, [], "every row of the table has a test here");
  });

  it("path-not-absolute: PathExists and the other validated filesystem RPCs carry it, IsSymlink does not", async () => {
    const fs = await open("filesystem", "v1");
    for (const p of ["relative/dir", "", "C:\\var\\lib\\kubelet\\x"]) {
      await assertRow("path-not-absolute", fs.pathExists({ path: p }));
    }
    await assertRow("path-not-absolute", fs.mkdir({ path: "x" }));
    await assertRow("path-not-absolute", fs.rmdir({ path: "x", force: false }));
    const isSymlink = await failure(fs.isSymlink({ path: "relative/dir" }));
    assert.equal(isSymlink.code, 3);
    assert.ok(!isSymlink.text.includes("not an absolute Windows path"), isSymlink.text);
    // v1beta1 IsMountPoint is IsSymlink too
    const old = await open("filesystem", "v1beta1");
    const mp = await failure(old.isMountPoint({ path: "relative/dir" }));
    assert.ok(!mp.text.includes("not an absolute Windows path"), mp.text);
    covered.add("path-not-absolute");
  });

  it("PathExists of a missing path: exists=false, no error (all versions)", async () => {
    const missing = path.join(d.kubeletDir, "no", "such", "path");
    assert.equal((await (await open("filesystem", "v1")).pathExists({ path: missing })).exists, false);
    assert.equal((await (await open("filesystem", "v1alpha1")).pathExists({ path: missing })).exists, false);
  });

  it("rmdir-missing / rmdir-parent-missing; force=true on a missing path succeeds", async () => {
    const fs = await open("filesystem", "v1");
    const text = await assertRow("rmdir-missing", fs.rmdir({ path: path.join(d.kubeletDir, "gone"), force: false }));
    assert.ok(!text.includes("path specified"));
    const deep = await assertRow("rmdir-parent-missing", fs.rmdir({ path: path.join(d.kubeletDir, "gone", "deeper"), force: false }));
    assert.ok(!deep.includes("The system cannot find the file specified"), deep);
    await fs.rmdir({ path: path.join(d.kubeletDir, "gone"), force: true });
    covered.add("rmdir-missing").add("rmdir-parent-missing");
  });

  it("smb-local-path-exists and smb-no-mapping (no mount reached)", async () => {
    const smb = await open("smb", "v1");
    const occupied = path.join(d.kubeletDir, "occupied");
    mkdirSync(occupied);
    await assertRow("smb-local-path-exists", smb.newSmbGlobalMapping({ remotePath: "\\\\srv\\share\\a", localPath: occupied, username: "u", password: "p" }));
    await assertRow("smb-no-mapping", smb.removeSmbGlobalMapping({ remotePath: "\\\\srv\\never-mapped\\a" }));
    const old = await open("smb", "v1alpha1");
    await assertRow("smb-no-mapping", old.removeSmbGlobalMapping({ remotePath: "\\\\srv\\never-mapped\\a" }));
    covered.add("smb-local-path-exists").add("smb-no-mapping");
  });

  it("iscsi-target-unknown / iscsi-portal-unknown (read-only initiator lookups)", { skip: !canIscsi && "needs root for iscsiadm" }, async () => {
    const iscsi = await open("iscsi", "v1alpha2");
    // 192.0.2.0/24 is TEST-NET-1: never a registered portal.
    const targetPortal = { targetAddress: "192.0.2.77", targetPort: 3260 };
    const iqn = "iqn.2000-01.org.example:never-discovered";
    await assertRow("iscsi-target-unknown", iscsi.getTargetDisks({ targetPortal, iqn }));
    await assertRow("iscsi-target-unknown", iscsi.disconnectTarget({ targetPortal, iqn }));
    await assertRow("iscsi-target-unknown", iscsi.connectTarget({ targetPortal, iqn, authType: 0, chapUsername: "", chapSecret: "" }));
    await assertRow("iscsi-portal-unknown", iscsi.discoverTargetPortal({ targetPortal }));
    await assertRow("iscsi-portal-unknown", iscsi.removeTargetPortal({ targetPortal }));
    covered.add("iscsi-target-unknown").add("iscsi-portal-unknown");
  });

  it("volume-target-path-missing / volume-target-path-not-mounted (aws-ebs's regexp matches both)", async () => {
    const volume = await open("volume", "v1");
    const awsEbs = /(Get-Item -Path \S+).Target, output: , error: <nil>|because it does not exist/;
    const missing = await assertRow("volume-target-path-missing", volume.getVolumeIDFromTargetPath({ targetPath: path.join(d.kubeletDir, "nothing-here") }));
    const plain = path.join(d.kubeletDir, "plain");
    mkdirSync(plain);
    const notMounted = await assertRow("volume-target-path-not-mounted", volume.getVolumeIDFromTargetPath({ targetPath: plain }));
    assert.match(missing, awsEbs);
    assert.match(notMounted, awsEbs);
    // v1beta1 GetVolumeIDFromMount forwards to it: same code and fragment, upstream's forwarder prefix before the same text
    const old = await open("volume", "v1beta1");
    const forwarded = await assertRow("volume-target-path-not-mounted", old.getVolumeIDFromMount({ mount: plain }));
    assert.equal(forwarded, `Forward to GetVolumeIDFromTargetPath failed, err=${notMounted}`);
    assert.match(forwarded, awsEbs);
    covered.add("volume-target-path-missing").add("volume-target-path-not-mounted");
  });

  it("volume-unmount-not-access-path, and master's idempotent MountVolume / ResizeVolume (loop device)", { skip: loopSkip ?? false }, async () => {
    const disk = await open("disk", "v1");
    const volume = await open("volume", "v1");
    const loop = createLoopDevice(images, 64 * MiB, "frag");
    loops.push(loop);
    await disk.partitionDisk({ diskNumber: loop.diskNumber });
    const [volumeId] = (await volume.listVolumesOnDisk({ diskNumber: loop.diskNumber, partitionNumber: 0 })).volumeIds;
    await volume.formatVolume({ volumeId });
    const stage = path.join(d.kubeletDir, "stage");
    mkdirSync(stage);
    await assertRow("volume-unmount-not-access-path", volume.unmountVolume({ volumeId, targetPath: stage }));
    await volume.mountVolume({ volumeId, targetPath: stage });
    await volume.mountVolume({ volumeId, targetPath: stage }); // same volume, same path: success
    await volume.resizeVolume({ volumeId, sizeBytes: 0n }); // already at (almost) full size: success
    // another volume's path: refused (FailedPrecondition), nothing unmounted, the fragment kept
    const other = createLoopDevice(images, 64 * MiB, "frag2");
    loops.push(other);
    await disk.partitionDisk({ diskNumber: other.diskNumber });
    const [otherId] = (await volume.listVolumesOnDisk({ diskNumber: other.diskNumber, partitionNumber: 0 })).volumeIds;
    await assertRow("volume-unmount-not-access-path", volume.unmountVolume({ volumeId: otherId, targetPath: stage }), 9);
    assert.deepEqual(loop.mounts(), [stage]);
    await volume.unmountVolume({ volumeId, targetPath: stage });
    await assertRow("volume-unmount-not-access-path", volume.unmountVolume({ volumeId, targetPath: stage }));
    covered.add("volume-unmount-not-access-path");
  });
});
