// csi-proxyctl against the real daemon: one RPC as JSON in and out, codes on failure, status.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { nodeBinary, repoRoot, startDaemonProcess, type DaemonProcess } from "../helpers/daemon-process.ts";

describe("csi-proxyctl", () => {
  let d: DaemonProcess;
  const ctl = (...args: string[]) => spawnSync(nodeBinary, [path.join(repoRoot, "src/cli/ctl.ts"), "-socket-dir", d.socketDir, ...args], { encoding: "utf8" });
  before(async () => {
    d = await startDaemonProcess();
  });
  after(async () => {
    await d.stop();
  });

  it("calls an RPC with a JSON request and prints the JSON response", () => {
    const mk = ctl("filesystem", "Mkdir", JSON.stringify({ path: path.join(d.kubeletDir, "x") }));
    assert.equal(mk.status, 0, mk.stderr);
    const r = ctl("filesystem", "PathExists", JSON.stringify({ path: path.join(d.kubeletDir, "x") }));
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { exists: true });
  });

  it("uses the requested version and reports failures with their gRPC code", () => {
    const r = ctl("-version", "v1beta1", "disk", "DiskStats", '{"diskID":"not-a-number"}');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /^disk v1beta1 DiskStats: InvalidArgument: Failed to format DiskStatsRequest.DiskID with err: strconv.ParseUint/m);
  });

  it("rejects unknown groups, methods and bad JSON with exit 2", () => {
    assert.equal(ctl("nope", "X").status, 2);
    assert.match(ctl("filesystem", "Nope").stderr, /has no method Nope; it has PathExists/);
    assert.equal(ctl("filesystem", "PathExists", "{bad").status, 2);
  });

  it("status lists the 23 endpoints as serving", () => {
    const r = ctl("status");
    assert.equal(r.status, 0);
    assert.equal(r.stdout.trim().split("\n").filter((l) => l.startsWith("serving")).length, 23);
  });
});
