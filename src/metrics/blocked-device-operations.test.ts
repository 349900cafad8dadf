import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { createMountGate, registerMountGate } from "../host/mount-gate.ts";
import { createDeviceGate } from "../host/linux/block/device-gate.ts";
import { registerBlockedDeviceOperations } from "./blocked-device-operations.ts";

describe("csi_proxy_blocked_device_operations", () => {
  it("exports the reads blocked on a disk, per whole disk, from the gates (never as a mount), and nothing once they returned", async () => {
    const gate = registerMountGate(createMountGate({ mountOf: async () => "/", probe: () => new Promise(() => {}), notRespondingAfterMs: 50 }));
    const devices = createDeviceGate(gate, { giveUpAfterMs: 10_000, diskOf: (p) => p.replace(/p?\d+$/, "") });
    let answer = () => {};
    const held = devices.run("/dev/nvme9n1p1", "read", () => new Promise<void>((r) => (answer = r)));
    const registry = new Registry();
    registerBlockedDeviceOperations(registry);
    await new Promise((r) => setTimeout(r, 80));
    assert.match(await registry.metrics(), /^csi_proxy_blocked_device_operations\{device="\/dev\/nvme9n1"\} 1$/m);
    answer();
    await held;
    assert.doesNotMatch(await registry.metrics(), /^csi_proxy_blocked_device_operations\{device="\/dev\/nvme9n1"\}/m);
  });
});
