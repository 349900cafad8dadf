// The fragment table itself, and the Windows code path of its filesystem rows (the Linux daemon
// uses Linux paths; the same texts over the pipes are checked under Wine, test/windows/wine-e2e).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Code, CsiProxyError } from "../errors.ts";
import { DRIVER_FRAGMENTS, FragmentError, fragmentError, fragmentRow } from "./driver-fragments.ts";
import { createPathPolicy } from "../policy/path-policy.ts";
import { createFilesystemService } from "../groups/filesystem/filesystem-service.ts";
import type { FilesystemHostApi } from "../groups/filesystem/host-api.ts";

const IN_PROGRESS = [Code.Canceled, Code.DeadlineExceeded, Code.Unavailable, Code.ResourceExhausted, Code.Aborted, Code.Unknown, Code.Internal];

describe("the fragment table", () => {
  it("one row per situation, final precise codes only", () => {
    assert.equal(new Set(DRIVER_FRAGMENTS.map((r) => r.situation)).size, DRIVER_FRAGMENTS.length);
    for (const r of DRIVER_FRAGMENTS) {
      for (const c of [r.code, ...(r.alsoCode ?? [])]) assert.ok(!IN_PROGRESS.includes(c as never), `${r.situation}: code ${c}`);
      assert.ok(r.fragment.length > 0 && r.neededBy.length > 0);
    }
  });

  it("fragmentError keeps a message that already carries the fragment, appends it otherwise", () => {
    const exact = fragmentError("rmdir-missing", "remove C:\\x: The system cannot find the file specified.");
    assert.equal(exact.message, "remove C:\\x: The system cannot find the file specified.");
    assert.equal(exact.code, Code.NotFound);
    assert.ok(exact instanceof CsiProxyError && exact instanceof FragmentError);
    const ours = fragmentError("smb-no-mapping", "no mapping for \\\\srv\\share");
    assert.equal(ours.message, "no mapping for \\\\srv\\share [upstream: No MSFT_SmbGlobalMapping objects found]");
    assert.equal(fragmentError("volume-unmount-not-access-path", "x", Code.FailedPrecondition).code, Code.FailedPrecondition);
    assert.throws(() => fragmentError("rmdir-missing", "x", Code.Unavailable), /does not list code/);
  });
});

describe("Windows code path: upstream's validation order and texts", () => {
  const K = "C:\\var\\lib\\kubelet";
  /** Directories only, keyed case-insensitively: enough for the validation and Rmdir paths. */
  const setup = () => {
    const dirs = new Set(["c:\\", "c:\\var", "c:\\var\\lib", K.toLowerCase()]);
    const has = (p: string) => dirs.has(p.toLowerCase());
    const host: FilesystemHostApi = {
      lstat: async (p) => (has(p) ? "directory" : null),
      realpath: async (p) => (has(p) ? p : null),
      mkdirAll: async (p) => void dirs.add(p.toLowerCase()),
      removeDir: async (p) => void dirs.delete(p.toLowerCase()),
      removeAll: async (p) => void dirs.delete(p.toLowerCase()),
      removeContents: async () => {},
      readDir: async () => [],
      symlink: async () => {},
      linkTargetExists: async () => false,
      isMountPoint: async () => false,
    };
    const policy = createPathPolicy({ platform: "win32", allowedDirs: [K], resolve: (p) => host.realpath(p) });
    return { host, fs: createFilesystemService({ host, policy, platform: "win32" }) };
  };
  const text = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (e) {
      return `${(e as CsiProxyError).code} ${(e as Error).message}`;
    }
    return "ok";
  };

  it("PathExists: each check's exact text, first failure wins", async () => {
    const { fs } = setup();
    const long = `${K}\\${"x".repeat(260)}`;
    assert.equal(await text(fs.pathExists({ path: long })), `3 path length ${long.length} exceeds maximum characters: 260`);
    assert.equal(await text(fs.pathExists({ path: "\\var\\lib\\kubelet\\x" })), "3 invalid character \\ at beginning of path: \\var\\lib\\kubelet\\x");
    assert.equal(await text(fs.pathExists({ path: "\\\\server\\share" })), "3 invalid character \\ at beginning of path: \\\\server\\share");
    assert.equal(await text(fs.pathExists({ path: `${K}\\a|b` })), `3 path contains invalid characters: ${K}\\a|b`);
    assert.equal(await text(fs.pathExists({ path: "var\\lib\\kubelet\\x" })), "3 not an absolute Windows path: var\\lib\\kubelet\\x");
    assert.equal(await text(fs.pathExists({ path: "" })), "3 not an absolute Windows path: ");
    assert.equal(await text(fs.pathExists({ path: "D:\\elsewhere" })), `7 path: D:\\elsewhere is not within the working directories: [${K}]`);
    assert.deepEqual(await fs.pathExists({ path: `${K}\\missing` }), { exists: false });
  });

  it("the leading-\\ text never carries the PathExists fragment (democratic-csi must keep throwing)", async () => {
    const { fs } = setup();
    const t = await text(fs.pathExists({ path: "\\var\\lib\\kubelet\\plugins\\x" }));
    assert.ok(!t.includes(fragmentRow("path-not-absolute").fragment), t);
  });

  it("IsSymlink validates but never answers with the PathExists fragment", async () => {
    const { fs } = setup();
    const t = await text(fs.isSymlink({ path: "var\\x" }));
    assert.match(t, /^3 /);
    assert.ok(!t.includes("not an absolute Windows path"), t);
  });

  it("Rmdir: missing path → the file text, missing parent → the path text", async () => {
    const { fs } = setup();
    assert.equal(await text(fs.rmdir({ path: `${K}\\gone`, force: false })), `5 remove ${K}\\gone: The system cannot find the file specified.`);
    assert.equal(await text(fs.rmdir({ path: `${K}\\gone\\deeper`, force: false })), `5 remove ${K}\\gone\\deeper: The system cannot find the path specified.`);
    assert.equal(await text(fs.rmdir({ path: `${K}\\gone`, force: true })), "ok");
  });
});
