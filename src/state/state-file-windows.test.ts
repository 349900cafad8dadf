import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { describe, it } from "node:test";
import { Code, CsiProxyError } from "../errors.ts";
import { readWindowsStateFile, type NoReparseOpenApi } from "./state-file-windows.ts";

const FILE = "C:\\ProgramData\\csi-proxy\\smb-mappings.json";

/** A Win32 stand-in: one entry with the given attributes (null: missing); records the call order. */
function fakeApi(attrs: number | null) {
  const calls: string[] = [];
  let open = 0;
  const api: NoReparseOpenApi<number> = {
    async openEntryNoFollow(path, forDelete) {
      calls.push(`open ${path} ${forDelete}`);
      if (attrs === null) return null;
      open++;
      return 7;
    },
    async getFileAttributes(path) {
      calls.push(`attrs ${path}`);
      return attrs;
    },
    async closeHandle(h) {
      calls.push(`close ${h}`);
      open--;
    },
  };
  const read = async (path: string) => {
    calls.push(`read ${path} (entry held: ${open === 1})`);
    return "{}";
  };
  return { api, read, calls, open: () => open };
}

describe("readWindowsStateFile", () => {
  it("reads a plain file only while its entry is held open without following reparse points", async () => {
    const f = fakeApi(0x20 /* ARCHIVE */);
    assert.equal(await readWindowsStateFile(FILE, f.api, f.read), "{}");
    assert.deepEqual(f.calls, [`open ${FILE} false`, `attrs ${FILE}`, `read ${FILE} (entry held: true)`, "close 7"]);
  });

  it("refuses a reparse point (symbolic link, junction) with FailedPrecondition naming the file, reading nothing", async () => {
    for (const attrs of [0x400, 0x400 | 0x10, 0x400 | 0x20]) {
      const f = fakeApi(attrs);
      await assert.rejects(readWindowsStateFile(FILE, f.api, f.read), (err: unknown) => {
        assert.ok(err instanceof CsiProxyError && err.code === Code.FailedPrecondition);
        assert.match(err.message, /state file C:\\ProgramData\\csi-proxy\\smb-mappings\.json is a reparse point/);
        return true;
      });
      assert.ok(!f.calls.some((c) => c.startsWith("read")), "nothing read");
      assert.equal(f.open(), 0, "handle closed");
    }
  });

  it("refuses a directory and answers null for a missing file", async () => {
    const dir = fakeApi(0x10);
    await assert.rejects(readWindowsStateFile(FILE, dir.api, dir.read), /is not a regular file/);
    assert.equal(dir.open(), 0);
    const missing = fakeApi(null);
    assert.equal(await readWindowsStateFile(FILE, missing.api, missing.read), null);
  });

  it("the Windows services read smb-mappings.json through it (static check of the wiring)", async () => {
    const compose = await readFile(new URL("../compose/windows.ts", import.meta.url), "utf8");
    assert.match(compose, /smbStateFile\(config\.stateDir, \{ read: \(file\) => readWindowsStateFile\(file, win32\) \}\)/);
  });
});
