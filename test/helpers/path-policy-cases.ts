/**
 * Shared cases and fakes of the path policy suites (src/policy/path-policy*.test.ts).
 */
import assert from "node:assert/strict";
import { Code, CsiProxyError } from "../../src/errors.ts";
import type { PathResolver } from "../../src/policy/path-resolver.ts";
import type { Platform } from "../../src/policy/path-syntax.ts";

/** Expected outcome of one case: the returned path, or a coded error with its exact message (or a pattern). */
export type Want = string | { code: Code; message: string | RegExp };

export interface Case {
  name: string;
  path: string;
  followFinal?: boolean;
  want: Want;
}

export function assertError(e: unknown, want: { code: Code; message: string | RegExp }): true {
  assert.ok(e instanceof CsiProxyError, `expected a CsiProxyError, got ${String(e)}`);
  assert.equal(e.code, want.code, `code of "${e.message}"`);
  if (typeof want.message === "string") assert.equal(e.message, want.message);
  else assert.match(e.message, want.message);
  return true;
}

export async function expectOutcome(run: () => Promise<string>, want: Want): Promise<void> {
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
export function fakeResolver(entries: Record<string, string>, platform: Platform = "linux") {
  const fold = (p: string) => (platform === "win32" ? p.toLowerCase() : p);
  const table = new Map(Object.entries(entries).map(([k, v]) => [fold(k), v]));
  const calls: string[] = [];
  const resolve: PathResolver = async (p) => {
    calls.push(p);
    return table.get(fold(p)) ?? null;
  };
  return { resolve, calls };
}

export const denied = (message: string | RegExp) => ({ code: Code.PermissionDenied, message });
export const invalid = (message: string | RegExp) => ({ code: Code.InvalidArgument, message });
