/**
 * checkServerFlags (server-config-check.ts): each refused value is one line naming its flag, the value
 * and the cause; a missing or non-directory kubelet path is a warning, not a refusal.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, describe, it } from "node:test";
import { checkBindAddress, checkServerFlags } from "./server-config-check.ts";

const dir = mkdtempSync(path.join(tmpdir(), "config-check-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const good = { "kubelet-path": dir, "working-dir": [], "state-dir": "/var/lib/csi-proxy", "host-command-timeout": 0, "default-fs-type": "ext4", "iscsi-node-db": "", "metrics-bind-address": "", "windows-service": false, "pipe-sddl": "" };
const check = (over: Record<string, unknown>, platform: NodeJS.Platform = "linux") => checkServerFlags({ ...good, ...over }, platform);

describe("checkServerFlags", () => {
  it("accepts the defaults and an existing kubelet directory without a word", () => {
    assert.deepEqual(check({}), { errors: [], warnings: [] });
  });

  it("names the flag and the cause for every refused value", () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ "kubelet-path": "var/lib/kubelet" }, /^-kubelet-path "var\/lib\/kubelet" must be an absolute path$/],
      [{ "working-dir": ["/ok", "rel"] }, /^-working-dir "rel" must be an absolute path$/],
      [{ "state-dir": "state" }, /^-state-dir "state" must be an absolute path$/],
      [{ "metrics-bind-address": "127.0.0.1:99999" }, /^-metrics-bind-address "127\.0\.0\.1:99999": port 99999 is out of range \(0-65535\)$/],
      [{ "metrics-bind-address": "localhost" }, /^-metrics-bind-address "localhost": not host:port/],
      [{ "default-fs-type": "btrfs" }, /^-default-fs-type must be ext4 or xfs, not "btrfs"$/],
      [{ "host-command-timeout": -1 }, /^-host-command-timeout must be 0 or a number of seconds, not -1$/],
      [{ "iscsi-node-db": "nodes" }, /^-iscsi-node-db "nodes" must be an absolute path$/],
      [{ "windows-service": true }, /^-windows-service is only supported on Windows$/],
      [{ "pipe-sddl": "D:P" }, /^-pipe-sddl is only supported on Windows$/],
    ];
    for (const [over, line] of cases) {
      const { errors } = check(over);
      assert.equal(errors.length, 1, `${JSON.stringify(over)}: ${errors.join(" | ")}`);
      assert.match(errors[0], line);
    }
  });

  it("bind addresses: host:port, [v6]:port and :port in range pass", () => {
    for (const ok of ["127.0.0.1:9090", "[::1]:0", ":65535", "node-1:8080"]) assert.equal(checkBindAddress(ok), null, ok);
  });

  it("warns (does not refuse) when the kubelet directory is missing or not a directory", () => {
    const missing = check({ "kubelet-path": path.join(dir, "absent") });
    assert.deepEqual(missing.errors, []);
    assert.match(missing.warnings.join("\n"), /^-kubelet-path \S+absent does not exist \(yet\)/);
    const file = path.join(dir, "file");
    writeFileSync(file, "");
    assert.match(check({ "kubelet-path": file }).warnings.join("\n"), /is not a directory/);
  });

  it("Windows paths are judged as Windows paths", () => {
    assert.deepEqual(check({ "kubelet-path": "C:\\var\\lib\\kubelet", "state-dir": "C:\\ProgramData\\csi-proxy", "windows-service": true }, "win32").errors, []);
    assert.match(check({ "kubelet-path": "var\\lib" }, "win32").errors[0], /^-kubelet-path/);
  });
});
