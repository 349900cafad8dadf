// Every module of src/ has a test that imports it directly or runs it (scripts/tests-of.ts lists
// them), or is exempt below with the reason a direct test adds nothing. Convention:
// docs/architecture.md "Tests".
import assert from "node:assert/strict";
import { it } from "node:test";
import { testsByModule } from "./module-tests.ts";

/** Modules without a direct test, each with why that suffices. A stale entry fails the test. */
export const exempt: Record<string, string> = {
  "src/api/adapters.ts": "types only (checked by tsc against every group's adapters)",
  "src/groups/volume/types.ts": "types only",
  "src/boot/v8-flags.ts": "boot-time V8 flags set by src/main.ts, which every daemon test runs",
  "src/boot/thread-pool-size.ts": "boot-time libuv setting imported first by src/main.ts, which every daemon test runs",
  "src/host/gated-filesystem-host.ts": "wraps each filesystem host method in the mount gate's run (mount-gate.test.ts tests the gate); test/redteam/dead-mount.test.ts drives it through the daemon",
  "src/version.ts": "one constant; test/package/ checks the bins print the package version",
  "src/compose/linux.ts": "picked by createServices (src/compose/compose.ts), which every integration test and src/index tests build",
  "src/host/exec/spawn-worker.ts": "starts the PowerShell workers: through PowerShellPool over real pwsh in test/windows-engine/ and over the fake worker in the pool tests; the exe under Wine runs it too",
  "src/host/windows/windows-remove-tree.ts": "reached through WindowsFilesystemHost in src/host/windows/windows-remove-tree.test.ts and wine-deep-delete.test.ts (its only caller); the walk is tested in src/host/tree-walker.test.ts, its operations in src/host/windows/win32-dir-ops.test.ts",
  "src/state/state-subdir.ts": "through the SMB and iSCSI state code in test/redteam/state-dir-links.test.ts and src/state tests",
  "src/win32/io-limiter.ts": "through win32-calls.ts (Win32Calls.io) in test/windows/win32-io.test.ts and win32-calls.test.ts",
  "src/win32-service/pipe-security.ts": "needs Win32 security calls: test/windows/wine-pipe-security.test.ts reads the DACL back from every pipe of the exe",
  "src/rpc/grpc-status-trailers.ts": "through GrpcConnection in test/rpc/*.test.ts",
  "src/rpc/grpc-timeout.ts": "through GrpcConnection in test/rpc/*.test.ts",
  "src/rpc/open-file-limit.ts": "through the connection cap in test/redteam/transport-attacks.test.ts",
  "src/util/rate-bucket.ts": "through GrpcConnection in test/rpc/transport-limits.test.ts and the metrics listener in src/metrics/metrics-server-floods.test.ts",
  "src/in-process/in-process-engine.ts": "under both in-process clients in test/integration/in-process-differential.test.ts and in-process-api.test.ts",
  "src/in-process/index.ts": "re-exports only; test/package/consumer.test.ts imports csi-proxy-ts/in-process from the packed package",
  "src/in-process/strict-message.ts": "through createInProcessApi in test/integration/in-process-api.test.ts (every malformed request case)",
};

it("every src/ module has a direct test or a stated exemption, and no exemption is stale", () => {
  const map = testsByModule();
  const missing = [...map].filter(([m, tests]) => tests.length === 0 && !(m in exempt)).map(([m]) => m);
  assert.deepEqual(missing, [], `modules with no direct test: add <module>.test.ts beside each (or an exemption with its reason)`);
  const stale = Object.keys(exempt).filter((m) => !map.has(m) || map.get(m)!.length > 0);
  assert.deepEqual(stale, [], "exemptions of modules that are gone or now have a direct test: remove them");
});
