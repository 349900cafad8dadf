/**
 * The in-process loops of a write's checks look at the call's signal (util/call-scope.ts) at bounded
 * intervals: the opener scan between slices, the mount-namespace walk between tables, the exclusive
 * claim between attempts. An aborted call stops there with the signal's code, saying nothing was changed.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { scanDeviceOpeners, type OpenerScanStats } from "./device-openers.ts";
import { createNamespaceMounts } from "../mounts/namespace-mounts.ts";
import { createDeviceClaims } from "./device-claims.ts";
import { runInCall } from "../../../util/call-scope.ts";
import { Code } from "../../../errors.ts";
import { rejectsWithCode } from "../../../../test/helpers/assert-coded.ts";
import { createLoopDevice, loopDeviceSkipReason } from "../../../../test/helpers/loop-device.ts";

/** A /proc-shaped tree of `n` processes, each with `fds` descriptors on /etc/hostname and a mount namespace of its own. */
function fakeProc(n: number, fds: number): string {
  const proc = mkdtempSync(path.join(tmpdir(), "csi-proxy-abort-proc-"));
  for (let pid = 1; pid <= n; pid++) {
    const dir = path.join(proc, String(pid));
    mkdirSync(path.join(dir, "fd"), { recursive: true });
    mkdirSync(path.join(dir, "ns"));
    symlinkSync(`mnt:[${1000 + pid}]`, path.join(dir, "ns", "mnt"));
    writeFileSync(path.join(dir, "mountinfo"), `20 1 7:3 / /mnt/p${pid} rw - ext4 /dev/x rw\n`);
    writeFileSync(path.join(dir, "maps"), "");
    for (let i = 0; i < fds; i++) symlinkSync("/etc/hostname", path.join(dir, "fd", String(i)));
  }
  return proc;
}

test("the opener scan of a call aborted while it runs stops at its next slice: Cancelled, not every process looked at", async () => {
  const proc = fakeProc(200, 5);
  try {
    const controller = new AbortController();
    const stats: OpenerScanStats = { processes: 0, descriptors: 0, stats: 0, skipped: 0 };
    const scan = runInCall({ signal: controller.signal }, () => scanDeviceOpeners([{ major: 7, minor: 0 }], { procRoot: proc }, stats));
    controller.abort();
    await rejectsWithCode(scan, Code.Canceled, /^cancelled: stopped before the rest of the scan for processes holding the device nodes; nothing was changed$/);
    assert.ok(stats.processes < 200, `stopped early: ${stats.processes} of 200 processes looked at`);
    // The same scan outside any call runs to its end.
    assert.deepEqual(await scanDeviceOpeners([{ major: 7, minor: 0 }], { procRoot: proc }), []);
  } finally {
    rmSync(proc, { recursive: true, force: true });
  }
});

test("the mount-namespace walk of an aborted call reads no table: Cancelled (DeadlineExceeded for a timeout)", async () => {
  const proc = fakeProc(40, 0);
  try {
    const nm = createNamespaceMounts({ procRoot: proc, ids: async () => null });
    await rejectsWithCode(runInCall({ signal: AbortSignal.abort() }, () => nm.mountsOf(7, 3)), Code.Canceled, /stopped before reading the rest of the mount namespaces' tables; nothing was changed/);
    const timedOut = AbortSignal.timeout(0);
    await new Promise((r) => setTimeout(r, 20));
    await rejectsWithCode(runInCall({ signal: timedOut }, () => nm.mountsOf(7, 3)), Code.DeadlineExceeded, /^deadline exceeded: stopped before/);
    // Outside a call the walk reads every namespace (and the failed walks left no state behind).
    assert.equal((await nm.mountsOf(7, 3)).length, 40);
  } finally {
    rmSync(proc, { recursive: true, force: true });
  }
});

const loopSkip = loopDeviceSkipReason() ?? false;

test("the exclusive claim of an aborted call stops retrying a busy device: Cancelled, not the 0.5 s of retries ending in 'in use'", { skip: loopSkip }, async () => {
  const dir = mkdtempSync("/var/tmp/csi-abort-claim-");
  const loop = createLoopDevice(dir, 8 * 1024 * 1024, "claim");
  const held = openSync(loop.device, constants.O_RDONLY | constants.O_EXCL);
  try {
    const claims = createDeviceClaims();
    // Not aborted: the retries end in FailedPrecondition (the device is held).
    await rejectsWithCode(claims.claimExclusive(loop.device, loop), Code.FailedPrecondition, /is in use/);
    const controller = new AbortController();
    const claim = runInCall({ signal: controller.signal }, () => claims.claimExclusive(loop.device, loop));
    setTimeout(() => controller.abort(), 120);
    await rejectsWithCode(claim, Code.Canceled, new RegExp(`^cancelled: stopped before claiming ${loop.device} exclusively; nothing was changed$`));
  } finally {
    closeSync(held);
    loop.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
});
