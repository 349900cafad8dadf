/**
 * The SMB/iSCSI/System worker script on pwsh (byte-identical, real PowerShellPool), driven by the
 * real WindowsSmbHost, WindowsIscsiHost and WindowsSystemHost over the stand-ins: 0, 1 and 2
 * mappings, portals and BIOS rows; the associations a target's disks are found through; a Windows
 * error raised by New-SmbGlobalMapping (CimException-shaped, `Windows System Error 1326`) mapped to
 * PermissionDenied with the password removed from the text; CHAP arguments typed as the signature
 * table says.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createEngine, engineSkipReason, STORAGE, type WorldInstance } from "./engine.ts";
import { WindowsSmbHost } from "../../src/host/windows/smb.ts";
import { WindowsIscsiHost } from "../../src/host/windows/iscsi.ts";
import { WindowsSystemHost } from "../../src/host/windows/system.ts";
import { Code } from "../../src/errors.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";

const skip = engineSkipReason();
const SMB = "root/Microsoft/Windows/SMB";
const mapping = (i: number): WorldInstance => ({ id: `m${i}`, ns: SMB, class: "MSFT_SmbGlobalMapping", props: { RemotePath: `\\\\server\\share${i}`, LocalPath: "", Status: i === 0 ? 0 : 2 } });
const portal = (i: number): WorldInstance => ({ id: `portal${i}`, ns: STORAGE, class: "MSFT_iSCSITargetPortal", props: { TargetPortalAddress: `192.0.2.${i + 1}`, TargetPortalPortNumber: 3260 + i } });
const bios = (serial: string | null): WorldInstance => ({ id: "bios", ns: "root/cimv2", class: "CIM_BIOSElement", props: { SerialNumber: serial } });

describe("SMB/iSCSI/System worker script on pwsh", { skip }, () => {
  const engine = createEngine();
  const pool = engine.pool({ smb: true });
  const smb = new WindowsSmbHost(pool, { createSymbolicLink: async () => {} });
  const iscsi = new WindowsIscsiHost(pool);
  const system = new WindowsSystemHost(pool, async () => ({}) as never);

  it("mappings, portals and BIOS rows: 0, 1 and 2", async () => {
    for (const n of [0, 1, 2]) {
      const maps = Array.from({ length: n }, (_, i) => mapping(i));
      const portals = Array.from({ length: n }, (_, i) => portal(i));
      engine.setWorld({ instances: [...maps, ...portals, ...(n === 0 ? [] : [bios(n === 1 ? "SER-1" : null)])] });
      const got = await smb.getMappings(["\\\\server\\share0", "\\\\server\\share1"]);
      assert.equal(got.size, n);
      if (n === 2) assert.notDeepEqual(got.get("\\\\server\\share0"), got.get("\\\\server\\share1"), "each mapping's own status");
      const listed = await iscsi.listTargetPortals();
      assert.deepEqual(listed.map((p) => [p.targetAddress, p.targetPort]), portals.map((p) => [p.props.TargetPortalAddress, p.props.TargetPortalPortNumber]));
      // no row: null; a row without a serial number (CIM null): ""
      assert.equal(await system.getBIOSSerialNumber(), [null, "SER-1", ""][n]);
    }
  });

  it("a target's disks through the target → connection → disk associations", async () => {
    engine.setWorld({
      instances: [
        portal(0),
        { id: "t", ns: STORAGE, class: "MSFT_iSCSITarget", props: { NodeAddress: "iqn.2026-11.example:t", IsConnected: true } },
        { id: "c1", ns: STORAGE, class: "MSFT_iSCSIConnection", props: {} },
        { id: "d3", ns: STORAGE, class: "MSFT_Disk", props: { Number: 3, Location: "", Path: "", SerialNumber: null, Size: "0", IsOffline: false, PartitionStyle: 0 } },
        { id: "d4", ns: STORAGE, class: "MSFT_Disk", props: { Number: 4, Location: "", Path: "", SerialNumber: null, Size: "0", IsOffline: false, PartitionStyle: 0 } },
      ],
      links: [["portal0", "t"], ["t", "c1"], ["c1", "d3"], ["c1", "d4"]],
    });
    const p = { targetAddress: "192.0.2.1", targetPort: 3260 };
    assert.deepEqual(await iscsi.discoverTargets(p), ["iqn.2026-11.example:t"]);
    assert.deepEqual(await iscsi.getTargetDisks(p, "iqn.2026-11.example:t"), ["3", "4"]);
    engine.resetCalls();
    await iscsi.connectTarget(p, "IQN.2026-11.EXAMPLE:T", { type: "MUTUAL_CHAP", chapUsername: "u", chapSecret: "s3cret-s3cret" });
    const connect = engine.calls().find((c) => c.method === "Connect") as { violation: string | null; arguments: Record<string, { type: string }> };
    assert.equal(connect.violation, null);
    assert.deepEqual(Object.fromEntries(Object.entries(connect.arguments).map(([k, v]) => [k, v.type])), {
      NodeAddress: "String", TargetPortalAddress: "String", TargetPortalPortNumber: "UInt16", AuthenticationType: "String", ChapUsername: "String", ChapSecret: "String",
    });
  });

  it("New-SmbGlobalMapping raising Windows System Error 1326: PermissionDenied, the password not in the text", async () => {
    const password = "pw-1326-secret";
    engine.setWorld({
      instances: [],
      errors: { "New-SmbGlobalMapping": { message: `The user name or password is incorrect (${password}).`, native: "Failed", status: 1, hresult: -2147023570, category: "NotSpecified", fqid: "Windows System Error 1326,New-SmbGlobalMapping" } },
    });
    const err = await rejectsWithCode(smb.createMapping("\\\\server\\share", "DOMAIN\\user", password, false), Code.PermissionDenied);
    assert.ok(!err.message.includes(password), err.message);
  });
});
