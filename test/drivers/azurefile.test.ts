// Replay of AzureFile (kubernetes-sigs/azurefile-csi-driver)'s Windows node calls (filesystem v1 + smb v1) against the daemon through the SMB
// stand-in (a tmpfs mounted where CIFS would be). Sequences: smb-driver-model.ts, docs/driver-compat.md.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { smbSkipReason, startSmbEnv, type SmbEnv } from "./replay-harness.ts";
import { replaySmbDriver } from "./smb-replay.ts";

const skip = smbSkipReason();

describe("azurefile replay", { skip: skip ?? false }, () => {
  let env: SmbEnv;
  before(async () => {
    env = await startSmbEnv("azurefile");
  });
  after(async () => {
    await env?.stop();
  });

  it("stage/publish/unpublish/unstage, each twice, and unstage after a stage that failed halfway", async () => {
    const calls = await replaySmbDriver(env, "azurefile", false);
    assert.deepEqual(calls.NodeStage, ["filesystem.PathExists", "filesystem.IsSymlink", "filesystem.PathExists", "filesystem.Rmdir", "filesystem.PathExists", "smb.NewSmbGlobalMapping"]);
  });
});
