// Replay of GCE PD (kubernetes-sigs/gcp-compute-persistent-disk-csi-driver)'s Windows node calls against the daemon (Linux sockets, loop device), with
// the csi-proxy versions it dials. The model and the per-call sequences: block-driver-model.ts and
// docs/driver-compat.md.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { blockSkipReason, startBlockEnv, type BlockEnv } from "./replay-harness.ts";
import { replayBlockDriver, type BlockDriverSpec } from "./block-driver-model.ts";

const skip = blockSkipReason();
const spec: BlockDriverSpec = {
  name: "GCE PD",
  versions: { disk: "v1", filesystem: "v1", volume: "v1" },
  mountCheck: "symlink",
  stagedCheck: "mount-check",
  setOnline: true,
  unstage: "unmount+offline",
  unmountExistsCheck: true,
  statsLocalStat: true,
};

describe("GCE PD replay", { skip: skip ?? false }, () => {
  let env: BlockEnv;
  before(async () => {
    env = await startBlockEnv("gce-pd");
  });
  after(async () => {
    await env?.stop();
  });

  it("stage/publish/stats/expand/unpublish/unstage, each twice, and unstage after a stage that failed halfway", async () => {
    const calls = await replayBlockDriver(env, spec, {
  // GetVolumeIDFromTargetPath of a staging directory that was never mounted fails, and GCE does not
  // match any text: NodeUnstage fails, as against upstream master ("not a mounted folder").
  unstageAfterHalfStage: "Internal",
});
    assert.ok(calls.NodeStage.includes("volume.MountVolume"));
  });
});
