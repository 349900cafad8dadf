// In-use facts on this machine: the kernel's exclusive claim on a loop device of this test's own,
// swaps as /proc/swaps lists them, and this namespace's mounts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { createDeviceClaims } from "./device-claims.ts";
import { decodeDev } from "./block-parsers.ts";
import { loopDeviceSkipReason, withLoopDevice } from "../../../../test/helpers/loop-device.ts";
import { Code } from "../../../errors.ts";

const MiB = 1024 * 1024;

it("swap devices: one per /proc/swaps line that still exists", async () => {
  const lines = readFileSync("/proc/swaps", "utf8").trim().split("\n").slice(1).filter(Boolean);
  assert.ok((await createDeviceClaims().readSwapDevices()).length <= lines.length);
});

it("the filesystem holding / is mounted at / in this process's namespace", async () => {
  const st = statSync("/", { bigint: true });
  const dev = decodeDev(st.dev);
  const mounts = await createDeviceClaims().mountsInAnyNamespace(dev);
  assert.ok(mounts.some((m) => m.mountPoint === "/"), JSON.stringify(mounts));
});

describe("the exclusive claim", { skip: loopDeviceSkipReason() ?? false }, () => {
  it("held: a second claim is refused; released (idempotently): it can be taken again; another device number: refused", () =>
    withLoopDevice(4 * MiB, "claims", async (loop) => {
      const claims = createDeviceClaims();
      const dev = { major: loop.major, minor: loop.minor };
      const held = await claims.claimExclusive(loop.device, dev);
      const t = performance.now();
      await assert.rejects(claims.claimExclusive(loop.device, dev), { code: Code.FailedPrecondition, message: /is in use/ });
      assert.ok(performance.now() - t >= 400, "a busy device is retried for about half a second first");
      await held.release();
      await held.release();
      await (await claims.claimExclusive(loop.device, dev)).release();
      await assert.rejects(claims.claimExclusive(loop.device, { major: dev.major, minor: dev.minor + 1 }), { code: Code.FailedPrecondition, message: /is now device/ });
      assert.deepEqual(await claims.deviceOpeners([dev]), [], "no process holds it");
    }));

  it("a node that is gone: FailedPrecondition, the device changed", async () => {
    await assert.rejects(createDeviceClaims().claimExclusive("/dev/csi-proxy-no-such-node", { major: 7, minor: 0 }), { code: Code.FailedPrecondition, message: /is gone/ });
  });
});
