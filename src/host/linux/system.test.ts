/**
 * LinuxSystemHost: DMI from a fake and from this machine's sysfs, systemd through a recording
 * `systemctl` (this machine's PID 1 is not systemd) with a fake sd_booted() marker, and the real
 * "no systemd" refusal.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { Code, CsiProxyError } from "../../errors.ts";
import { ServiceStatus, StartType } from "../../groups/system/types.ts";
import { LinuxSystemHost, startTypeOf, statusOf } from "./system.ts";
import { recordingProgram, type RecordingProgram } from "../../../test/integration/smb-iscsi-system-fixtures.ts";

let dir: string;
let systemctl: RecordingProgram;
let marker: string;
before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "linux-system-"));
  systemctl = await recordingProgram(dir, "systemctl");
  marker = path.join(dir, "run-systemd-system");
  await fs.mkdir(marker);
});
after(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe("LinuxSystemHost BIOS serial", () => {
  it("reads product_serial; no DMI directory → null", async () => {
    const dmi = path.join(dir, "dmi");
    await fs.mkdir(dmi);
    await fs.writeFile(path.join(dmi, "product_serial"), "VMware-42 1a 2b 3c\n");
    assert.equal(await new LinuxSystemHost({ dmiDir: dmi }).getBIOSSerialNumber(), "VMware-42 1a 2b 3c\n");
    assert.equal(await new LinuxSystemHost({ dmiDir: path.join(dir, "no-dmi") }).getBIOSSerialNumber(), null);
  });
  it("this machine's DMI: a string, or null where sysfs has no dmi/id (this test VM)", async () => {
    const serial = await new LinuxSystemHost().getBIOSSerialNumber();
    const exists = await fs.stat("/sys/class/dmi/id").then(() => true, () => false);
    if (exists) assert.equal(typeof serial, "string");
    else assert.equal(serial, null);
  });
});

describe("LinuxSystemHost services through systemctl", () => {
  const host = () => new LinuxSystemHost({ systemctl: systemctl.path, systemdMarker: marker });

  it("maps systemd states", () => {
    assert.equal(statusOf("active"), ServiceStatus.Running);
    assert.equal(statusOf("failed"), ServiceStatus.Stopped);
    assert.equal(statusOf("activating"), ServiceStatus.StartPending);
    assert.equal(statusOf("deactivating"), ServiceStatus.StopPending);
    assert.equal(statusOf("maintenance"), ServiceStatus.Unknown);
    assert.equal(startTypeOf("enabled"), StartType.Automatic);
    assert.equal(startTypeOf("masked-runtime"), StartType.Disabled);
    assert.equal(startTypeOf("static"), StartType.Manual);
    assert.equal(startTypeOf("disabled"), StartType.Manual);
  });

  it("show / start / stop / dependents argv, with `--` before the unit", async () => {
    await systemctl.behave({ stdout: "LoadState=loaded\nActiveState=active\nUnitFileState=enabled\nDescription=OpenBSD Secure Shell server\n" });
    assert.deepEqual(await host().getService("ssh"), { displayName: "OpenBSD Secure Shell server", startType: StartType.Automatic, status: ServiceStatus.Running });
    assert.deepEqual((await systemctl.invocations()).at(-1)!.argv, ["show", "--property=LoadState,ActiveState,UnitFileState,Description", "--", "ssh.service"]);
    await systemctl.behave({ stdout: "LoadState=not-found\nActiveState=inactive\n" });
    assert.equal(await host().getService("ghost.service"), null);
    await systemctl.behave({});
    await host().startService("getty@tty1");
    assert.deepEqual((await systemctl.invocations()).at(-1)!.argv, ["start", "--", "getty@tty1.service"]);
    await host().stopService("ssh.service");
    assert.deepEqual((await systemctl.invocations()).at(-1)!.argv, ["stop", "--", "ssh.service"]);
    await systemctl.behave({ stdout: "RequiredBy=a.service b.socket\nBoundBy=c.service a.service\n" });
    assert.deepEqual(await host().getDependentServices("ssh"), ["a", "c"]);
  });

  it("maps systemctl failures", async () => {
    await systemctl.behave({ stderr: "Job for x.service failed because the control process exited with error code.\n", exitCode: 1 });
    await assert.rejects(host().startService("x"), (e: CsiProxyError) => e.code === Code.FailedPrecondition);
    await systemctl.behave({ stderr: "Failed to start x.service: Access denied\n", exitCode: 4 });
    await assert.rejects(host().startService("x"), (e: CsiProxyError) => e.code === Code.PermissionDenied);
    await systemctl.behave({ stderr: "Failed to stop x.service: Unit x.service not loaded.\n", exitCode: 5 });
    await assert.rejects(host().stopService("x"), (e: CsiProxyError) => e.code === Code.NotFound);
  });

  it("without systemd as init: FailedPrecondition for every service call, systemctl never run", async () => {
    const before = (await systemctl.invocations()).length;
    const h = new LinuxSystemHost({ systemctl: systemctl.path, systemdMarker: path.join(dir, "absent") });
    for (const call of [() => h.getService("ssh"), () => h.startService("ssh"), () => h.stopService("ssh"), () => h.getDependentServices("ssh")]) {
      await assert.rejects(call(), (e: CsiProxyError) => e.code === Code.FailedPrecondition && /systemd is not running on this machine/.test(e.message));
    }
    assert.equal((await systemctl.invocations()).length, before);
  });
});
