/**
 * The Win32 call modules (src/win32/files.ts, volumes.ts, security.ts, tokens.ts over
 * win32-calls.ts) over a fake koffi (test/doubles/fake-koffi.ts): which declaration each call
 * makes and how (off the JS thread or not), how results and last errors become answers, what memory
 * is freed. Prototypes and layouts against windows.h: win32-layout.test.ts; the limiter:
 * win32-io.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { fakeKoffi } from "../../test/doubles/fake-koffi.ts";
import { Win32Calls } from "./win32-calls.ts";
import * as files from "./files.ts";
import * as volumes from "./volumes.ts";
import * as security from "./security.ts";
import * as tokens from "./tokens.ts";
import { Code } from "../errors.ts";

const calls = (answers: Parameters<typeof fakeKoffi>[0] = {}) => {
  const f = fakeKoffi(answers);
  return { ...f, c: new Win32Calls(f.koffi as never) };
};
const utf16 = (s: string) => Buffer.from(`${s}\0`, "utf16le");

test("io refuses a declaration that is not io; io calls never run on the JS thread", async () => {
  const { c, calls: log } = calls({ GetFileAttributesW: () => [0x10] });
  await assert.rejects(c.io(c.k32.GetLastError as never), (e: { code: number }) => e.code === Code.Internal);
  assert.equal(await files.getFileAttributes(c, "C:\\d"), 0x10);
  assert.deepEqual(log.filter((n) => n.startsWith("GetFileAttributesW")), ["GetFileAttributesW async"]);
});

test("files: missing → null, other errors carry their code; open no-follow; delete by handle", async () => {
  const { c } = calls({
    GetFileAttributesW: (p) => [0xffffffff, p === "C:\\gone" ? 2 : 5],
    CreateFileW: (p, access, _share, _sa, _disp, flags) => (p === "C:\\gone" ? [-1, 3] : [access === (0x80 | 0x10000) && flags === (0x02000000 | 0x00200000) ? 7 : 8]),
    SetFileInformationByHandle: (_h, cls, info) => [cls === 4 && (info as Buffer)[0] === 1 ? 0 : 1, 145],
  });
  assert.equal(await files.getFileAttributes(c, "C:\\gone"), null);
  await assert.rejects(files.getFileAttributes(c, "C:\\denied"), (e: { code: number; errno: number }) => e.code === Code.PermissionDenied && e.errno === 5);
  assert.equal(await files.openEntryNoFollow(c, "C:\\gone", true), null);
  assert.equal(await files.openEntryNoFollow(c, "C:\\d", true), 7, "FILE_READ_ATTRIBUTES|DELETE, BACKUP_SEMANTICS|OPEN_REPARSE_POINT");
  await assert.rejects(files.deleteByHandle(c, 7, "C:\\d"), /remove C:\\d: The directory is not empty/);
});

test("files: localAttributes is synchronous and tells missing from unknown", () => {
  const { c, calls: log } = calls({ GetFileAttributesExW: (p, _l, out) => (p === "C:\\x" ? ((out as Buffer).writeUInt32LE(0x10, 0), [1]) : [0, p === "C:\\gone" ? 3 : 21]) });
  assert.equal(files.localAttributes(c, "C:\\x"), 0x10);
  assert.equal(files.localAttributes(c, "C:\\gone"), "missing");
  assert.equal(files.localAttributes(c, "D:\\"), "unknown");
  assert.ok(log.includes("GetFileAttributesExW") && !log.includes("GetFileAttributesExW async"));
});

test("files: a directory batch is the FILE_ID_BOTH_DIR_INFO chain without . and ..; no more files → null", async () => {
  const offsets = { next: 0, len: 60, name: 104 };
  const entry = (name: string, last: boolean) => {
    const n = Buffer.from(name, "utf16le");
    const e = Buffer.alloc(offsets.name + n.length + 8);
    e.writeUInt32LE(last ? 0 : e.length, offsets.next);
    e.writeUInt32LE(n.length, offsets.len);
    n.copy(e, offsets.name);
    return e;
  };
  const chain = Buffer.concat([entry(".", false), entry("..", false), entry("a", false), entry("bé", true)]);
  assert.deepEqual(files.parseDirectoryBatch(chain, offsets), ["a", "bé"]);
  let round = 0;
  const { c } = calls({ GetFileInformationByHandleEx: (_h, _cls, buf) => (round++ === 0 ? (chain.copy(buf as Buffer), [1]) : [0, 18]) });
  assert.deepEqual(await files.readDirectoryBatch(c, 1, true, "C:\\d"), ["a", "bé"]);
  assert.equal(await files.readDirectoryBatch(c, 1, false, "C:\\d"), null);
});

test("volumes: names decoded up to their NUL; an IOCTL answers the bytes the driver wrote", async () => {
  const { c } = calls({
    GetVolumeNameForVolumeMountPointW: (_mp, out) => (utf16("\\\\?\\Volume{1}\\").copy(out as Buffer), [1]),
    SetVolumeMountPointW: () => [0, 145],
    DeviceIoControl: (_h, _code, _in, _inLen, out, _outLen, returned) => ((out as Buffer).write("abc"), ((returned as number[])[0] = 3), [1]),
  });
  assert.equal(await volumes.getVolumeNameForVolumeMountPoint(c, "C:\\mnt\\"), "\\\\?\\Volume{1}\\");
  await assert.rejects(volumes.setVolumeMountPoint(c, "C:\\mnt\\", "V"), /SetVolumeMountPoint C:\\mnt\\ -> V/);
  assert.deepEqual(await volumes.deviceIoControl(c, 1, 0x2d1080, null, 64, "x"), Buffer.from("abc"));
});

test("security: bad SDDL → InvalidArgument; a DACL that is not present → null; what Windows allocated is freed", async () => {
  const { c, freed } = calls({
    ConvertStringSecurityDescriptorToSecurityDescriptorW: (sddl, _rev, sd) => (sddl === "bad" ? [0, 1338] : (((sd as unknown[])[0] = "SD"), [1])),
    GetSecurityDescriptorDacl: (_sd, present) => (((present as number[])[0] = 0), [1]),
    GetNamedSecurityInfoW: (_p, _t, _i, owner, _g, _d, _s, sd) => (((owner as unknown[])[0] = "OWNER"), ((sd as unknown[])[0] = "SD2"), [0]),
    ConvertSidToStringSidW: (_sid, str) => (((str as unknown[])[0] = "S-1-5-18"), [1]),
    ConvertSecurityDescriptorToStringSecurityDescriptorW: (_sd, _r, _i, str) => (((str as unknown[])[0] = "O:SYD:P(A;;FA;;;SY)"), [1]),
    SetFileSecurityW: () => [0, 5],
  });
  assert.throws(() => security.securityDescriptorFromSddl(c, "bad"), (e: { code: number }) => e.code === Code.InvalidArgument);
  assert.equal(security.daclOf(c, security.securityDescriptorFromSddl(c, "D:")), null);
  assert.deepEqual(await security.fileSecurity(c, "C:\\s"), { ownerSid: "S-1-5-18", sddl: "O:SYD:P(A;;FA;;;SY)" });
  assert.deepEqual((freed as string[]).sort(), ["O:SYD:P(A;;FA;;;SY)", "S-1-5-18", "SD2"]);
  await assert.rejects(security.setFileSecurity(c, "C:\\s", "D:P", 4), (e: { code: number }) => e.code === Code.PermissionDenied);
  assert.ok(freed.filter((p) => p === "SD").length === 1, "the parsed descriptor is freed after a failed SetFileSecurity");
});

test("tokens: the TokenUser SID must lie inside what Windows returned; an unknown SID has no name", async () => {
  const buf = Buffer.alloc(64);
  buf.writeBigUInt64LE(1000n + 16n, 0);
  assert.equal(tokens.tokenUserSidOffset(buf, 1000n, 0, 16, 40), 16);
  assert.throws(() => tokens.tokenUserSidOffset(buf, 1000n, 0, 16, 16), /SID outside the buffer/);
  buf.writeBigUInt64LE(900n, 0);
  assert.throws(() => tokens.tokenUserSidOffset(buf, 1000n, 0, 16, 40), /SID outside the buffer/);
  const { c, freed } = calls({
    ConvertStringSidToSidW: (s, p) => (s === "bad" ? [0, 1337] : (((p as unknown[])[0] = "SID"), [1])),
    LookupAccountSidW: (_sys, _sid, name, _nl, domain) => (utf16("SYSTEM").copy(name as Buffer), utf16("NT AUTHORITY").copy(domain as Buffer), [1]),
  });
  assert.equal(await tokens.accountName(c, "bad"), null);
  assert.equal(await tokens.accountName(c, "S-1-5-18"), "NT AUTHORITY\\SYSTEM");
  assert.deepEqual(freed, ["SID"]);
});
