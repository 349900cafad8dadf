import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, CsiProxyError } from "../../errors.ts";
import { MAX_REMOTE_PATH_BYTES, cutForError, parseRemotePath, quoteForError } from "./remote-path.ts";

const invalid = (message: RegExp) => (err: unknown) => {
  assert.ok(err instanceof CsiProxyError, String(err));
  assert.equal(err.code, Code.InvalidArgument);
  assert.match(err.message, message);
  return true;
};

describe("parseRemotePath", () => {
  it("normalises slashes and empty components, keys by the lower-cased root, keeps the original case", () => {
    assert.deepEqual(parseRemotePath("//Server.example/Share//sub/Dir/"), {
      root: "\\\\server.example\\share",
      remotePath: "\\\\Server.example\\Share\\sub\\Dir",
      server: "Server.example",
      share: "Share",
      subPath: ["sub", "Dir"],
    });
    assert.deepEqual(parseRemotePath("\\\\10.0.0.5\\data").subPath, []);
  });

  it("upstream's two texts: empty, and fewer than two components", () => {
    assert.throws(() => parseRemotePath(""), invalid(/^remote path is empty$/));
    assert.throws(() => parseRemotePath("\\\\server"), invalid(/^remote path \(\\\\server\) is invalid$/));
    assert.throws(() => parseRemotePath("////"), invalid(/is invalid$/));
  });

  it("refuses what upstream passes on: oversized, control characters, bad server, share or component", () => {
    assert.throws(() => parseRemotePath(`\\\\s\\${"a".repeat(MAX_REMOTE_PATH_BYTES)}`), invalid(/exceeds maximum bytes: 4096/));
    assert.throws(() => parseRemotePath("\\\\s\\share\x00x"), invalid(/contains control characters/));
    assert.throws(() => parseRemotePath("\\\\bad host\\share"), invalid(/server "bad host" is not a host name or IPv4 address/));
    assert.throws(() => parseRemotePath("\\\\-lead\\share"), invalid(/is not a host name/));
    for (const share of ["sh:are", "a*b", "..", ". .", "x".repeat(81)]) {
      assert.throws(() => parseRemotePath(`\\\\srv\\${share}`), invalid(/invalid share name/), share);
    }
    for (const name of ["..", ".", "...", " . ", "a?b", "a|b", "x".repeat(256)]) {
      assert.throws(() => parseRemotePath(`\\\\srv\\share\\${name}`), invalid(/invalid path component/), name);
    }
  });

  it("cuts quoted input at 200 characters in messages", () => {
    assert.equal(cutForError("x".repeat(250)), `${"x".repeat(200)}...`);
    assert.equal(quoteForError("a\"b"), JSON.stringify("a\"b"));
    assert.throws(() => parseRemotePath(`\\\\${"b".repeat(300)}\\s`), (err: unknown) => (err as Error).message.length < 600);
  });
});
