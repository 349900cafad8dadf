/** Whether a path lies within another, per platform: component-wise, `..` resolved, Windows case-insensitive. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isWithin } from "./path-arithmetic.ts";
import type { Platform } from "./path-syntax.ts";

describe("isWithin()", () => {
  const cases: [child: string, parent: string, platform: Platform, want: boolean][] = [
    ["/a/b", "/a/b", "linux", true],
    ["/a/b/c", "/a/b", "linux", true],
    ["/a/bc", "/a/b", "linux", false],
    ["/a/b/", "/a/b", "linux", true],
    ["/a/b", "/a/b/", "linux", true],
    ["/a/b/../c", "/a/b", "linux", false],
    ["/a/b/c/..", "/a/b", "linux", true],
    ["/anything", "/", "linux", true],
    ["/A/b", "/a/b", "linux", false],
    ["/a", "/a/b", "linux", false],
    ["C:\\a\\b", "c:\\A\\B", "win32", true],
    ["C:\\a\\bc", "C:\\a\\b", "win32", false],
    ["C:\\var\\lib\\kubelet-x", "C:\\var\\lib\\kubelet", "win32", false],
    ["C:\\a\\b\\", "C:\\a\\b", "win32", true],
    ["C:/a/b/c", "C:\\a\\b", "win32", true],
    ["D:\\a\\b", "C:\\a\\b", "win32", false],
    ["C:\\x", "C:\\", "win32", true],
    ["C:\\ÜBER\\x", "c:\\über", "win32", true],
    ["C:\\STRASSE", "C:\\straße", "win32", false],
  ];
  for (const [child, parent, platform, want] of cases) {
    it(`${platform}: ${JSON.stringify(child)} in ${JSON.stringify(parent)} is ${want}`, () => {
      assert.equal(isWithin(child, parent, platform), want);
    });
  }
});
