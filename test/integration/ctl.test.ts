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

  it("bad JSON and a missing method are one short line each (no usage dump), exit 2", () => {
    const bad = ctl("filesystem", "PathExists", "{bad");
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /^csi-proxyctl: the request is not JSON: .+\n$/);
    const noMethod = ctl("filesystem");
    assert.equal(noMethod.status, 2);
    assert.match(noMethod.stderr, /^csi-proxyctl: missing <Method> for filesystem; it has .*PathExists.*\n$/);
  });

  it("defaults to each group's stable version (v1; the newest non-alpha otherwise), not the newest alpha", () => {
    for (const group of ["filesystem", "disk", "volume", "smb"]) {
      assert.match(ctl(group, "Nope").stderr, new RegExp(`^csi-proxyctl: ${group} v1 has no method Nope`), group);
    }
    // iSCSI has alpha versions only: the newest of them
    assert.match(ctl("iscsi", "Nope").stderr, /^csi-proxyctl: iscsi v1alpha2 has no method Nope/);
  });

  it("prints false booleans (exists: false), not {}", () => {
    const r = ctl("filesystem", "PathExists", JSON.stringify({ path: path.join(d.kubeletDir, "absent") }));
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { exists: false });
  });

  it("answers help, -h, --help and version on stdout with exit 0", () => {
    for (const args of [["help"], ["-h"], ["--help"]]) {
      const r = ctl(...args);
      assert.equal(r.status, 0, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stdout, /Usage: csi-proxyctl \[flags\] <group> <Method>/);
    }
    const v = ctl("version");
    assert.equal(v.status, 0, v.stderr);
    assert.match(v.stdout, /^csi-proxyctl v\d+\.\d+\.\d+\S* \(commit \S+, Node\.js v\d+\.\d+\.\d+\)\n$/);
  });

  it("status lists the 23 endpoints as serving", () => {
    const r = ctl("status");
    assert.equal(r.status, 0);
    assert.equal(r.stdout.trim().split("\n").filter((l) => l.startsWith("serving")).length, 23);
  });
});
