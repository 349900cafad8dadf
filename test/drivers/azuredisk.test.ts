// Replay of AzureDisk (kubernetes-sigs/azuredisk-csi-driver)'s Windows node calls against the daemon (Linux sockets, loop device), with
// the csi-proxy versions it dials. The model and the per-call sequences: block-driver-model.ts and
// docs/driver-compat.md.
import type { BlockDriverSpec } from "./block-driver-model.ts";
import { describeBlockReplay } from "./block-replay-suite.ts";

const spec: BlockDriverSpec = {
  name: "AzureDisk",
  versions: { disk: "v1", filesystem: "v1", volume: "v1" },
  mountCheck: "exists+symlink",
  setOnline: false,
  unstage: "flush+rmdir",
  publishMountCheck: true,
  statsLocalStat: false,
};

describeBlockReplay(spec, "azuredisk", {
  // NodeUnstage removes the mounted staging directory with Rmdir(force): on Windows that drops the
  // mount point (as upstream); the Linux host refuses to delete through a mount (FailedPrecondition).
  unstageMounted: "Internal",
});
