// Replay of AzureDisk (kubernetes-sigs/azuredisk-csi-driver)'s Windows node calls against the daemon (Linux sockets, loop device), with
// the csi-proxy versions it dials. The model and the per-call sequences: block-driver-model.ts and
// docs/driver-compat.md.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { blockSkipReason, startBlockEnv, type BlockEnv } from "./replay-harness.ts";
import { replayBlockDriver, type BlockDriverSpec } from "./block-driver-model.ts";

const skip = blockSkipReason();
const spec: BlockDriverSpec = {
  name: "AzureDisk",
  versions: { disk: "v1", filesystem: "v1", volume: "v1" },
  mountCheck: "exists+symlink",
  stagedCheck: "mount-check",
  setOnline: false,
  unstage: "flush+rmdir",
  publishMountCheck: true,
  statsLocalStat: false,
};

describe("AzureDisk replay", { skip: skip ?? false }, () => {
  let env: BlockEnv;
  before(async () => {
    env = await startBlockEnv("azuredisk");
  });
  after(async () => {
    await env?.stop();
  });

  it("stage/publish/stats/expand/unpublish/unstage, each twice, and unstage after a stage that failed halfway", async () => {
    const calls = await replayBlockDriver(env, spec, {
  // NodeUnstage removes the mounted staging directory with Rmdir(force): on Windows that drops the
  // mount point (as upstream); the Linux host refuses to delete through a mount (FailedPrecondition).
  unstageMounted: "Internal",
});
    assert.ok(calls.NodeStage.includes("volume.MountVolume"));
  });
});
