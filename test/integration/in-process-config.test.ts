// The in-process configuration is checked as the daemon's flags are: every wrong option (well over
// 100 of them, each kind of mistake per option) is an InvalidArgument CsiProxyError naming the
// option and what it expects — thrown synchronously by the client's constructor, a rejection of
// createInProcessApi — and never a TypeError. Signals are AbortSignals by brand, not instanceof.
// Without a logger, warnings go to stderr.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { InProcessCsiProxyClient } from "../../src/in-process/in-process-client.ts";
import { createInProcessApi } from "../../src/in-process/typed-api.ts";
import { checkInProcessConfig, stderrLogger } from "../../src/in-process/in-process-config.ts";
import { CsiProxyError, Code } from "../../src/errors.ts";

let root: string, kubelet: string, stateDir: string;
const quiet = { info: () => {}, warning: () => {} };
before(() => {
  root = mkdtempSync(path.join(tmpdir(), "csi-proxy-config-"));
  kubelet = path.join(root, "kubelet");
  stateDir = path.join(root, "state");
  mkdirSync(kubelet);
});
after(() => rmSync(root, { recursive: true, force: true }));

const other = process.platform === "win32" ? "linux" : "win32";
const { proxy: revoked, revoke } = Proxy.revocable({}, {});
revoke();

/** Wrong values per option, each a different kind of mistake. */
const WRONG: Record<string, unknown[]> = {
  platform: [other, "windows", "Linux", "", 5, null, true, {}, ["linux"]],
  kubeletPath: ["", "kubelet", "./kubelet", "../x", "~/kubelet", 5, true, null, [], {}, "/var/lib/\0kubelet", `/${"x".repeat(40_000)}`, ...(process.platform === "win32" ? ["/var/lib/kubelet", "C:kubelet"] : ["C:\\var\\lib\\kubelet", "\\\\srv\\share\\x"])],
  workingDirs: ["/tmp", "", 5, null, true, {}, ["rel"], [5], [null], [["/tmp"]], ["/ok", "rel"], ["/a\0"], Array.from({ length: 1001 }, () => "/tmp"), revoked],
  socketDir: [5, "rel", null, true, [], {}, "/a\0b"],
  requirePrivacy: ["yes", "true", "false", 1, 0, null, [], {}, "", Symbol("t")],
  defaultFsType: ["btrfs", "EXT4", "ntfs", "", 5, null, ["ext4"], {}, true],
  pipeSddl: [5, {}, null, true, [], "D:\0"],
  stateDir: ["state", "", "./state", "~/state", 5, null, true, [], {}, "/var/\0lib"],
  lockDir: ["locks", "", "./locks", 5, null, true, [], {}, "/run/\0locks"],
  allowedServices: ["svc", "", 5, null, {}, true, [""], [5], [null], [{}], ["ok", 7], ["x".repeat(300)]],
  logger: [{}, { info() {} }, { warning() {} }, { info: 1, warning: 2 }, 5, "stderr", null, true, []],
};

/** Whole configs that are not an object of options, or carry unknown or unreadable options. */
const WRONG_WHOLE: [string, unknown, RegExp][] = [
  ["null", null, /^config: expected an object/],
  ["a number", 5, /^config: expected an object/],
  ["a string", "/var/lib/kubelet", /^config: expected an object/],
  ["an array", [], /^config: expected an object/],
  ["a function", () => ({}), /^config: expected an object/],
  ["unknown option", { kubeletPath: "/k", working_dir: ["/x"] }, /^config: unknown option "working_dir"/],
  ["flag name", { "kubelet-path": "/k" }, /^config: unknown option "kubelet-path"/],
  ["a revoked proxy", revoked, /^config: expected a plain object of options, got one that cannot be read/],
  ["a throwing getter", { get stateDir() { throw new Error("no"); } }, /^config\.stateDir: reading it threw: no/],
  ["a proxy whose keys throw", new Proxy({}, { ownKeys() { throw new Error("keys"); } }), /^config: expected a plain object of options, got an object whose keys cannot be listed/],
];

function expectInvalid(what: string, run: () => unknown, text: RegExp): void {
  try {
    run();
  } catch (e) {
    assert.ok(!(e instanceof TypeError), `${what}: a TypeError escaped: ${(e as Error).message}`);
    assert.ok(e instanceof CsiProxyError, `${what}: ${String(e)}`);
    assert.equal(e.code, Code.InvalidArgument, `${what}: ${e.message}`);
    assert.match(e.message, text, what);
    return;
  }
  assert.fail(`${what}: accepted`);
}

describe("in-process config: checked like flags", () => {
  it("refuses every wrong option (≥ 100 configs) synchronously with InvalidArgument naming it; createInProcessApi rejects the same", async () => {
    let count = 0;
    for (const [option, values] of Object.entries(WRONG)) {
      for (const [i, value] of values.entries()) {
        const config = { kubeletPath: kubelet, stateDir, logger: quiet, [option]: value };
        const what = `${option} #${i}`;
        const text = new RegExp(`^config\\.${option}(\\[\\d+\\])?: expected `);
        expectInvalid(what, () => InProcessCsiProxyClient(config as never), text);
        expectInvalid(`new ${what}`, () => new InProcessCsiProxyClient(config as never), text);
        await assert.rejects(createInProcessApi(config as never), (e: unknown) => e instanceof CsiProxyError && e.code === Code.InvalidArgument && text.test(e.message), what);
        count++;
      }
    }
    for (const [what, config, text] of WRONG_WHOLE) {
      expectInvalid(what, () => InProcessCsiProxyClient(config as never), text);
      await assert.rejects(createInProcessApi(config as never), { code: Code.InvalidArgument }, what);
      count++;
    }
    assert.ok(count >= 100, `${count} wrong configs`); // 110 today
  });

  it("says what is expected: absolute path, array, boolean, known filesystem, running platform", () => {
    const base = { kubeletPath: kubelet, stateDir, logger: quiet };
    expectInvalid("relative stateDir", () => InProcessCsiProxyClient({ ...base, stateDir: "state" }), /^config\.stateDir: expected an absolute path \(\/…\), got the string "state"$/);
    expectInvalid("a string as workingDirs", () => InProcessCsiProxyClient({ ...base, workingDirs: "/tmp" as never }), /^config\.workingDirs: expected an array, got the string "\/tmp"$/);
    expectInvalid("requirePrivacy yes", () => InProcessCsiProxyClient({ ...base, requirePrivacy: "yes" as never }), /^config\.requirePrivacy: expected a boolean \(true or false\), got the string "yes"$/);
    expectInvalid("btrfs", () => InProcessCsiProxyClient({ ...base, defaultFsType: "btrfs" as never }), /^config\.defaultFsType: expected "ext4" or "xfs", got the string "btrfs"$/);
    expectInvalid("other platform", () => InProcessCsiProxyClient({ ...base, platform: other }), new RegExp(`^config\\.platform: expected the running platform, "${process.platform === "win32" ? "win32" : "linux"}"`));
  });

  it("refuses wrong client options (second argument) the same way", () => {
    const base = { kubeletPath: kubelet, stateDir, logger: quiet };
    const wrong: [unknown, RegExp][] = [
      [null, /^options: expected an object/], [5, /^options: expected an object/], [[], /^options: expected an object/],
      [{ service: {} }, /^options: unknown option "service"/], [{ services: 5 }, /^options\.services: expected an object keyed by group/],
      [{ services: { Filesystem: {} } }, /^options\.services: unknown group "Filesystem"/], [{ services: { disk: "v1" } }, /^options\.services\.disk: expected an object/],
      [{ services: { disk: { version: 1 } } }, /^options\.services\.disk\.version: expected a version/], [{ services: { disk: { versions: "v1" } } }, /^options\.services\.disk: unknown option "versions"/],
      [{ pipe_prefix: 5 }, /^options\.pipe_prefix: expected a string/], [revoked, /^options: expected a plain object/],
    ];
    for (const [i, [options, text]] of wrong.entries()) expectInvalid(`options #${i}`, () => InProcessCsiProxyClient(base, options as never), text);
  });

  it("takes an AbortSignal by brand: an object inheriting AbortSignal.prototype is InvalidArgument, not a TypeError", async () => {
    const api = await createInProcessApi({ kubeletPath: kubelet, stateDir, logger: quiet });
    for (const signal of [Object.create(AbortSignal.prototype), new EventTarget(), { aborted: false }]) {
      await assert.rejects(api.filesystem.v1.pathExists({ path: kubelet }, { signal }), (e: unknown) => {
        assert.ok(e instanceof CsiProxyError && e.code === Code.InvalidArgument, String(e));
        assert.equal(e.message, "options.signal: expected an AbortSignal");
        return true;
      });
    }
    assert.equal((await api.filesystem.v1.pathExists({ path: kubelet }, { signal: AbortSignal.timeout(10_000) })).exists, true);
  });

  it("a lock directory others could write fails every call with a coded error naming the fix: no call runs without node-wide locks", async () => {
    if (process.platform !== "linux") return;
    const lockDir = path.join(root, "open-locks");
    mkdirSync(lockDir);
    chmodSync(lockDir, 0o777);
    const client = InProcessCsiProxyClient({ kubeletPath: kubelet, stateDir, lockDir, logger: quiet });
    for (const [group, method, request] of [["filesystem", "PathExists", { path: kubelet }], ["disk", "ListDiskLocations", {}]] as const) {
      const err = await client.executeRPC(group, method, request).then(() => null, (e: Error & { code: number; details: string }) => e);
      assert.ok(err, `${group} ${method} failed`);
      assert.equal(err.code, Code.Unavailable);
      assert.match(err.details, new RegExp(`^csi-proxy in-process set-up failed \\(FailedPrecondition\\): lock directory ${lockDir} \\(-lock-dir\\) is group- or world-writable .*\\(fix: chmod 0700 ${lockDir}\\)`));
    }
    await assert.rejects(client.ready, { code: Code.Unavailable });
  });

  it("fills the flags' defaults and, without a logger, writes warnings to stderr", async () => {
    const filled = checkInProcessConfig({});
    assert.deepEqual({ ...filled, logger: undefined }, {
      platform: process.platform === "win32" ? "win32" : "linux",
      kubeletPath: process.platform === "win32" ? "C:\\var\\lib\\kubelet" : "/var/lib/kubelet",
      workingDirs: [], socketDir: "", requirePrivacy: true, defaultFsType: "ext4",
      stateDir: process.platform === "win32" ? "C:\\ProgramData\\csi-proxy" : "/var/lib/csi-proxy",
      lockDir: process.platform === "win32" ? path.win32.join(process.env.ProgramData || "C:\\ProgramData", "csi-proxy", "locks") : "/run/csi-proxy-locks",
      allowedServices: [], logger: undefined,
    });
    assert.equal(filled.logger, stderrLogger);
    // A lock directory no daemon marked (a pod without the hostPath mount) makes the set-up warn, on stderr.
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => (written.push(String(chunk)), true)) as typeof process.stderr.write;
    try {
      await createInProcessApi({ kubeletPath: kubelet, stateDir, lockDir: path.join(root, "unmarked-locks") });
    } finally {
      process.stderr.write = write;
    }
    assert.ok(written.some((line) => line.startsWith(`csi-proxy in-process: warning: lock directory ${path.join(root, "unmarked-locks")} has no mark of a csi-proxy daemon`) && line.endsWith("\n")), JSON.stringify(written));
  });
});
