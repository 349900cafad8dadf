import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, CsiProxyError } from "../errors.ts";
import { createPathPolicy } from "./path-policy.ts";
import { type PathResolver } from "./path-resolver.ts";
import { assertError, expectOutcome, fakeResolver, denied, invalid, type Case } from "../../test/helpers/path-policy-cases.ts";

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
