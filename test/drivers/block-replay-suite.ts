// The replay suite every block driver shares: the daemon on the driver's own loop device, the node
// calls stage/publish/stats/expand/unpublish/unstage each twice and unstage after a stage that failed
// halfway (block-driver-model.ts), plus any checks of the driver's own (`extra`).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { blockSkipReason, startBlockEnv, type BlockEnv } from "./replay-harness.ts";
import { replayBlockDriver, type BlockDriverSpec, type BlockExpectations } from "./block-driver-model.ts";

/** Registers `${spec.name} replay`; `label` names its loop device and directories; `extra` adds its own tests (given the running env). */
export function describeBlockReplay(spec: BlockDriverSpec, label: string, expect: BlockExpectations = {}, extra?: (env: () => BlockEnv) => void): void {
  const skip = blockSkipReason();
  describe(`${spec.name} replay`, { skip: skip ?? false }, () => {
    let env: BlockEnv;
    before(async () => {
      env = await startBlockEnv(label);
    });
    after(async () => {
      await env?.stop();
    });

    it("stage/publish/stats/expand/unpublish/unstage, each twice, and unstage after a stage that failed halfway", async () => {
      const calls = await replayBlockDriver(env, spec, expect);
      assert.ok(calls.NodeStage.includes("volume.MountVolume"));
    });

    extra?.(() => env);
  });
}
