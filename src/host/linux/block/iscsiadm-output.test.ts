/** iscsiadm's output lines, the `-p` argument, and its exit codes as gRPC codes (no iscsiadm run). */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { Code, CsiProxyError } from "../../../errors.ts";
import { HostCommandError } from "../../exec/run-command.ts";
import { iscsiadmError, parseDiscoveredTargets, parseDiscoveryRecords, portalArg } from "./iscsiadm-output.ts";

const IQN = "iqn.2024-01.com.example:storage.lun1";

describe("iscsiadm output parsing", () => {
  it("discovery records (IPv4, host name, unbracketed IPv6)", () => {
    assert.deepEqual(parseDiscoveryRecords("127.0.0.1:3260 via sendtargets\nsan.example:3261 via sendtargets\n::1:3260 via sendtargets\nfoo via isns\n"), [
      { targetAddress: "127.0.0.1", targetPort: 3260 },
      { targetAddress: "san.example", targetPort: 3261 },
      { targetAddress: "::1", targetPort: 3260 },
    ]);
  });
  it("discovered targets, de-duplicated across portal groups", () => {
    assert.deepEqual(parseDiscoveredTargets(`127.0.0.1:3260,1 ${IQN}\n[::1]:3260,1 ${IQN}\n10.0.0.6:3260,2 iqn.2024-01.x:b\n`), [IQN, "iqn.2024-01.x:b"]);
  });
  it("portal arguments", () => {
    assert.equal(portalArg({ targetAddress: "10.0.0.5", targetPort: 3260 }), "10.0.0.5:3260");
    assert.equal(portalArg({ targetAddress: "fd00::5", targetPort: 3260 }), "[fd00::5]:3260");
  });
});

describe("iscsiadm exit codes", () => {
  const failed = (exitCode: number) => new HostCommandError(`iscsiadm failed with exit status ${exitCode}`, "iscsiadm", { exitCode });

  it("the iscsid hint says whether the iscsi_tcp module is loaded", async (t) => {
    const sysDir = await fs.mkdtemp(path.join(os.tmpdir(), "iscsiadm-output-"));
    t.after(() => fs.rm(sysDir, { recursive: true, force: true }));
    const before = await iscsiadmError(failed(20), "discover", sysDir);
    assert.equal(before.code, Code.FailedPrecondition);
    assert.match(before.message, /^discover: iscsid is not reachable: start iscsid \(it needs the iscsi_tcp kernel module, which is not loaded\): /);
    await fs.mkdir(path.join(sysDir, "module", "iscsi_tcp"), { recursive: true });
    await fs.writeFile(path.join(sysDir, "module", "iscsi_tcp", "initstate"), "live\n");
    const after = await iscsiadmError(failed(18), "discover", sysDir);
    assert.match(after.message, /^discover: iscsid is not reachable: start iscsid: /);
  });

  it("known exit codes get their gRPC code; others keep the command's; a non-command error passes through", async () => {
    const cases: [number, Code][] = [[21, Code.NotFound], [13, Code.PermissionDenied], [15, Code.AlreadyExists], [7, Code.InvalidArgument], [11, Code.FailedPrecondition], [6, Code.FailedPrecondition]];
    for (const [exitCode, code] of cases) assert.equal((await iscsiadmError(failed(exitCode), "x", "/nonexistent")).code, code, `exit ${exitCode}`);
    const timedOut = new HostCommandError("iscsiadm timed out", "iscsiadm", { exitCode: null, timedOut: true });
    assert.equal((await iscsiadmError(timedOut, "log in", "/nonexistent")).code, Code.DeadlineExceeded);
    const other = new CsiProxyError(Code.Aborted, "aborted");
    assert.equal((await iscsiadmError(other, "x", "/nonexistent")).code, Code.Aborted);
  });
});
