/**
 * The System group through the real daemon.
 * 1. As this machine is: its DMI (this VM has no /sys/class/dmi at all → FailedPrecondition; a
 *    machine with DMI returns its serial) and its init (not systemd here → FailedPrecondition for
 *    the service RPCs, after the allow-list and name checks).
 * 2. With systemd stood in for: in a private mount namespace, /run is a fresh tmpfs holding
 *    /run/systemd/system (sd_booted()) and /usr/local/sbin holds a `systemctl` that keeps unit
 *    states in a file — the daemon's real Linux host, allow-list, waiting and dependents walk run
 *    against it. A real systemd is not exercised here.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { connectGroup } from "../../src/client/connect-group.ts";
import { fakeSystemctl, isRoot, mountNamespace, startDaemon, type MountNamespace, type RunningDaemon } from "./smb-iscsi-system-fixtures.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";

interface SystemClient {
  getBIOSSerialNumber(r: object): Promise<{ serialNumber: string }>;
  getService(r: { name: string }): Promise<{ displayName: string; startType: number; status: number }>;
  startService(r: { name: string }): Promise<unknown>;
  stopService(r: { name: string; force: boolean }): Promise<unknown>;
}

const hasDmi = await fs.stat("/sys/class/dmi/id/product_serial").then(() => true, () => false);
const systemdIsInit = await fs.stat("/run/systemd/system").then(() => true, () => false);

describe("System group through the daemon", () => {
  let dir: string;
  const daemons: RunningDaemon[] = [];
  const clients: { close(): void }[] = [];
  async function client(socketDir: string): Promise<SystemClient> {
    const c = await connectGroup("system", { socketDir, versions: ["v1alpha1"] });
    clients.push(c);
    return c.client as unknown as SystemClient;
  }
  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "system-int-"));
  });
  after(async () => {
    for (const c of clients) c.close();
    for (const d of daemons) await d.stop();
    await fs.rm(dir, { recursive: true, force: true });
  });

  describe("this machine", () => {
    let system: SystemClient;
    before(async () => {
      const socketDir = path.join(dir, "sock-a");
      daemons.push(await startDaemon(["-socket-dir", socketDir, "-kubelet-path", dir, "-state-dir", path.join(dir, "state"), "-allowed-service", "ssh"]));
      system = await client(socketDir);
    });

    it("GetBIOSSerialNumber reads DMI, or says clearly that there is none", async () => {
      if (!hasDmi) await rejectsWithCode(system.getBIOSSerialNumber({}), 9, /no BIOS serial number \(no SMBIOS\/DMI data\)/);
      else if (isRoot) {
        const { serialNumber } = await system.getBIOSSerialNumber({});
        assert.equal(serialNumber.trim(), (await fs.readFile("/sys/class/dmi/id/product_serial", "utf8")).trim());
      } else await rejectsWithCode(system.getBIOSSerialNumber({}), 7, /product_serial needs root/);
    });

    it("service RPCs: allow-list and names first, then FailedPrecondition where systemd is not the init", { skip: systemdIsInit && "systemd is PID 1 here" }, async () => {
      await rejectsWithCode(system.startService({ name: "cron" }), 7, /not listed in -allowed-service/);
      await rejectsWithCode(system.stopService({ name: "cron", force: true }), 7);
      await rejectsWithCode(system.getService({ name: "../ssh" }), 3, /invalid service name/);
      await rejectsWithCode(system.getService({ name: "ssh" }), 9, /systemd is not running on this machine/);
      await rejectsWithCode(system.startService({ name: "ssh" }), 9, /systemd is not running/);
    });
  });

  describe("systemd stood in for (namespace)", { skip: !isRoot && "needs root for the mount namespace" }, () => {
    let ns: MountNamespace;
    let system: SystemClient;
    let ctl: Awaited<ReturnType<typeof fakeSystemctl>>;
    before(async () => {
      const fakeBin = path.join(dir, "fakebin");
      await fs.mkdir(fakeBin);
      ctl = await fakeSystemctl(fakeBin, {
        ssh: { active: "active", file: "enabled", desc: "OpenBSD Secure Shell server", requiredBy: ["sshguard"] },
        sshguard: { active: "active", file: "enabled", desc: "Protects hosts from brute-force attacks" },
        cron: { active: "inactive", file: "disabled", desc: "Regular background program processing daemon" },
      });
      ns = await mountNamespace(`mount -t tmpfs tmpfs /run\nmkdir -p /run/systemd/system\nmount --bind ${fakeBin} /usr/local/sbin`);
      const socketDir = path.join(dir, "sock-b");
      daemons.push(
        await startDaemon(["-socket-dir", socketDir, "-kubelet-path", dir, "-state-dir", path.join(dir, "state"), "-allowed-service", "cron", "-allowed-service", "ssh.service"], {
          wrapper: ns.enter,
        }),
      );
      system = await client(socketDir);
    });
    after(async () => {
      for (const c of clients.splice(0)) c.close();
      for (const d of daemons.splice(0)) await d.stop();
      await ns?.close();
    });

    it("GetService maps systemd's states (any service, allow-listed or not)", async () => {
      const ssh = await system.getService({ name: "sshguard" });
      assert.deepEqual([ssh.displayName, ssh.startType, ssh.status], ["Protects hosts from brute-force attacks", 2, 4]);
      const cron = await system.getService({ name: "cron" });
      assert.deepEqual([cron.startType, cron.status], [3, 1]);
      await rejectsWithCode(system.getService({ name: "nope" }), 5, /failed to get service nope. error: failed to query service nope: not found/);
    });

    it("StartService on an allowed service starts it and is idempotent", async () => {
      await system.startService({ name: "cron" });
      assert.equal((await ctl.units()).cron.active, "active");
      await system.startService({ name: "cron" });
      assert.equal((await ctl.argv()).filter((a) => a[0] === "start").length, 1);
      assert.deepEqual((await ctl.argv()).find((a) => a[0] === "start"), ["start", "--", "cron.service"]);
    });

    it("StopService: dependents block without force; with force they must be allowed too", async () => {
      await rejectsWithCode(system.stopService({ name: "ssh", force: false }), 9, /running dependent services \(sshguard\)/);
      await rejectsWithCode(system.stopService({ name: "ssh", force: true }), 7, /dependent service sshguard, which is not listed/);
      await rejectsWithCode(system.stopService({ name: "sshguard", force: false }), 7);
      assert.equal((await ctl.units()).ssh.active, "active");
      await system.stopService({ name: "cron", force: false });
      assert.equal((await ctl.units()).cron.active, "inactive");
      await system.stopService({ name: "cron", force: false });
    });
  });
});
