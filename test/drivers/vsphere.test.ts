// Replay of vSphere (kubernetes-sigs/vsphere-csi-driver, gRPC client before 4a9546d2f)'s Windows node calls against the daemon (Linux sockets, loop device), with
// the csi-proxy versions it dials. The model and the per-call sequences: block-driver-model.ts and
// docs/driver-compat.md.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { blockSkipReason, startBlockEnv, type BlockEnv } from "./replay-harness.ts";
import { replayBlockDriver, type BlockDriverSpec } from "./block-driver-model.ts";

const skip = blockSkipReason();
const spec: BlockDriverSpec = {
  name: "vSphere",
  versions: { disk: "v1", filesystem: "v1", volume: "v1" },
  mountCheck: "local-lstat",
  stagedCheck: "mount-check",
  setOnline: true,
  unstage: "unmount+offline",
  unstageChecksExists: true,
  unmountExistsCheck: true,
  statsLocalStat: true,
};

describe("vSphere replay", { skip: skip ?? false }, () => {
  let env: BlockEnv;
  before(async () => {
    env = await startBlockEnv("vsphere");
  });
  after(async () => {
    await env?.stop();
  });

  it("stage/publish/stats/expand/unpublish/unstage, each twice, and unstage after a stage that failed halfway", async () => {
    const calls = await replayBlockDriver(env, spec, {
  // as GCE: no text match, the unmounted staging directory makes GetVolumeIDFromTargetPath fail (upstream master too)
  unstageAfterHalfStage: "Internal",
});
    assert.ok(calls.NodeStage.includes("volume.MountVolume"));
  });
});
