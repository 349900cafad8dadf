// Version adapters: what each versioned request becomes for the version-agnostic services, and how
// results are rendered back per version (string vs uint32 disk ids, renamed fields, legacy aliases).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { create, toBinary, fromBinary, type DescService } from "@bufbuild/protobuf";
import { catalog } from "./catalog.ts";
import { diskAdapters } from "../groups/disk/adapters.ts";
import { volumeAdapters } from "../groups/volume/adapters.ts";
import { filesystemAdapters } from "../groups/filesystem/adapters.ts";
import { iscsiAdapters } from "../groups/iscsi/adapters.ts";
import { smbAdapters } from "../groups/smb/adapters.ts";
import { systemAdapters } from "../groups/system/adapters.ts";
import { Code, CsiProxyError } from "../errors.ts";

/** A service stand-in that records every call and answers from a table. */
function recorder<T extends object>(answers: Record<string, unknown> = {}) {
  const calls: [string, unknown][] = [];
  const service = new Proxy({} as T, {
    get: (_t, name: string) => async (req: unknown) => {
      calls.push([name, req]);
      return answers[name];
    },
  });
  return { service, calls };
}

/** Calls `method` of a versioned adapter with a wire-encoded request, returning the wire-decoded response. */
async function call(service: DescService, handlers: object, method: string, request: object = {}) {
  const m = service.methods.find((x) => x.name === method)!;
  const decoded = fromBinary(m.input, toBinary(m.input, create(m.input, request as never)));
  const response = await (handlers as Record<string, (r: unknown, c: unknown) => Promise<object>>)[m.localName](decoded, {});
  return fromBinary(m.output, toBinary(m.output, create(m.output, response as never))) as Record<string, unknown>;
}

const locations = new Map([[7, { adapter: "0", bus: "", target: "1", lunId: "3" }]]);
const ids = new Map([[7, { page83: "600224", serialNumber: "SN1" }]]);

describe("disk adapters", () => {
  it("every version maps disk locations, with string keys before v1beta3 and uint32 keys after", async () => {
    for (const version of ["v1alpha1", "v1beta1", "v1beta2", "v1beta3", "v1"] as const) {
      const { service } = recorder({ listDiskLocations: locations });
      const res = await call(catalog.disk[version], diskAdapters[version](service as never), "ListDiskLocations");
      const key = version.startsWith("v1beta3") || version === "v1" ? 7 : "7";
      assert.deepEqual(Object.keys(res.diskLocations as object), [String(key)]);
      const loc = (res.diskLocations as Record<string, Record<string, string>>)[key];
      assert.deepEqual([loc.Adapter, loc.Bus, loc.Target, loc.LUNID], ["0", "", "1", "3"], version);
    }
  });

  it("legacy ListDiskIDs renders the identifiers map; current versions page83 + serial_number", async () => {
    const { service } = recorder({ listDiskIds: ids });
    const legacy = await call(catalog.disk.v1beta2, diskAdapters.v1beta2(service as never), "ListDiskIDs");
    assert.deepEqual((legacy.diskIDs as Record<string, { identifiers: object }>)["7"].identifiers, { page83: "600224", serialNumber: "SN1" });
    const current = await call(catalog.disk.v1, diskAdapters.v1(service as never), "ListDiskIDs");
    const entry = (current.diskIDs as Record<number, { page83: string; serialNumber: string }>)[7];
    assert.deepEqual([entry.page83, entry.serialNumber], ["600224", "SN1"]);
  });

  it("string disk ids are parsed as uint32; garbage and overflow are InvalidArgument before the service runs", async () => {
    for (const [method, field] of [["PartitionDisk", "diskID"], ["DiskStats", "diskID"], ["SetAttachState", "diskID"], ["GetAttachState", "diskID"]]) {
      const { service, calls } = recorder({ getDiskStats: { totalBytes: 5n }, getDiskState: { isOnline: true } });
      const handlers = diskAdapters.v1beta2(service as never);
      await call(catalog.disk.v1beta2, handlers, method, { [field]: "42" });
      assert.equal((calls[0][1] as { diskNumber: number }).diskNumber, 42, method);
      for (const bad of ["", "-1", "4294967296", "1e3", " 1", "abc", "0x10"]) {
        await assert.rejects(call(catalog.disk.v1beta2, handlers, method, { [field]: bad }), (e: CsiProxyError) => e.code === Code.InvalidArgument);
      }
      assert.equal(calls.length, 1, `${method}: service called for bad input`);
    }
  });

  it("legacy aliases reach the current methods with renamed fields", async () => {
    const { service, calls } = recorder({ getDiskStats: { totalBytes: 1234n }, getDiskState: { isOnline: false }, getDiskNumberByName: { diskNumber: 9 } });
    assert.equal((await call(catalog.disk.v1beta1, diskAdapters.v1beta1(service as never), "DiskStats", { diskID: "3" })).diskSize, 1234n);
    assert.equal((await call(catalog.disk.v1beta2, diskAdapters.v1beta2(service as never), "GetAttachState", { diskID: "3" })).isOnline, false);
    await call(catalog.disk.v1beta2, diskAdapters.v1beta2(service as never), "SetAttachState", { diskID: "3", isOnline: true });
    assert.deepEqual(calls.at(-1), ["setDiskState", { diskNumber: 3, isOnline: true }]);
    assert.equal((await call(catalog.disk.v1alpha1, diskAdapters.v1alpha1(service as never), "GetDiskNumberByName", { diskName: "600224" })).diskNumber, "9");
    assert.deepEqual(calls.at(-1), ["getDiskNumberByName", { diskName: "600224" }]);
  });
});

describe("volume adapters", () => {
  it("legacy versions parse disk_id, default partition 0, and rename path/size", async () => {
    const { service, calls } = recorder({ listVolumesOnDisk: { volumeIds: ["a"] } });
    const h = volumeAdapters.v1alpha1(service as never);
    assert.deepEqual((await call(catalog.volume.v1alpha1, h, "ListVolumesOnDisk", { diskId: "2" })).volumeIds, ["a"]);
    await call(catalog.volume.v1alpha1, h, "MountVolume", { volumeId: "v", path: "/p" });
    await call(catalog.volume.v1alpha1, h, "DismountVolume", { volumeId: "v", path: "/p" });
    await call(catalog.volume.v1alpha1, h, "ResizeVolume", { volumeId: "v", size: 10n });
    assert.deepEqual(calls, [
      ["listVolumesOnDisk", { diskNumber: 2, partitionNumber: 0 }],
      ["mountVolume", { volumeId: "v", targetPath: "/p" }],
      ["unmountVolume", { volumeId: "v", targetPath: "/p" }],
      ["resizeVolume", { volumeId: "v", sizeBytes: 10n }],
    ]);
  });

  it("v1beta1/v1beta2 old names: VolumeStats, GetVolumeDiskNumber (int64), GetVolumeIDFromMount", async () => {
    const { service, calls } = recorder({
      getVolumeStats: { totalBytes: 100n, usedBytes: 40n },
      getDiskNumberFromVolumeId: { diskNumber: 5 },
      getVolumeIdFromTargetPath: { volumeId: "vol" },
    });
    const h = volumeAdapters.v1beta2(service as never);
    const stats = await call(catalog.volume.v1beta2, h, "VolumeStats", { volumeId: "v" });
    assert.deepEqual([stats.volumeSize, stats.volumeUsedSize], [100n, 40n]);
    assert.equal((await call(catalog.volume.v1beta2, h, "GetVolumeDiskNumber", { volumeId: "v" })).diskNumber, 5n);
    assert.equal((await call(catalog.volume.v1beta2, h, "GetVolumeIDFromMount", { mount: "/m" })).volumeId, "vol");
    assert.deepEqual(calls.at(-1), ["getVolumeIdFromTargetPath", { targetPath: "/m" }]);
  });

  it("the legacy forwarders prefix every failure as upstream (`Forward to <current> failed, err=`), keeping the code; other methods do not", async () => {
    const failing = (code: number, message: string) =>
      new Proxy({}, { get: () => async () => { throw new CsiProxyError(code as never, message); } });
    const cases = [
      ["v1alpha1", "DismountVolume", "UnmountVolume"],
      ["v1beta1", "DismountVolume", "UnmountVolume"],
      ["v1beta1", "VolumeStats", "GetVolumeStats"],
      ["v1beta1", "GetVolumeDiskNumber", "GetDiskNumberFromVolumeID"],
      ["v1beta1", "GetVolumeIDFromMount", "GetVolumeIDFromTargetPath"],
      ["v1beta2", "DismountVolume", "UnmountVolume"],
      ["v1beta2", "VolumeStats", "GetVolumeStats"],
      ["v1beta2", "GetVolumeDiskNumber", "GetDiskNumberFromVolumeID"],
      ["v1beta2", "GetVolumeIDFromMount", "GetVolumeIDFromTargetPath"],
    ] as const;
    for (const [version, method, target] of cases) {
      const h = volumeAdapters[version](failing(Code.NotFound, "volume id empty") as never);
      await assert.rejects(call(catalog.volume[version], h, method), (e: CsiProxyError) =>
        e.code === Code.NotFound && e.message === `Forward to ${target} failed, err=volume id empty`, `${version} ${method}`);
    }
    // a non-coded failure is the boundary's Internal, prefixed too
    const broken = new Proxy({}, { get: () => async () => { throw new Error("boom"); } });
    await assert.rejects(call(catalog.volume.v1beta2, volumeAdapters.v1beta2(broken as never), "VolumeStats"), (e: CsiProxyError) =>
      e.code === Code.Internal && e.message === "Forward to GetVolumeStats failed, err=boom");
    for (const [version, method] of [["v1beta2", "IsVolumeFormatted"], ["v1beta2", "WriteVolumeCache"], ["v1", "UnmountVolume"], ["v1", "GetVolumeStats"], ["v2alpha1", "GetVolumeIDFromTargetPath"]] as const) {
      const h = volumeAdapters[version](failing(Code.InvalidArgument, "volume id empty") as never);
      await assert.rejects(call(catalog.volume[version], h, method), (e: CsiProxyError) => e.message === "volume id empty", `${version} ${method}`);
    }
  });

  it("v2alpha1 serves GetClosestVolumeIDFromTargetPath", async () => {
    const { service, calls } = recorder({ getClosestVolumeIdFromTargetPath: { volumeId: "c" } });
    assert.equal((await call(catalog.volume.v2alpha1, volumeAdapters.v2alpha1(service as never), "GetClosestVolumeIDFromTargetPath", { targetPath: "/x" })).volumeId, "c");
    assert.deepEqual(calls, [["getClosestVolumeIdFromTargetPath", { targetPath: "/x" }]]);
  });
});

describe("filesystem adapters", () => {
  it("v1alpha1/v1beta1 LinkPath and IsMountPoint forward to CreateSymlink and IsSymlink; error fields stay empty", async () => {
    for (const version of ["v1alpha1", "v1beta1"] as const) {
      const { service, calls } = recorder({ isSymlink: { isSymlink: true }, pathExists: { exists: true } });
      const h = filesystemAdapters[version](service as never);
      await call(catalog.filesystem[version], h, "LinkPath", { sourcePath: "/s", targetPath: "/t" });
      const mp = await call(catalog.filesystem[version], h, "IsMountPoint", { path: "/t" });
      assert.deepEqual([mp.isMountPoint, mp.error], [true, ""]);
      const pe = await call(catalog.filesystem[version], h, "PathExists", { path: "/t", context: 1 });
      assert.deepEqual([pe.exists, pe.error], [true, ""]);
      await call(catalog.filesystem[version], h, "Rmdir", { path: "/t", context: 1, force: true });
      assert.deepEqual(calls, [
        ["createSymlink", { sourcePath: "/s", targetPath: "/t" }],
        ["isSymlink", { path: "/t" }],
        ["pathExists", { path: "/t" }],
        ["rmdir", { path: "/t", force: true }],
      ]);
    }
  });
});

describe("iscsi adapters", () => {
  it("maps the auth enum, keeps a missing portal undefined, renames diskIDs and MutualChapSecret", async () => {
    const { service, calls } = recorder({ getTargetDisks: { diskIds: ["1", "2"] } });
    const h = iscsiAdapters.v1alpha2(service as never);
    await call(catalog.iscsi.v1alpha2, h, "ConnectTarget", { targetPortal: { targetAddress: "a", targetPort: 0 }, iqn: "q", authType: 2, chapUsername: "u", chapSecret: "s" });
    assert.deepEqual(calls[0], ["connectTarget", { targetPortal: { targetAddress: "a", targetPort: 0 }, iqn: "q", authType: "MUTUAL_CHAP", chapUsername: "u", chapSecret: "s" }]);
    await call(catalog.iscsi.v1alpha2, h, "AddTargetPortal", {});
    assert.deepEqual(calls[1], ["addTargetPortal", { targetPortal: undefined }]);
    assert.deepEqual((await call(catalog.iscsi.v1alpha2, h, "GetTargetDisks", { iqn: "q" })).diskIDs, ["1", "2"]);
    await call(catalog.iscsi.v1alpha2, h, "SetMutualChapSecret", { MutualChapSecret: "m" });
    assert.deepEqual(calls.at(-1), ["setMutualChapSecret", { mutualChapSecret: "m" }]);
    await assert.rejects(call(catalog.iscsi.v1alpha2, h, "ConnectTarget", { authType: 7 }), /invalid authentication type authType=7/);
  });
});

describe("smb and system adapters", () => {
  it("pass requests through unchanged for every SMB version", async () => {
    for (const version of ["v1alpha1", "v1beta1", "v1beta2", "v1"] as const) {
      const { service, calls } = recorder();
      const req = { remotePath: "\\\\s\\x", localPath: "/l", username: "u", password: "p" };
      await call(catalog.smb[version], smbAdapters[version](service as never), "NewSmbGlobalMapping", req);
      await call(catalog.smb[version], smbAdapters[version](service as never), "RemoveSmbGlobalMapping", { remotePath: "\\\\s\\x" });
      assert.deepEqual(calls, [["newSmbGlobalMapping", req], ["removeSmbGlobalMapping", { remotePath: "\\\\s\\x" }]]);
    }
  });
  it("GetService returns the enums numbered as on the wire", async () => {
    const { service } = recorder({ getService: { displayName: "D", startType: 3, status: 4 } });
    const res = await call(catalog.system.v1alpha1, systemAdapters.v1alpha1(service as never), "GetService", { name: "x" });
    assert.deepEqual([res.displayName, res.startType, res.status], ["D", 3, 4]);
  });
});
