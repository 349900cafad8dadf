import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { registerLateHostSteps } from "./late-host-steps.ts";
import { noteLateStep } from "../host/exec/late-steps.ts";

describe("csi_proxy_late_host_steps", () => {
  it("exports the steps still running after their call per device, and nothing once they ended", async () => {
    const registry = new Registry();
    registerLateHostSteps(registry);
    const end = noteLateStep({ device: "/dev/loop-metric", command: "resize2fs /dev/loop-metric", pid: 42, answeredAt: new Date() });
    assert.match(await registry.metrics(), /^csi_proxy_late_host_steps\{device="\/dev\/loop-metric"\} 1$/m);
    end("exit status 0", true);
    assert.doesNotMatch(await registry.metrics(), /^csi_proxy_late_host_steps\{device="\/dev\/loop-metric"\}/m);
  });
});
