import assert from "node:assert/strict";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { Code, CsiProxyError } from "../errors.ts";
import { isWithin } from "./path-arithmetic.ts";
import { createPathPolicy } from "./path-policy.ts";
import { createFsResolver, type PathResolver } from "./path-resolver.ts";
import type { Platform } from "./path-syntax.ts";
import { WINDOWS_SYNTAX_ERRORS } from "../../test/helpers/windows-path-syntax-cases.ts";

/** Expected outcome of one case: the returned path, or a coded error with its exact message (or a pattern). */
type Want = string | { code: Code; message: string | RegExp };

interface Case {
  name: string;
  path: string;
  followFinal?: boolean;
  want: Want;
}

function assertError(e: unknown, want: { code: Code; message: string | RegExp }): true {
  assert.ok(e instanceof CsiProxyError, `expected a CsiProxyError, got ${String(e)}`);
  assert.equal(e.code, want.code, `code of "${e.message}"`);
  if (typeof want.message === "string") assert.equal(e.message, want.message);
  else assert.match(e.message, want.message);
  return true;
}

async function expectOutcome(run: () => Promise<string>, want: Want): Promise<void> {
  if (typeof want === "string") {
    assert.equal(await run(), want);
  } else {
    await assert.rejects(run(), (e) => assertError(e, want));
  }
}

/**
 * Fake resolver over a table "existing path → its canonical path" (a symlink is an entry whose value
 * differs from its key). Everything else does not exist. Records every path asked about.
 */
function fakeResolver(entries: Record<string, string>, platform: Platform = "linux") {
  const fold = (p: string) => (platform === "win32" ? p.toLowerCase() : p);
  const table = new Map(Object.entries(entries).map(([k, v]) => [fold(k), v]));
  const calls: string[] = [];
  const resolve: PathResolver = async (p) => {
    calls.push(p);
    return table.get(fold(p)) ?? null;
  };
  return { resolve, calls };
}

const denied = (message: string | RegExp) => ({ code: Code.PermissionDenied, message });
const invalid = (message: string | RegExp) => ({ code: Code.InvalidArgument, message });

describe("createPathPolicy() on linux, fake resolver", () => {
  const tree = {
    "/": "/",
    "/var": "/var",
    "/var/lib": "/var/lib",
    "/var/lib/kubelet": "/var/lib/kubelet",
    "/var/lib/kubelet/pods": "/var/lib/kubelet/pods",
    "/var/lib/kubelet/pods/p1": "/var/lib/kubelet/pods/p1",
    "/var/lib/kubelet/escape": "/etc", // symlink pointing out
    "/var/lib/kubelet/inner": "/var/lib/kubelet/pods", // symlink pointing in
    "/var/lib/kubelet-x": "/var/lib/kubelet-x",
    "/etc": "/etc",
    "/etc/passwd": "/etc/passwd",
    "/csi": "/csi",
  };
  const dirs = "[/csi /var/lib/kubelet]";
  const out = (p: string, resolved?: string) =>
    denied(`path ${p} is not within the allowed directories ${dirs}${resolved ? ` (resolved to ${resolved})` : ""}`);
  const longName = "a".repeat(4096 - "/var/lib/kubelet/".length);

  const cases: Case[] = [
    // boundaries
    { name: "allowed dir itself (equal path)", path: "/var/lib/kubelet", want: "/var/lib/kubelet" },
    { name: "allowed dir with trailing slash", path: "/var/lib/kubelet/", want: "/var/lib/kubelet" },
    { name: "allowed dir itself with followFinal", path: "/var/lib/kubelet", followFinal: true, want: "/var/lib/kubelet" },
    { name: "existing subdirectory", path: "/var/lib/kubelet/pods/p1", want: "/var/lib/kubelet/pods/p1" },
    { name: "duplicate slashes, dot and trailing slash", path: "//var//lib/./kubelet//pods/", want: "/var/lib/kubelet/pods" },
    { name: "working dir (first allowed dir)", path: "/csi/vol1", want: "/csi/vol1" },
    { name: "sibling sharing the prefix (kubelet-x)", path: "/var/lib/kubelet-x", want: out("/var/lib/kubelet-x") },
    { name: "inside the sibling sharing the prefix", path: "/var/lib/kubelet-x/pods", want: out("/var/lib/kubelet-x/pods") },
    { name: "sibling of a working dir (csi2)", path: "/csi2/x", want: out("/csi2/x") },
    { name: "parent of the allowed dir", path: "/var/lib", want: out("/var/lib") },
    { name: "filesystem root", path: "/", want: out("/") },
    { name: "plainly outside", path: "/etc/passwd", want: out("/etc/passwd") },
    // `..`
    { name: "`..` staying inside", path: "/var/lib/kubelet/pods/../pods/p1", want: "/var/lib/kubelet/pods/p1" },
    { name: "`..` back to the allowed dir", path: "/var/lib/kubelet/pods/..", want: "/var/lib/kubelet" },
    { name: "`..` escaping to the parent", path: "/var/lib/kubelet/..", want: out("/var/lib/kubelet/..", "/var/lib") },
    {
      name: "`..` escaping far out",
      path: "/var/lib/kubelet/../../../etc/passwd",
      want: out("/var/lib/kubelet/../../../etc/passwd", "/etc/passwd"),
    },
    { name: "`..` past the root", path: "/../../var/lib/kubelet/x", want: "/var/lib/kubelet/x" },
    { name: "`..` into the prefix sibling", path: "/var/lib/kubelet/../kubelet-x/y", want: out("/var/lib/kubelet/../kubelet-x/y", "/var/lib/kubelet-x/y") },
    // nonexistent paths
    { name: "nonexistent deep path under an allowed dir", path: "/var/lib/kubelet/pods/p1/volumes/a/b/c", want: "/var/lib/kubelet/pods/p1/volumes/a/b/c" },
    { name: "nonexistent final with followFinal", path: "/var/lib/kubelet/pods/new", followFinal: true, want: "/var/lib/kubelet/pods/new" },
    // symlinks
    { name: "parent symlink pointing out", path: "/var/lib/kubelet/escape/passwd", want: out("/var/lib/kubelet/escape/passwd", "/etc/passwd") },
    { name: "nonexistent path under a symlink pointing out", path: "/var/lib/kubelet/escape/new/dir", want: out("/var/lib/kubelet/escape/new/dir", "/etc/new/dir") },
    { name: "final symlink pointing out, not followed: the link itself", path: "/var/lib/kubelet/escape", want: "/var/lib/kubelet/escape" },
    { name: "final symlink pointing out, followed", path: "/var/lib/kubelet/escape", followFinal: true, want: out("/var/lib/kubelet/escape", "/etc") },
    { name: "final symlink pointing in, followed", path: "/var/lib/kubelet/inner", followFinal: true, want: "/var/lib/kubelet/pods" },
    { name: "final symlink pointing in, not followed", path: "/var/lib/kubelet/inner", want: "/var/lib/kubelet/inner" },
    { name: "parent symlink pointing in", path: "/var/lib/kubelet/inner/p1", want: "/var/lib/kubelet/pods/p1" },
    // malformed input
    { name: "empty path", path: "", want: invalid("path must not be empty [upstream: not an absolute Windows path]") },
    { name: "relative path", path: "var/lib/kubelet", want: invalid("not an absolute path: var/lib/kubelet [upstream: not an absolute Windows path]") },
    { name: "dot-relative path", path: "./kubelet", want: invalid("not an absolute path: ./kubelet [upstream: not an absolute Windows path]") },
    { name: "Windows path on linux", path: "C:\\var\\lib\\kubelet", want: invalid("not an absolute path: C:\\var\\lib\\kubelet [upstream: not an absolute Windows path]") },
    { name: "NUL byte", path: "/var/lib/kubelet/a\0b", want: invalid('path contains a NUL byte: "/var/lib/kubelet/a\\u0000b"') },
    { name: "exactly PATH_MAX (4096) bytes", path: `/var/lib/kubelet/${longName}`, want: `/var/lib/kubelet/${longName}` },
    { name: "4097 bytes", path: `/var/lib/kubelet/${longName}b`, want: invalid("path length 4097 exceeds maximum bytes: 4096") },
    { name: "multi-byte characters count as bytes", path: `/var/lib/kubelet/${"é".repeat(2040)}`, want: invalid("path length 4097 exceeds maximum bytes: 4096") },
    { name: "huge input", path: "/" + "x".repeat(1 << 20), want: invalid(`path length ${(1 << 20) + 1} exceeds maximum bytes: 4096`) },
    // odd unicode
    { name: "emoji and accents inside", path: "/var/lib/kubelet/pods/💾 ünïcödé", want: "/var/lib/kubelet/pods/💾 ünïcödé" },
    { name: "look-alike of the allowed dir", path: "/var/lib/kubeleť/x", want: out("/var/lib/kubeleť/x") },
    { name: "combining mark glued to the allowed dir name", path: "/var/lib/kubelet\u0301/x", want: out("/var/lib/kubelet\u0301/x") },
    { name: "fullwidth solidus and dots are plain name characters", path: "/var/lib/kubelet/\uff0e\uff0e\uff0f\uff0e\uff0e\uff0fetc", want: "/var/lib/kubelet/\uff0e\uff0e\uff0f\uff0e\uff0e\uff0fetc" },
    { name: "right-to-left override inside", path: "/var/lib/kubelet/\u202egpj.exe", want: "/var/lib/kubelet/\u202egpj.exe" },
    { name: "case differs (linux is case-sensitive)", path: "/var/lib/Kubelet/x", want: out("/var/lib/Kubelet/x") },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      const policy = createPathPolicy({ platform: "linux", allowedDirs: ["/csi", "/var/lib/kubelet"], resolve: fakeResolver(tree).resolve });
      await expectOutcome(() => policy.check(c.path, { followFinal: c.followFinal }), c.want);
    });
  }

  it("does not touch the filesystem for lexically outside paths", async () => {
    const fake = fakeResolver(tree);
    const policy = createPathPolicy({ platform: "linux", allowedDirs: ["/var/lib/kubelet"], resolve: fake.resolve });
    await policy.check("/var/lib/kubelet/pods"); // warms the allowed-dir cache
    fake.calls.length = 0;
    await assert.rejects(policy.check("/etc/shadow/x"), (e) => assertError(e, denied(/^path \/etc\/shadow\/x is not within/)));
    assert.deepEqual(fake.calls, []);
  });

  it("canonicalises existing allowed dirs once", async () => {
    const fake = fakeResolver(tree);
    const policy = createPathPolicy({ platform: "linux", allowedDirs: ["/var/lib/kubelet"], resolve: fake.resolve });
    await policy.check("/var/lib/kubelet/pods/p1");
    await policy.check("/var/lib/kubelet/pods/p1");
    assert.equal(fake.calls.filter((p) => p === "/var/lib/kubelet").length, 1);
  });

  it("exposes the configured dirs in order", () => {
    const policy = createPathPolicy({ platform: "linux", allowedDirs: ["/b", "/a/"], resolve: fakeResolver(tree).resolve });
    assert.deepEqual(policy.allowedDirs, ["/b", "/a/"]);
    assert.equal(policy.platform, "linux");
  });
});

describe("createPathPolicy() on linux, allowed dir variants", () => {
  const cases: (Case & { allowedDirs: string[]; tree: Record<string, string> })[] = [
    ...(
      [
        ["symlinked allowed dir: path through it", "/var/lib/kubelet/pods/x", false, "/data/kubelet/pods/x"],
        ["symlinked allowed dir: the link itself", "/var/lib/kubelet", false, "/var/lib/kubelet"],
        ["symlinked allowed dir: the link followed", "/var/lib/kubelet", true, "/data/kubelet"],
        ["symlinked allowed dir: its real path", "/data/kubelet/pods", false, "/data/kubelet/pods"],
        [
          "symlinked allowed dir: sibling of its real path",
          "/data/kubelet-x",
          false,
          denied("path /data/kubelet-x is not within the allowed directories [/var/lib/kubelet]"),
        ],
        [
          "symlinked allowed dir: sibling of the link",
          "/var/lib/other",
          false,
          denied("path /var/lib/other is not within the allowed directories [/var/lib/kubelet]"),
        ],
      ] as const
    ).map(([name, p, followFinal, want]) => ({
      name,
      path: p,
      followFinal,
      want,
      allowedDirs: ["/var/lib/kubelet"],
      tree: {
        "/": "/",
        "/var": "/var",
        "/var/lib": "/var/lib",
        "/var/lib/kubelet": "/data/kubelet",
        "/data": "/data",
        "/data/kubelet": "/data/kubelet",
        "/data/kubelet/pods": "/data/kubelet/pods",
      },
    })),
    {
      name: "missing allowed dir: deep path under it",
      path: "/missing/kubelet/a/b",
      want: "/missing/kubelet/a/b",
      allowedDirs: ["/missing/kubelet"],
      tree: { "/": "/" },
    },
    {
      name: "missing allowed dir: prefix sibling",
      path: "/missing/kubelet-x",
      want: denied("path /missing/kubelet-x is not within the allowed directories [/missing/kubelet]"),
      allowedDirs: ["/missing/kubelet"],
      tree: { "/": "/" },
    },
    {
      name: "allowed dir configured with trailing slash",
      path: "/var/lib/kubelet/x",
      want: "/var/lib/kubelet/x",
      allowedDirs: ["/var/lib/kubelet/"],
      tree: { "/": "/", "/var": "/var", "/var/lib": "/var/lib", "/var/lib/kubelet": "/var/lib/kubelet" },
    },
    {
      name: "no allowed dirs at all",
      path: "/var/lib/kubelet/x",
      want: denied("path /var/lib/kubelet/x is not within the allowed directories []"),
      allowedDirs: [],
      tree: { "/": "/" },
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const policy = createPathPolicy({ platform: "linux", allowedDirs: c.allowedDirs, resolve: fakeResolver(c.tree).resolve });
      await expectOutcome(() => policy.check(c.path, { followFinal: c.followFinal }), c.want);
    });
  }

  for (const [name, dir] of [
    ["empty allowed dir (would allow everything upstream)", ""],
    ["relative allowed dir", "var/lib/kubelet"],
  ] as const) {
    it(`rejects at construction: ${name}`, () => {
      assert.throws(
        () => createPathPolicy({ platform: "linux", allowedDirs: ["/csi", dir], resolve: async () => null }),
        (e) => assertError(e, invalid(`allowed directory is not an absolute path: ${JSON.stringify(dir)}`)),
      );
    });
  }
});

describe("createPathPolicy() resolver failures", () => {
  const errno = (code: string) => Object.assign(new Error(`${code}: boom`), { code });
  const cases: { name: string; resolve: PathResolver; want: { code: Code; message: string | RegExp } }[] = [
    { name: "ELOOP is the client's fault", resolve: async () => { throw errno("ELOOP"); }, want: invalid(/^failed to resolve \/var\/lib\/kubelet.*: ELOOP: boom$/) },
    { name: "ENAMETOOLONG is the client's fault", resolve: async () => { throw errno("ENAMETOOLONG"); }, want: invalid(/ENAMETOOLONG: boom$/) },
    { name: "other errors are internal", resolve: async () => { throw errno("EIO"); }, want: { code: Code.Internal, message: /EIO: boom$/ } },
    { name: "a killed FUSE server (ENOTCONN) is a dead mount: Unavailable", resolve: async () => { throw errno("ENOTCONN"); }, want: { code: Code.Unavailable, message: /ENOTCONN: boom$/ } },
    { name: "a request in flight when it was killed (ECONNABORTED): Unavailable", resolve: async () => { throw errno("ECONNABORTED"); }, want: { code: Code.Unavailable, message: /ECONNABORTED: boom$/ } },
    { name: "coded errors pass through", resolve: async () => { throw new CsiProxyError(Code.Unavailable, "host gone"); }, want: { code: Code.Unavailable, message: "host gone" } },
    { name: "a relative result is internal", resolve: async () => "relative/path", want: { code: Code.Internal, message: /resolver returned a non-absolute path$/ } },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const policy = createPathPolicy({ platform: "linux", allowedDirs: ["/var/lib/kubelet"], resolve: c.resolve });
      await assert.rejects(policy.check("/var/lib/kubelet/x"), (e) => assertError(e, c.want));
    });
  }
});

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
