// Every one of the 139 RPCs of the 23 endpoints, called on the real daemon through our typed
// client and through an independent client (Python grpcio) with both :authority forms Go sends.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { lstatSync, readdirSync, readlinkSync, existsSync } from "node:fs";
import * as path from "node:path";
import { fromJson, type DescService, type JsonObject } from "@bufbuild/protobuf";
import { ConnectError, Code as ConnectCode } from "@connectrpc/connect";
import { allEndpoints, catalog } from "../../src/api/catalog.ts";
import { connectGroup } from "../../src/client/connect-group.ts";
import { startDaemonProcess, type DaemonProcess } from "../helpers/daemon-process.ts";
import { matrixEntry, prepareKubeletDir } from "../helpers/rpc-matrix.ts";
import { callAllWithPython, pythonClientUnavailable } from "../helpers/python-client.ts";

/** gRPC code number → the StatusCode name Python prints. */
const codeNames = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"];

function allRequests(kubelet: string): Record<string, unknown> {
  const requests: Record<string, unknown> = {};
  for (const { group, version } of allEndpoints()) {
    const service = (catalog as unknown as Record<string, Record<string, DescService>>)[group][version];
    for (const m of service.methods) requests[`${group}/${version}/${m.name}`] = matrixEntry(group, version, m.name, kubelet).request;
  }
  return requests;
}

/** The filesystem side effects every client run must leave behind. */
function assertFilesystemEffects(kubelet: string) {
  for (const v of ["v1alpha1", "v1beta1", "v1beta2", "v1", "v2alpha1"]) {
    assert.ok(lstatSync(path.join(kubelet, `mk-${v}/a/b`)).isDirectory(), `Mkdir ${v}`);
    assert.ok(!existsSync(path.join(kubelet, `rm-${v}`)), `Rmdir ${v}`);
    assert.equal(readlinkSync(path.join(kubelet, `ln-${v}`)), path.join(kubelet, "src"), `CreateSymlink/LinkPath ${v}`);
  }
  assert.deepEqual(readdirSync(path.join(kubelet, "contents")), [], "RmdirContents");
}

describe("all 139 RPCs on the real daemon", () => {
  let daemon: DaemonProcess;
  before(async () => {
    daemon = await startDaemonProcess({ args: ["-metrics-bind-address", "127.0.0.1:0", "-v", "2"] });
  });
  after(async () => {
    assert.equal(await daemon.stop(), 0, "daemon exit code");
  });

  it("answer the typed client with OK or the expected code, never Unknown/Internal", async () => {
    prepareKubeletDir(daemon.kubeletDir);
    let calls = 0;
    for (const { group, version } of allEndpoints()) {
      const conn = await connectGroup(group, { socketDir: daemon.socketDir, versions: [version] as never });
      assert.equal(conn.version, version);
      const service = (catalog as unknown as Record<string, Record<string, DescService>>)[group][version];
      for (const m of service.methods) {
        const entry = matrixEntry(group, version, m.name, daemon.kubeletDir);
        const request = fromJson(m.input, entry.request as JsonObject);
        let code = "OK", details = "";
        try {
          await (conn.client as Record<string, (r: unknown) => Promise<unknown>>)[m.localName](request);
        } catch (err) {
          const e = ConnectError.from(err);
          code = codeNames[e.code];
          details = e.rawMessage;
          assert.notEqual(e.code, ConnectCode.Unknown);
          assert.notEqual(e.code, ConnectCode.Internal, details);
        }
        assert.ok(entry.expect.includes(code as never), `${group}/${version}/${m.name}: got ${code} (${details}), want one of ${entry.expect.join(", ")}`);
        calls++;
      }
      conn.close();
    }
    assert.equal(calls, 139);
    assertFilesystemEffects(daemon.kubeletDir);
  });

  const unavailable = pythonClientUnavailable();
  for (const authority of ["encoded", "raw", "default"] as const) {
    it(`answer Python grpcio with :authority ${authority}`, { skip: unavailable }, () => {
      prepareKubeletDir(daemon.kubeletDir);
      const results = callAllWithPython(daemon.socketDir, authority, allRequests(daemon.kubeletDir), daemon.root);
      assert.equal(results.length, 139);
      for (const r of results) {
        const entry = matrixEntry(r.group, r.version, r.method, daemon.kubeletDir);
        assert.ok(entry.expect.includes(r.code as never), `${r.group}/${r.version}/${r.method}: got ${r.code} (${r.details}), want one of ${entry.expect.join(", ")}`);
      }
      const exists = results.find((r) => r.group === "filesystem" && r.version === "v1" && r.method === "PathExists");
      assert.deepEqual(exists?.response, { exists: true });
      assertFilesystemEffects(daemon.kubeletDir);
    });
  }

  it("serve go-grpc-prometheus metrics for the calls made", async () => {
    const [, address] = await daemon.waitFor(/Serving metrics on http:\/\/(\S+)\/metrics/);
    const body = await (await fetch(`http://${address}/metrics`)).text();
    assert.match(body, /grpc_server_handling_seconds_bucket\{grpc_method="CreateSymlink",grpc_service="v1.Filesystem",grpc_type="unary",le="0.001"\}/);
    assert.match(body, /grpc_server_handled_total\{grpc_code="OK",grpc_method="PathExists",grpc_service="v1.Filesystem",grpc_type="unary"\} [1-9]/);
    assert.match(body, /grpc_server_handled_total\{grpc_code="\w+",grpc_method="MountVolume",grpc_service="v1.Volume",grpc_type="unary"\} [1-9]/);
    for (const name of ["grpc_server_started_total", "grpc_server_msg_received_total", "grpc_server_msg_sent_total"]) {
      assert.match(body, new RegExp(`# TYPE ${name} counter`));
    }
    assert.match(body, /process_cpu_user_seconds_total/);
    assert.equal((await fetch(`http://${address}/other`)).status, 404);
  });

  it("log one line per RPC with method, code and duration", () => {
    assert.match(daemon.stderr(), /\/v1\.Filesystem\/PathExists code=OK duration=\d+\.\d+ms/);
    assert.match(daemon.stderr(), /\/v1\.Volume\/MountVolume code=\w+ duration=/);
  });
});
