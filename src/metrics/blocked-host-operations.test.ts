import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { registerBlockedHostOperations } from "./blocked-host-operations.ts";

describe("csi_proxy_blocked_host_operations", () => {
  it("exports the blocked operations per mount at each scrape, and nothing once they returned", async () => {
    const registry = new Registry();
    let now = new Map([["/var/lib/kubelet/pods/x/volumes/nfs", 3]]);
    registerBlockedHostOperations(registry, () => now);
    assert.match(await registry.metrics(), /^csi_proxy_blocked_host_operations\{mount="\/var\/lib\/kubelet\/pods\/x\/volumes\/nfs"\} 3$/m);
    now = new Map();
    assert.doesNotMatch(await registry.metrics(), /^csi_proxy_blocked_host_operations\{/m);
  });
});
