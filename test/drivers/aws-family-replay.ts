// The replay shared by AWS EBS (kubernetes-sigs/aws-ebs-csi-driver, gRPC mode) and amazon-ecs-agent's
// copy of its Windows node code (ecs-agent/daemonimages/csidriver): the same calls, versions and
// regular expression. The model and the per-call sequences: block-driver-model.ts and
// docs/driver-compat.md.
import { it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import * as path from "node:path";
import { AWS_NOT_MOUNTED, BlockDriver, type BlockDriverSpec } from "./block-driver-model.ts";
import { describeBlockReplay } from "./block-replay-suite.ts";

/** Registers the replay suite of one AWS-family driver (`label` names its loop device and directories). */
export function describeAwsFamilyReplay(name: string, label: string): void {
  const spec: BlockDriverSpec = {
    name,
    versions: { disk: "v1", filesystem: "v1", volume: "v1" },
    mountCheck: "exists+symlink",
    stagedCheck: "aws-device-name",
    setOnline: true,
    unstage: "aws",
    publishMountCheck: true,
    statsLocalStat: true,
  };
  describeBlockReplay(spec, label, {}, (env) => {
    it("the regexp takes the \"not mounted\" branch for a missing and for a plain staging path, never for a mounted one", async () => {
      const proxy = env().proxy(spec.versions);
      const driver = new BlockDriver(spec, proxy, env().loop.diskNumber);
      const plain = path.join(env().kubelet, "plugins", "plain");
      mkdirSync(plain, { recursive: true });
      assert.deepEqual(await driver.awsDeviceName(path.join(env().kubelet, "plugins", "missing")), { device: "", refCount: 0 });
      assert.deepEqual(await driver.awsDeviceName(plain), { device: "", refCount: 0 });
      // upstream master's texts for the same situations ("The system cannot find the file specified.",
      // "not a mounted folder") would not match: the driver then fails NodeStage/NodeUnstage with Internal
      assert.ok(!AWS_NOT_MOUNTED.test("rpc error: code = Unknown desc = not a mounted folder"));
    });
  });
}
