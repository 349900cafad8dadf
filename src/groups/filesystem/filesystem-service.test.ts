import { describe, it, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { createFilesystemService } from "./filesystem-service.ts";
import { createPathPolicy } from "../../policy/path-policy.ts";
import { FakeFilesystemHost } from "../../../test/doubles/fake-filesystem-host.ts";
import { Code } from "../../errors.ts";
import type { FilesystemService } from "./types.ts";
import { rejectsWithCsiProxyError } from "../../../test/helpers/assert-coded.ts";

const K = "/var/lib/kubelet";

describe("createFilesystemService()", () => {
  let host: FakeFilesystemHost;
  let fs: FilesystemService;
  /** Every realpath asked of the host (by the policy's resolver and by the service). */
  let resolved: string[];
  beforeEach(() => {
    host = new FakeFilesystemHost().addDir(K).addDir("/etc").addFile("/etc/passwd");
    resolved = [];
    const realpath = host.realpath.bind(host);
    host.realpath = (p) => (resolved.push(p), realpath(p));
    const policy = createPathPolicy({ platform: "linux", allowedDirs: ["/csi", K], resolve: (p) => host.realpath(p) });
    fs = createFilesystemService({ host, policy, platform: "linux" });
  });

  it("pathExists: true for files, dirs and dangling links; false when missing", async () => {
    host.addFile(`${K}/f`).addSymlink(`${K}/dangling`, `${K}/nowhere`);
    assert.deepEqual(await fs.pathExists({ path: `${K}/f` }), { exists: true });
    assert.deepEqual(await fs.pathExists({ path: `${K}/dangling` }), { exists: true });
    assert.deepEqual(await fs.pathExists({ path: `${K}/missing` }), { exists: false });
  });

  it("pathExists: one realpath and nothing else when the path exists with no link on the way", async () => {
    host.addFile(`${K}/f`);
    await fs.pathExists({ path: `${K}/f` }); // the allowed dirs are resolved once, on first use
    host.calls.length = 0;
    resolved.length = 0;
    assert.deepEqual(await fs.pathExists({ path: `${K}//f` }), { exists: true });
    assert.deepEqual(host.calls, []);
    // (the missing allowed dir /csi is looked up on every check; K, cached, only as the parent)
    assert.deepEqual(resolved.filter((p) => p === K || p.startsWith(`${K}/`)), [`${K}/f`]);
  });

  it("pathExists: a missing path is answered by the lstat started beside the policy's resolution", async () => {
    host.calls.length = 0;
    assert.deepEqual(await fs.pathExists({ path: `${K}/none` }), { exists: false });
    assert.deepEqual(host.calls, [`lstat ${K}/none`]);
  });

  it("pathExists: a final link is the entry itself (exists, even dangling), not what it points to", async () => {
    host.addSymlink(`${K}/to-etc`, "/etc/passwd").addSymlink(`${K}/gone`, "/nowhere");
    assert.deepEqual(await fs.pathExists({ path: `${K}/to-etc` }), { exists: true });
    assert.deepEqual(await fs.pathExists({ path: `${K}/gone` }), { exists: true });
  });

  it("pathExists: answers from the resolved path, not the lexical one, when a link lies on the way", async () => {
    host.addDir(`${K}/real`).addFile(`${K}/real/x`).addSymlink(`${K}/via`, `${K}/real`);
    assert.deepEqual(await fs.pathExists({ path: `${K}/via/x` }), { exists: true });
    assert.deepEqual(await fs.pathExists({ path: `${K}/via/none` }), { exists: false });
  });

  it("refuses paths outside the allowed dirs with PermissionDenied, before touching the host", async () => {
    for (const p of ["/etc/passwd", `${K}-x/a`, `${K}/../../etc`, "/csi2/x"]) {
      host.calls.length = 0;
      await rejectsWithCsiProxyError(fs.pathExists({ path: p }), Code.PermissionDenied);
      assert.deepEqual(host.calls, [], `host touched for ${p}`);
    }
  });

  it("refuses malformed paths with InvalidArgument", async () => {
    for (const p of ["", "relative/path", "a\0b", `${K}/${"x".repeat(5000)}`]) await rejectsWithCsiProxyError(fs.mkdir({ path: p }), Code.InvalidArgument);
  });

  it("refuses a symlink inside the kubelet dir that points outside", async () => {
    host.addSymlink(`${K}/escape`, "/etc");
    await rejectsWithCsiProxyError(fs.mkdir({ path: `${K}/escape/evil` }), Code.PermissionDenied, /resolved to \/etc\/evil/);
    await rejectsWithCsiProxyError(fs.rmdirContents({ path: `${K}/escape` }), Code.PermissionDenied);
    assert.ok(host.entries.has("/etc/passwd"));
  });

  it("mkdir creates parents, is idempotent, and refuses an existing file", async () => {
    await fs.mkdir({ path: `${K}/a/b/c` });
    assert.equal(await host.lstat(`${K}/a/b/c`), "directory");
    await fs.mkdir({ path: `${K}/a/b/c` });
    host.addFile(`${K}/file`);
    await rejectsWithCsiProxyError(fs.mkdir({ path: `${K}/file` }), Code.AlreadyExists);
  });

  it("rmdir without force: NotFound when missing, FailedPrecondition when not empty", async () => {
    host.addFile(`${K}/d/f`);
    await rejectsWithCsiProxyError(fs.rmdir({ path: `${K}/missing`, force: false }), Code.NotFound);
    await rejectsWithCsiProxyError(fs.rmdir({ path: `${K}/d`, force: false }), Code.FailedPrecondition);
    await fs.rmdir({ path: `${K}/d`, force: true });
    assert.equal(await host.lstat(`${K}/d`), null);
    await fs.rmdir({ path: `${K}/d`, force: true });
  });

  it("rmdir without force removes a regular file (as upstream's os.Remove), and only that file", async () => {
    host.addFile(`${K}/d/f`).addFile(`${K}/d/g`);
    await fs.rmdir({ path: `${K}/d/f`, force: false });
    assert.equal(await host.lstat(`${K}/d/f`), null);
    assert.equal(await host.lstat(`${K}/d/g`), "file");
    assert.equal(await host.lstat(`${K}/d`), "directory");
  });

  it("rmdir removes a symlink itself, not its target", async () => {
    host.addFile(`${K}/target/keep`).addSymlink(`${K}/link`, `${K}/target`);
    await fs.rmdir({ path: `${K}/link`, force: true });
    assert.equal(await host.lstat(`${K}/link`), null);
    assert.equal(await host.lstat(`${K}/target/keep`), "file");
  });

  it("never removes or empties an allowed dir itself", async () => {
    host.addFile(`${K}/pods/x`);
    await rejectsWithCsiProxyError(fs.rmdir({ path: K, force: true }), Code.PermissionDenied, /allowed directory/);
    await rejectsWithCsiProxyError(fs.rmdir({ path: `${K}/`, force: true }), Code.PermissionDenied);
    await rejectsWithCsiProxyError(fs.rmdirContents({ path: K }), Code.PermissionDenied);
    assert.equal(await host.lstat(`${K}/pods/x`), "file");
  });

  it("rmdirContents empties the dir, keeps it, and removes links without following them", async () => {
    host.addFile(`${K}/outside-target/keep`).addFile(`${K}/d/a`).addFile(`${K}/d/sub/b`).addSymlink(`${K}/d/link`, `${K}/outside-target`);
    await fs.rmdirContents({ path: `${K}/d` });
    assert.equal(await host.lstat(`${K}/d`), "directory");
    assert.deepEqual(await host.readDir(`${K}/d`), []);
    assert.equal(await host.lstat(`${K}/outside-target/keep`), "file");
    await rejectsWithCsiProxyError(fs.rmdirContents({ path: `${K}/missing` }), Code.NotFound);
  });

  it("createSymlink makes the link at targetPath pointing to sourcePath; both must be allowed", async () => {
    host.addDir(`${K}/src`);
    await fs.createSymlink({ sourcePath: `${K}/src`, targetPath: `${K}/link` });
    assert.deepEqual(host.entries.get(`${K}/link`), { kind: "symlink", target: `${K}/src` });
    await rejectsWithCsiProxyError(fs.createSymlink({ sourcePath: `${K}/src`, targetPath: `${K}/link` }), Code.AlreadyExists);
    await rejectsWithCsiProxyError(fs.createSymlink({ sourcePath: "/etc", targetPath: `${K}/l2` }), Code.PermissionDenied);
    await rejectsWithCsiProxyError(fs.createSymlink({ sourcePath: `${K}/src`, targetPath: "/tmp/l3" }), Code.PermissionDenied);
  });

  it("isSymlink: link to existing → true, dangling → false, dir → false, mount → true, missing → NotFound", async () => {
    host.addDir(`${K}/dir`).addSymlink(`${K}/good`, `${K}/dir`).addSymlink(`${K}/bad`, `${K}/gone`).addMount(`${K}/mnt`);
    assert.deepEqual(await fs.isSymlink({ path: `${K}/good` }), { isSymlink: true });
    assert.deepEqual(await fs.isSymlink({ path: `${K}/bad` }), { isSymlink: false });
    assert.deepEqual(await fs.isSymlink({ path: `${K}/dir` }), { isSymlink: false });
    assert.deepEqual(await fs.isSymlink({ path: `${K}/mnt` }), { isSymlink: true });
    await rejectsWithCsiProxyError(fs.isSymlink({ path: `${K}/missing` }), Code.NotFound);
    await rejectsWithCsiProxyError(fs.isSymlink({ path: "/etc/passwd" }), Code.PermissionDenied);
  });

  it("working dirs are allowed like the kubelet path", async () => {
    host.addDir("/csi");
    await fs.mkdir({ path: "/csi/x" });
    assert.equal(await host.lstat("/csi/x"), "directory");
  });

  it("rmdir force: a missing path (also under a file) succeeds; a mounted directory is refused on Linux, a link to it is removed", async () => {
    host.addFile(`${K}/file`).addMount(`${K}/mnt`).addSymlink(`${K}/publish`, `${K}/mnt`);
    await fs.rmdir({ path: `${K}/file/child`, force: true });
    await fs.rmdir({ path: `${K}/missing`, force: true });
    await rejectsWithCsiProxyError(fs.rmdir({ path: `${K}/mnt`, force: true }), Code.FailedPrecondition, /is a mount point; unmount it first/);
    assert.equal(await host.isMountPoint(`${K}/mnt`), true);
    await fs.rmdir({ path: `${K}/publish`, force: true });
    assert.equal(await host.lstat(`${K}/publish`), null);
    assert.equal(await host.isMountPoint(`${K}/mnt`), true);
  });

  it("createSymlink links to the source entry as given, even when that entry is a link leading outside", async () => {
    host.addDir("/srv/share").addSymlink(`${K}/staging`, "/srv/share");
    await fs.createSymlink({ sourcePath: `${K}/staging`, targetPath: `${K}/publish` });
    assert.deepEqual(host.entries.get(`${K}/publish`), { kind: "symlink", target: `${K}/staging` });
    await rejectsWithCsiProxyError(fs.createSymlink({ sourcePath: "/srv/share", targetPath: `${K}/p2` }), Code.PermissionDenied);
  });
});

describe("createFilesystemService() on win32: Go's os texts", () => {
  const W = "C:\\var\\lib\\kubelet";
  it("Mkdir over a file answers `mkdir <p>: The system cannot find the path specified.` (Go's ENOTDIR), AlreadyExists", async () => {
    // a host that holds W and the file W\f only (FakeFilesystemHost is POSIX-only)
    const entries: Record<string, "directory" | "file"> = { [W.toLowerCase()]: "directory", [`${W}\\f`.toLowerCase()]: "file" };
    const kind = (p: string) => entries[p.toLowerCase()] ?? null;
    const host = { lstat: async (p: string) => kind(p), realpath: async (p: string) => (kind(p) ? p : null), mkdirAll: async () => assert.fail("must not create") };
    const policy = createPathPolicy({ platform: "win32", allowedDirs: [W], resolve: (p) => host.realpath(p) });
    const fs = createFilesystemService({ host: host as never, policy, platform: "win32" });
    await rejectsWithCsiProxyError(fs.mkdir({ path: `${W}\\f` }), Code.AlreadyExists, /^mkdir C:\\var\\lib\\kubelet\\f: The system cannot find the path specified\.$/);
  });
});
