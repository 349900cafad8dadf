// csi-proxy as an in-process library (the HostProcess-container use): the group services without
// pipes, sockets or gRPC, with the same validation and coded errors.
import { it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createServices, CsiProxyError, Code } from "../../src/index.ts";

it("createServices() gives working group services and opens no endpoint", async () => {
  const root = mkdtempSync(path.join(tmpdir(), "csi-proxy-lib-"));
  const kubelet = path.join(root, "kubelet");
  const socketDir = path.join(root, "sockets");
  try {
    const services = await createServices({
      platform: "linux", kubeletPath: kubelet, workingDirs: [], socketDir, requirePrivacy: true,
      defaultFsType: "ext4", stateDir: path.join(root, "state"), allowedServices: [],
    });
    await services.filesystem.mkdir({ path: path.join(kubelet, "pods/a") });
    assert.ok(statSync(path.join(kubelet, "pods/a")).isDirectory());
    assert.deepEqual(await services.filesystem.pathExists({ path: path.join(kubelet, "pods/a") }), { exists: true });
    await assert.rejects(services.filesystem.mkdir({ path: path.join(root, "outside") }), (e: CsiProxyError) => e.code === Code.PermissionDenied);
    await assert.rejects(services.system.startService({ name: "ssh" }), (e: CsiProxyError) => e.code === Code.PermissionDenied);
    assert.ok(!readdirSync(root).includes("sockets"), "no endpoint opened");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
