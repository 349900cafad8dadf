import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code } from "../../errors.ts";
import { FakeSystemHost } from "../../../test/doubles/fake-system-host.ts";
import { createSystemService } from "./system-service.ts";
import { ServiceStatus, StartType } from "./types.ts";
import { rejectsWithCsiProxyError } from "../../../test/helpers/assert-coded.ts";

const setup = (allowedServices: string[] = [], platform: "linux" | "win32" = "linux", host = new FakeSystemHost()) => ({
  host,
  system: createSystemService({ host, platform, allowedServices, pollIntervalMs: 1, waitTimeoutMs: 50 }),
});

describe("GetBIOSSerialNumber", () => {
  it("returns the trimmed serial; no SMBIOS → FailedPrecondition; empty → NotFound", async () => {
    const { host, system } = setup();
    host.biosSerial = "  VMware-42 1a 2b  \n";
    assert.deepEqual(await system.getBIOSSerialNumber(), { serialNumber: "VMware-42 1a 2b" });
    host.biosSerial = null;
    await rejectsWithCsiProxyError(system.getBIOSSerialNumber(), Code.FailedPrecondition, /no SMBIOS\/DMI data/);
    host.biosSerial = " \n";
    await rejectsWithCsiProxyError(system.getBIOSSerialNumber(), Code.NotFound, "the BIOS serial number is empty");
  });
});

describe("GetService", () => {
  it("reports the service, is not restricted by the allow-list, and is NotFound (upstream text) when unknown", async () => {
    const { host, system } = setup([]);
    host.addService("ssh", { displayName: "OpenSSH server", startType: StartType.Automatic, status: ServiceStatus.Running });
    assert.deepEqual(await system.getService({ name: "ssh" }), { displayName: "OpenSSH server", startType: StartType.Automatic, status: ServiceStatus.Running });
    await rejectsWithCsiProxyError(system.getService({ name: "nope" }), Code.NotFound, "failed to get service nope. error: failed to query service nope: not found");
  });
});

describe("service names (InvalidArgument before anything else)", () => {
  const hostile = ["", "../etc/passwd", "a/b", "a\\b", "x;reboot", "$(id)", "`id`", "a b", "a|b", "a&b", "%PATH%", "a\nb", "a\0b", "-h", "--help",
    "ssh\u2215x", "ｓｓｈ", "a".repeat(100_000), "'quoted'", '"dq"'];
  for (const platform of ["linux", "win32"] as const) {
    it(`${platform}: rejects hostile names for every RPC`, async () => {
      const { host, system } = setup(["*"], platform);
      for (const name of hostile) {
        if (platform === "win32" && ["x;reboot", "$(id)", "a b", "a|b", "a&b", "%PATH%", "-h", "--help", "ssh\u2215x", "ｓｓｈ"].includes(name)) continue; // legal SCM names: data only
        await rejectsWithCsiProxyError(system.getService({ name }), Code.InvalidArgument, name === "" ? "service name is required" : /invalid service name/);
        await rejectsWithCsiProxyError(system.startService({ name }), Code.InvalidArgument);
        await rejectsWithCsiProxyError(system.stopService({ name, force: true }), Code.InvalidArgument);
      }
      assert.deepEqual(host.calls, []);
    });
  }
  it("win32: names SCM accepts are looked up as data (NotFound), never interpreted", async () => {
    const { host, system } = setup(["*"], "win32");
    for (const name of ["x;reboot", "$(id)", "a|b", "%PATH%", "-h"]) await rejectsWithCsiProxyError(system.getService({ name }), Code.NotFound);
    assert.ok(host.calls.includes("getService $(id)"));
  });
  it("linux: systemd names with @, dots and a .service suffix are accepted", async () => {
    const { host, system } = setup();
    host.addService("getty@tty1.service");
    await system.getService({ name: "getty@tty1.service" });
  });
});

describe("StartService / StopService allow-list", () => {
  it("empty allow-list: PermissionDenied before any lookup", async () => {
    const { host, system } = setup([]);
    host.addService("ssh");
    await rejectsWithCsiProxyError(system.startService({ name: "ssh" }), Code.PermissionDenied, /starting service ssh is not allowed: it is not listed in -allowed-service/);
    await rejectsWithCsiProxyError(system.stopService({ name: "ssh", force: false }), Code.PermissionDenied, /stopping service ssh/);
    assert.deepEqual(host.calls, []);
  });
  it("only listed services; * allows any; .service suffix (linux) and case (win32) do not matter", async () => {
    const linux = setup(["ssh.service"]);
    linux.host.addService("ssh").addService("cron");
    await linux.system.startService({ name: "ssh" });
    await rejectsWithCsiProxyError(linux.system.startService({ name: "cron" }), Code.PermissionDenied);
    const win = setup(["MSiSCSI"], "win32");
    win.host.addService("msiscsi");
    await win.system.startService({ name: "msiscsi" });
    const any = setup(["*"]);
    any.host.addService("cron");
    await any.system.startService({ name: "cron" });
  });
});

describe("StartService", () => {
  it("starts, waits until Running, and is a no-op when already running", async () => {
    const { host, system } = setup(["svc"]);
    host.addService("svc", { pendingPolls: 3 });
    await system.startService({ name: "svc" });
    assert.equal(host.services.get("svc")!.status, ServiceStatus.Running);
    host.calls.length = 0;
    await system.startService({ name: "svc" });
    assert.deepEqual(host.calls, ["getService svc"]);
  });
  it("times out with upstream's text when the service never runs; unknown → NotFound", async () => {
    const { host, system } = setup(["*"]);
    host.addService("slow", { pendingPolls: Infinity });
    await rejectsWithCsiProxyError(system.startService({ name: "slow" }), Code.DeadlineExceeded, "timed out waiting for service slow to become running");
    await rejectsWithCsiProxyError(system.startService({ name: "ghost" }), Code.NotFound);
  });
});

describe("StopService", () => {
  const tree = () => {
    const host = new FakeSystemHost()
      .addService("base", { status: ServiceStatus.Running, dependents: ["mid", "idle"] })
      .addService("mid", { status: ServiceStatus.Running, dependents: ["top"] })
      .addService("top", { status: ServiceStatus.Running })
      .addService("idle", { status: ServiceStatus.Stopped });
    return host;
  };

  it("no-op when stopped; stops and waits otherwise", async () => {
    const { host, system } = setup(["*"], "linux", tree());
    await system.stopService({ name: "idle", force: false });
    assert.ok(!host.calls.some((c) => c.startsWith("stopService")));
    await system.stopService({ name: "top", force: false });
    assert.equal(host.services.get("top")!.status, ServiceStatus.Stopped);
  });

  it("running dependents: FailedPrecondition without force; with force stopped deepest first", async () => {
    const { host, system } = setup(["*"], "linux", tree());
    await rejectsWithCsiProxyError(system.stopService({ name: "base", force: false }), Code.FailedPrecondition, /running dependent services \(mid, top\)/);
    assert.equal(host.services.get("base")!.status, ServiceStatus.Running);
    await system.stopService({ name: "base", force: true });
    assert.deepEqual(host.calls.filter((c) => c.startsWith("stopService")), ["stopService top", "stopService mid", "stopService base"]);
    for (const name of ["base", "mid", "top"]) assert.equal(host.services.get(name)!.status, ServiceStatus.Stopped);
  });

  it("force needs every running dependent on the allow-list", async () => {
    const { host, system } = setup(["base", "mid"], "linux", tree());
    await rejectsWithCsiProxyError(system.stopService({ name: "base", force: true }), Code.PermissionDenied, /dependent service top, which is not listed/);
    assert.ok(!host.calls.some((c) => c.startsWith("stopService")));
  });
});

describe("an aborted call stops waiting for a service and starts no further step", () => {
  const slowSetup = (host: FakeSystemHost) => createSystemService({ host, platform: "linux", allowedServices: ["*"], pollIntervalMs: 5, waitTimeoutMs: 10_000 });

  it("StartService: Cancelled once aborted while the service is still starting, saying the start was asked for; no poll after", async () => {
    const host = new FakeSystemHost().addService("slow", { pendingPolls: Infinity });
    const system = slowSetup(host);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await rejectsWithCsiProxyError(
      system.startService({ name: "slow" }, { signal: controller.signal }),
      Code.Canceled,
      /^cancelled: stopped before waiting for service slow to become running; service slow was asked to start and may still be starting$/,
    );
    const polls = host.calls.length;
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(host.calls.length, polls, "nothing polled after the answer");
  });

  it("StopService(force): aborted while a dependent is stopping, the service itself is never asked to stop; the answer names what was stopped", async () => {
    const host = new FakeSystemHost()
      .addService("base", { status: ServiceStatus.Running, dependents: ["mid"] })
      .addService("mid", { status: ServiceStatus.Running, dependents: ["top"], pendingPolls: Infinity })
      .addService("top", { status: ServiceStatus.Running });
    const system = slowSetup(host);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await rejectsWithCsiProxyError(
      system.stopService({ name: "base", force: true }, { signal: controller.signal }),
      Code.Canceled,
      /^cancelled: stopped before waiting for service mid to become stopped; dependent services top were stopped; service mid was asked to stop and may still be stopping$/,
    );
    assert.deepEqual(host.calls.filter((c) => c.startsWith("stopService")), ["stopService top", "stopService mid"]);
    assert.equal(host.services.get("base")!.status, ServiceStatus.Running);
  });
});
