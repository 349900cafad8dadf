// node:crypto stays unloaded until used: nodeCrypto() is Node's module, and a started, idle server
// (the real program, src/server-main.ts, on temporary directories) has not loaded it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import * as crypto from "node:crypto";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { nodeCrypto } from "./node-crypto.ts";

describe("nodeCrypto", () => {
  it("is node:crypto", () => {
    assert.equal(nodeCrypto().createHash, crypto.createHash);
    assert.equal(nodeCrypto().randomBytes, crypto.randomBytes);
    assert.equal(nodeCrypto().createHash("sha256").update("x").digest("hex"), "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881");
  });

  it("is not loaded by a server that has started and serves all endpoints", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "node-crypto-idle-"));
    try {
      const script = path.join(dir, "child.mjs");
      const serverMain = new URL("../server-main.ts", import.meta.url).href;
      writeFileSync(
        script,
        `const { runServer } = await import(${JSON.stringify(serverMain)});
         const argv = ["-socket-dir", ${JSON.stringify(path.join(dir, "sockets"))}, "-kubelet-path", ${JSON.stringify(dir)}, "-state-dir", ${JSON.stringify(path.join(dir, "state"))}];
         const code = await runServer(argv, { afterStart: async () => {
           process.stdout.write(JSON.stringify(process.moduleLoadList.filter((m) => /crypto/.test(m))) + "\\n");
           setImmediate(() => process.kill(process.pid, "SIGTERM"));
           return { summary: "" };
         } });
         process.exit(code);`,
      );
      const r = spawnSync(process.execPath, [script], { encoding: "utf8", timeout: 60_000 });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout.trim()), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
