import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Code, CsiProxyError } from "../../../errors.ts";
import { blockedHostOperations, createMountGate, DEVICE_KEY_PREFIX, registerMountGate } from "../../mount-gate.ts";
import { createDeviceGate } from "./device-gate.ts";

const never = () => new Promise<never>(() => {});
const codeOf = (e: unknown) => (e instanceof CsiProxyError ? e.code : undefined);

/** A device gate over a real mount gate with short bounds; partitions "sdaN" count against "sda". */
function rig() {
  const gate = registerMountGate(createMountGate({ mountOf: async () => "/", probe: never, perMount: 2, total: 4, notRespondingAfterMs: 200 }));
  const devices = createDeviceGate(gate, { giveUpAfterMs: 300, listingPatienceMs: 50, diskOf: (p) => p.replace(/\d+$/, "") });
  return { gate, devices };
}

describe("device gate", () => {
  it("a disk whose reads hang holds its own slots: partitions count against it, another disk and paths run", async () => {
    const { gate, devices } = rig();
    const hung = [devices.run("/dev/sda1", "read", never), devices.run("/dev/sda2", "read", never)];
    for (const h of hung) h.catch(() => {});
    // Both of sda's slots are taken: another disk and a path still run at once.
    assert.equal(await devices.run("/dev/sdb1", "read", async () => "sdb"), "sdb");
    assert.equal(await gate.run("/var/lib/kubelet/x", async () => "path"), "path");
    // sda's next read waits for a slot; its callers give up after the bound, Unavailable naming the disk.
    await assert.rejects(hung[0], (e) => codeOf(e) === Code.Unavailable && /disk \/dev\/sda is not answering/.test((e as Error).message));
    // The watchdog has marked sda: a later read (a retry) fails at once.
    const t0 = Date.now();
    await assert.rejects(devices.run("/dev/sda", "read", async () => 1), (e) => codeOf(e) === Code.Unavailable && /disk \/dev\/sda is not responding/.test((e as Error).message));
    assert.ok(Date.now() - t0 < 50);
    assert.equal(blockedHostOperations({ devices: true }).get("/dev/sda"), 2, "blocked operations per disk, for the metric");
    assert.equal(blockedHostOperations().has(`${DEVICE_KEY_PREFIX}/dev/sda`), false, "never among the mounts");
  });

  it("a listing across disks skips a disk whose read has gone unanswered, and waits for it no longer than its patience", async () => {
    const { devices } = rig();
    devices.run("/dev/sdc", "read", never).catch(() => {});
    const t0 = Date.now();
    await assert.rejects(devices.run("/dev/sdc1", "table", never, { listing: true }), (e) => codeOf(e) === Code.Unavailable && /has not returned for 0\.1 s/.test((e as Error).message));
    assert.ok(Date.now() - t0 < 150, "given up after the listing's patience");
    await new Promise((r) => setTimeout(r, 60));
    const t1 = Date.now();
    await assert.rejects(devices.run("/dev/sdc1", "table", async () => 1, { listing: true }), (e) => codeOf(e) === Code.Unavailable && /skipped/.test((e as Error).message));
    assert.ok(Date.now() - t1 < 20, "skipped at once");
  });
});
