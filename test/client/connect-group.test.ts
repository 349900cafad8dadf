// The typed client negotiates: the newest version the server serves among those the caller accepts.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { ConnectError, Code } from "@connectrpc/connect";
import { connectGroup } from "../../src/client/connect-group.ts";
import { guardedObserver } from "../helpers/internal-guard.ts";
import { serveEndpoints, type ServingEndpoints } from "../../src/rpc/serve-endpoints.ts";
import { socketPath } from "../../src/api/endpoint.ts";
import { catalog } from "../../src/api/catalog.ts";
import { filesystemAdapters } from "../../src/groups/filesystem/adapters.ts";
import { notFound } from "../../src/errors.ts";
import type { FilesystemService } from "../../src/groups/filesystem/types.ts";

const service = {
  pathExists: async ({ path: p }: { path: string }) => ({ exists: p === "/yes" }),
  isSymlink: async () => {
    throw notFound("no such path");
  },
} as unknown as FilesystemService;

describe("connectGroup()", () => {
  let dir: string, serving: ServingEndpoints;
  const guard = guardedObserver();
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-client-"));
    serving = await serveEndpoints(
      (["v1beta1", "v1"] as const).map((version) => ({
        group: "filesystem",
        version,
        address: socketPath(dir, "filesystem", version),
        service: catalog.filesystem[version],
        handlers: filesystemAdapters[version](service) as never,
      })),
      { observer: guard },
    );
  });
  after(async () => {
    await serving.stop();
    guard.check();
    rmSync(dir, { recursive: true, force: true });
  });

  it("picks the newest served version (v2alpha1 is not served here)", async () => {
    const fs = await connectGroup("filesystem", { socketDir: dir });
    assert.equal(fs.version, "v1");
    assert.equal(fs.address, socketPath(dir, "filesystem", "v1"));
    if (fs.version === "v1") assert.equal((await fs.client.pathExists({ path: "/yes" })).exists, true);
    fs.close();
  });

  it("respects the accepted versions and speaks the old one's messages", async () => {
    const fs = await connectGroup("filesystem", { socketDir: dir, versions: ["v1alpha1", "v1beta1"] });
    assert.equal(fs.version, "v1beta1");
    const res = await fs.client.pathExists({ path: "/yes" });
    assert.equal(res.$typeName, "v1beta1.PathExistsResponse");
    assert.equal(res.exists, true);
    fs.close();
  });

  it("reports the server's gRPC code and message", async () => {
    const fs = await connectGroup("filesystem", { socketDir: dir, versions: ["v1"] });
    await assert.rejects(fs.client.isSymlink({ path: "/x" }), (e) => ConnectError.from(e).code === Code.NotFound && /no such path/.test(ConnectError.from(e).rawMessage));
    fs.close();
  });

  it("fails clearly when no accepted version is served", async () => {
    await assert.rejects(connectGroup("filesystem", { socketDir: dir, versions: ["v2alpha1"] }), /no acceptable version is served \(tried .*filesystem-v2alpha1\.sock\)/);
    await assert.rejects(connectGroup("disk", { socketDir: dir }), /disk: no acceptable version/);
  });
});
