import { Gauge, type Registry } from "prom-client";
import { blockedHostOperations } from "../host/mount-gate.ts";

/**
 * `csi_proxy_blocked_host_operations{mount="<mount point>"}`: host operations on request paths that
 * have run longer than the mount gate's not-responding threshold (src/host/mount-gate.ts), per
 * mount, read at each render of the exposition (at most once a second). A series exists only while
 * its mount has one (none on a healthy node).
 * Each is a libuv thread held until the filesystem answers; bounded per mount and in all by the gate.
 */
export function registerBlockedHostOperations(registry: Registry, read: () => Map<string, number> = blockedHostOperations): Gauge<"mount"> {
  return new Gauge({
    name: "csi_proxy_blocked_host_operations",
    help: "Host operations on request paths blocked longer than the not-responding threshold, per mount point.",
    labelNames: ["mount"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [mount, n] of read()) this.set({ mount }, n);
    },
  });
}
