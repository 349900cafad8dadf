// The path policy on a real filesystem, on win32, and with bind sources.
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { Code } from "../errors.ts";
import { isWithin } from "./path-arithmetic.ts";
import { createPathPolicy } from "./path-policy.ts";
import { createFsResolver, type PathResolver } from "./path-resolver.ts";
import { WINDOWS_SYNTAX_ERRORS } from "../../test/helpers/windows-path-syntax-cases.ts";
import { assertError, expectOutcome, fakeResolver, denied, invalid, type Case } from "../../test/helpers/path-policy-cases.ts";

describe("createPathPolicy() on linux, real filesystem", { skip: process.platform === "win32" ? "needs POSIX symlinks" : false }, () => {
  let root = "";
  const r = (p: string) => `${root}/${p}`; // no path.join: it would normalise the `..` cases away

  before(async () => {
    root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "path-policy-")));
    await fs.mkdir(r("kubelet/pods/p1"), { recursive: true });
    await fs.mkdir(r("kubelet-x"));
    await fs.mkdir(r("outside"));
    await fs.writeFile(r("outside/secret"), "s");
    await fs.writeFile(r("kubelet/file"), "f");
    await fs.symlink("../outside", r("kubelet/out")); // relative, pointing out
    await fs.symlink(r("outside"), r("kubelet/abs-out")); // absolute, pointing out
    await fs.symlink("pods", r("kubelet/in")); // pointing in
    await fs.symlink(r("outside/missing"), r("kubelet/dangling")); // dangling, pointing out
    await fs.symlink("../outside/missing2/deeper", r("kubelet/dangling-rel"));
    await fs.symlink("dangling", r("kubelet/chain")); // link to a dangling link
    await fs.symlink("pods/new-dir", r("kubelet/dangling-in")); // dangling, pointing in
    await fs.symlink("loop2", r("kubelet/loop1"));
    await fs.symlink("loop1", r("kubelet/loop2"));
    await fs.symlink("kubelet", r("kubelet-link")); // the allowed dir, reached through a link
  });
  after(async () => {
    if (root) await fs.rm(root, { recursive: true, force: true });
  });

  // Messages name the temp dir, which exists only once `before` ran: build them lazily.
  type LazyWant = string | { code: Code; message: string | RegExp } | (() => { code: Code; message: string | RegExp });
  const out = (p: string, resolved: string) => () =>
    denied(`path ${r(p)} is not within the allowed directories [${r("kubelet")}] (resolved to ${r(resolved)})`);
  const cases: { name: string; path: string; followFinal?: boolean; want: LazyWant }[] = [
    { name: "the allowed dir", path: "kubelet", want: "kubelet" },
    { name: "existing subdirectory", path: "kubelet/pods/p1", want: "kubelet/pods/p1" },
    { name: "nonexistent deep path", path: "kubelet/pods/p1/new/deep/x", want: "kubelet/pods/p1/new/deep/x" },
    { name: "under a regular file (the operation will fail, the policy allows)", path: "kubelet/file/x", want: "kubelet/file/x" },
    { name: "relative symlink pointing out", path: "kubelet/out/secret", want: out("kubelet/out/secret", "outside/secret") },
    { name: "absolute symlink pointing out", path: "kubelet/abs-out/secret", want: out("kubelet/abs-out/secret", "outside/secret") },
    { name: "nonexistent path under a symlink pointing out", path: "kubelet/out/new-dir/x", want: out("kubelet/out/new-dir/x", "outside/new-dir/x") },
    { name: "symlink pointing out, not followed: the link itself", path: "kubelet/out", want: "kubelet/out" },
    { name: "symlink pointing out, followed", path: "kubelet/out", followFinal: true, want: out("kubelet/out", "outside") },
    { name: "symlink pointing in, through it", path: "kubelet/in/p1", want: "kubelet/pods/p1" },
    { name: "symlink pointing in, followed", path: "kubelet/in", followFinal: true, want: "kubelet/pods" },
    { name: "dangling symlink pointing out, through it", path: "kubelet/dangling/x", want: out("kubelet/dangling/x", "outside/missing/x") },
    { name: "dangling relative symlink pointing out", path: "kubelet/dangling-rel/a", want: out("kubelet/dangling-rel/a", "outside/missing2/deeper/a") },
    { name: "link to a dangling link pointing out", path: "kubelet/chain/x", want: out("kubelet/chain/x", "outside/missing/x") },
    { name: "dangling symlink, not followed: the link itself", path: "kubelet/dangling", want: "kubelet/dangling" },
    { name: "dangling symlink, followed", path: "kubelet/dangling", followFinal: true, want: out("kubelet/dangling", "outside/missing") },
    { name: "dangling symlink pointing in, followed", path: "kubelet/dangling-in", followFinal: true, want: "kubelet/pods/new-dir" },
    { name: "symlink loop, not followed", path: "kubelet/loop1", want: "kubelet/loop1" },
    { name: "through a symlink loop", path: "kubelet/loop1/x", want: invalid(/^failed to resolve .*loop1: ELOOP/) },
    { name: "prefix sibling", path: "kubelet-x/y", want: { code: Code.PermissionDenied, message: /^path .*kubelet-x\/y is not within/ } },
    { name: "`..` into the prefix sibling", path: "kubelet/pods/../../kubelet-x", want: out("kubelet/pods/../../kubelet-x", "kubelet-x") },
    { name: "a link to the allowed dir from outside is no entrance", path: "kubelet-link/pods", want: { code: Code.PermissionDenied, message: /kubelet-link\/pods is not within/ } },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const policy = createPathPolicy({ platform: "linux", allowedDirs: [r("kubelet")], resolve: createFsResolver(fs, "linux") });
      const want = typeof c.want === "string" ? r(c.want) : typeof c.want === "function" ? c.want() : c.want;
      await expectOutcome(() => policy.check(r(c.path), { followFinal: c.followFinal }), want);
    });
  }

  const viaLink: Case[] = [
    { name: "allowed dir is a symlink: path through it", path: "kubelet-link/pods/p1", want: "kubelet/pods/p1" },
    { name: "allowed dir is a symlink: its real path", path: "kubelet/pods", want: "kubelet/pods" },
    { name: "allowed dir is a symlink: the link itself", path: "kubelet-link", want: "kubelet-link" },
    { name: "allowed dir is a symlink: the link followed", path: "kubelet-link", followFinal: true, want: "kubelet" },
  ];
  for (const c of viaLink) {
    it(c.name, async () => {
      const policy = createPathPolicy({ platform: "linux", allowedDirs: [r("kubelet-link")], resolve: createFsResolver(fs, "linux") });
      await expectOutcome(() => policy.check(r(c.path), { followFinal: c.followFinal }), r(c.want as string));
    });
  }
});

describe("createPathPolicy() on win32", () => {
  const tree = {
    "C:\\": "C:\\",
    "C:\\var": "C:\\var",
    "C:\\var\\lib": "C:\\var\\lib",
    "C:\\var\\lib\\kubelet": "C:\\var\\lib\\kubelet",
    "C:\\var\\lib\\kubelet\\pods": "C:\\var\\lib\\kubelet\\pods",
    "C:\\var\\lib\\kubelet\\link": "D:\\data", // symlink / junction pointing out
    "C:\\var\\lib\\kubelet\\nsprefix": "\\\\?\\C:\\var\\lib\\kubelet\\pods", // resolver answering with \\?\
    "C:\\var\\lib\\kubelet\\unc": "\\\\?\\UNC\\server\\share",
    "C:\\csi": "C:\\csi",
  };
  const allowedDirs = ["C:\\csi", "C:\\var\\lib\\kubelet"];
  const out = (p: string, resolved?: string) =>
    denied(`path: ${p} is not within the working directories: [C:\\csi C:\\var\\lib\\kubelet]${resolved ? ` (resolved to ${resolved})` : ""}`);

  const cases: Case[] = [
    ...WINDOWS_SYNTAX_ERRORS.map((c) => ({ name: `syntax: ${c.name}`, path: c.path, want: invalid(c.message) })),
    { name: "allowed dir itself", path: "C:\\var\\lib\\kubelet", want: "C:\\var\\lib\\kubelet" },
    { name: "trailing backslash", path: "C:\\var\\lib\\kubelet\\", want: "C:\\var\\lib\\kubelet" },
    { name: "duplicate and trailing backslashes", path: "C:\\var\\\\lib\\kubelet\\\\pods\\\\", want: "C:\\var\\lib\\kubelet\\pods" },
    { name: "single dot component", path: "C:\\var\\lib\\kubelet\\.\\pods", want: "C:\\var\\lib\\kubelet\\pods" },
    { name: "case-insensitive match", path: "c:\\VAR\\Lib\\KUBELET\\PODS\\x", want: "C:\\var\\lib\\kubelet\\pods\\x" },
    { name: "case-insensitive nonexistent path", path: "C:\\CSI\\New\\Dir", want: "C:\\csi\\New\\Dir" },
    { name: "nonexistent deep path", path: "C:\\var\\lib\\kubelet\\pods\\p\\volumes\\a\\b", want: "C:\\var\\lib\\kubelet\\pods\\p\\volumes\\a\\b" },
    { name: "`..` inside a name is allowed and stays inside", path: "C:\\var\\lib\\kubelet\\a..b", want: "C:\\var\\lib\\kubelet\\a..b" },
    { name: "prefix sibling kubelet-x (upstream's prefix test lets it through)", path: "C:\\var\\lib\\kubelet-x", want: out("C:\\var\\lib\\kubelet-x") },
    { name: "inside the prefix sibling", path: "C:\\var\\lib\\kubelet-x\\pods", want: out("C:\\var\\lib\\kubelet-x\\pods") },
    { name: "prefix sibling of a working dir", path: "C:\\csix", want: out("C:\\csix") },
    { name: "parent of the allowed dir", path: "C:\\var\\lib", want: out("C:\\var\\lib") },
    { name: "other drive", path: "D:\\var\\lib\\kubelet", want: out("D:\\var\\lib\\kubelet") },
    { name: "drive root", path: "C:\\", want: out("C:\\") },
    { name: "trailing backslash on an outside path is reported", path: "C:\\Windows\\", want: out("C:\\Windows\\", "C:\\Windows") },
    { name: "symlink pointing to another drive", path: "C:\\var\\lib\\kubelet\\link\\x", want: out("C:\\var\\lib\\kubelet\\link\\x", "D:\\data\\x") },
    { name: "symlink pointing out, not followed: the link itself", path: "C:\\var\\lib\\kubelet\\link", want: "C:\\var\\lib\\kubelet\\link" },
    { name: "symlink pointing out, followed", path: "C:\\var\\lib\\kubelet\\link", followFinal: true, want: out("C:\\var\\lib\\kubelet\\link", "D:\\data") },
    { name: "resolver answering with \\\\?\\C:\\ is understood", path: "C:\\var\\lib\\kubelet\\nsprefix\\x", want: "C:\\var\\lib\\kubelet\\pods\\x" },
    { name: "resolver answering with \\\\?\\UNC\\ is outside", path: "C:\\var\\lib\\kubelet\\unc\\x", want: out("C:\\var\\lib\\kubelet\\unc\\x", "\\\\server\\share\\x") },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const policy = createPathPolicy({ platform: "win32", allowedDirs, resolve: fakeResolver(tree, "win32").resolve });
      await expectOutcome(() => policy.check(c.path, { followFinal: c.followFinal }), c.want);
    });
  }

  const variants: (Case & { allowedDirs: string[] })[] = [
    { name: "allowed dir configured with trailing backslash", allowedDirs: ["C:\\csi\\"], path: "C:\\csi\\x", want: "C:\\csi\\x" },
    {
      name: "allowed dir configured with trailing backslash, prefix sibling",
      allowedDirs: ["C:\\csi\\"],
      path: "C:\\csix",
      want: denied("path: C:\\csix is not within the working directories: [C:\\csi\\]"),
    },
    { name: "allowed dir configured with forward slashes", allowedDirs: ["C:/csi"], path: "C:\\csi\\x", want: "C:\\csi\\x" },
    { name: "non-ASCII case-insensitive match", allowedDirs: ["C:\\Über"], path: "c:\\über\\x", want: "c:\\über\\x" },
    {
      name: "no length-changing case folding (ß is not SS)",
      allowedDirs: ["C:\\straße"],
      path: "C:\\STRASSE\\x",
      want: denied("path: C:\\STRASSE\\x is not within the working directories: [C:\\straße]"),
    },
  ];
  for (const c of variants) {
    it(c.name, async () => {
      const policy = createPathPolicy({ platform: "win32", allowedDirs: c.allowedDirs, resolve: async () => null });
      await expectOutcome(() => policy.check(c.path, { followFinal: c.followFinal }), c.want);
    });
  }

  it("rejects a drive-less allowed dir at construction", () => {
    assert.throws(
      () => createPathPolicy({ platform: "win32", allowedDirs: ["\\var\\lib\\kubelet"], resolve: async () => null }),
      (e) => assertError(e, invalid('allowed directory is not an absolute path: "\\\\var\\\\lib\\\\kubelet"')),
    );
  });
});

describe("createPathPolicy() with bindSources (a bind mount is treated like a link)", () => {
  const identity: PathResolver = async (p) => p;
  /** Bind mounts by mount point → source directory. */
  const binds = (map: Record<string, string>) => async (paths: readonly string[]) =>
    paths.map((p) => {
      for (const [at, src] of Object.entries(map)) if (isWithin(p, at, "linux")) return src + p.slice(at.length);
      return null;
    });

  it("refuses a path inside a bind mount of an outside directory, naming the source", async () => {
    const policy = createPathPolicy({ platform: "linux", allowedDirs: ["/var/lib/kubelet"], resolve: identity, bindSources: binds({ "/var/lib/kubelet/b": "/etc" }) });
    await expectOutcome(() => policy.check("/var/lib/kubelet/b/x"), {
      code: Code.PermissionDenied,
      message: "path /var/lib/kubelet/b/x is not within the allowed directories [/var/lib/kubelet] (resolved to /etc/x)",
    });
    await expectOutcome(() => policy.check("/var/lib/kubelet/other"), "/var/lib/kubelet/other");
  });

  it("refuses a path in a bind mount below an allowed dir whose source cannot be seen; an allowed dir in such a mount is taken as it is", async () => {
    const unseen = (at: string) => async (paths: readonly string[]) => paths.map((p) => (isWithin(p, at, "linux") ? { unseen: at } : null));
    const below = createPathPolicy({ platform: "linux", allowedDirs: ["/var/lib/kubelet"], resolve: identity, bindSources: unseen("/var/lib/kubelet/b") });
    await expectOutcome(() => below.check("/var/lib/kubelet/b/x"), {
      code: Code.PermissionDenied,
      message:
        "path /var/lib/kubelet/b/x is not within the allowed directories [/var/lib/kubelet] (resolved to /var/lib/kubelet/b/x, in a bind mount at /var/lib/kubelet/b whose source directory cannot be seen)",
    });
    await expectOutcome(() => below.check("/var/lib/kubelet/other"), "/var/lib/kubelet/other");
    const container = createPathPolicy({ platform: "linux", allowedDirs: ["/var/lib/kubelet"], resolve: identity, bindSources: unseen("/var/lib/kubelet") });
    await expectOutcome(() => container.check("/var/lib/kubelet/pods/a"), "/var/lib/kubelet/pods/a");
    const above = createPathPolicy({ platform: "linux", allowedDirs: ["/var/lib/kubelet"], resolve: identity, bindSources: unseen("/var/lib") });
    await expectOutcome(() => above.check("/var/lib/kubelet/pods/a"), "/var/lib/kubelet/pods/a");
  });

  it("accepts bind mounts whose source is inside an allowed dir, or inside an allowed dir's own bind source", async () => {
    const inside = createPathPolicy({ platform: "linux", allowedDirs: ["/var/lib/kubelet"], resolve: identity, bindSources: binds({ "/var/lib/kubelet/sub": "/var/lib/kubelet/src" }) });
    await expectOutcome(() => inside.check("/var/lib/kubelet/sub/a"), "/var/lib/kubelet/sub/a");
    const relocated = createPathPolicy({ platform: "linux", allowedDirs: ["/var/lib/kubelet"], resolve: identity, bindSources: binds({ "/var/lib/kubelet": "/data/kubelet" }) });
    await expectOutcome(() => relocated.check("/var/lib/kubelet/pods/a"), "/var/lib/kubelet/pods/a");
  });
});
