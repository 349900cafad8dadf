import { Gauge, type Registry } from "prom-client";
import { blockedHostOperations } from "../host/mount-gate.ts";

/**
 * `csi_proxy_blocked_device_operations{device="/dev/<disk>"}`: block reads (partition tables, libblkid
 * probes) that have run longer than the not-responding threshold, per whole disk
 * (src/host/linux/block/device-gate.ts), read at each render of the exposition. A series exists only while
 * its disk has one. Each is a libuv thread held until the device answers; bounded per disk and, with
 * the path operations, in all by the mount gate (src/host/mount-gate.ts).
 */
export function registerBlockedDeviceOperations(registry: Registry, read: () => Map<string, number> = () => blockedHostOperations({ devices: true })): Gauge<"device"> {
  return new Gauge({
    name: "csi_proxy_blocked_device_operations",
    help: "Block device reads blocked longer than the not-responding threshold, per whole disk.",
    labelNames: ["device"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [device, n] of read()) this.set({ device }, n);
    },
  });
}
