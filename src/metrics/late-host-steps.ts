import { Gauge, type Registry } from "prom-client";
import { runningLateStepsByDevice } from "../host/exec/late-steps.ts";

/**
 * `csi_proxy_late_host_steps{device="/dev/…"}`: host steps still running after their call was
 * answered (a must-finish step past its call's deadline or bound, a tool SIGKILL did not end), per
 * device, read at each render of the exposition. Each keeps its device locked until it ends; a
 * series exists only while its device has one.
 */
export function registerLateHostSteps(registry: Registry, read: () => Map<string, number> = runningLateStepsByDevice): Gauge<"device"> {
  return new Gauge({
    name: "csi_proxy_late_host_steps",
    help: "Host steps still running after their call was answered, per device (the device stays locked until they end).",
    labelNames: ["device"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [device, n] of read()) this.set({ device }, n);
    },
  });
}
