// Replay of GCE PD (kubernetes-sigs/gcp-compute-persistent-disk-csi-driver)'s Windows node calls against the daemon (Linux sockets, loop device), with
// the csi-proxy versions it dials. The model and the per-call sequences: block-driver-model.ts and
// docs/driver-compat.md.
import type { BlockDriverSpec } from "./block-driver-model.ts";
import { describeBlockReplay } from "./block-replay-suite.ts";

const spec: BlockDriverSpec = {
  name: "GCE PD",
  versions: { disk: "v1", filesystem: "v1", volume: "v1" },
  mountCheck: "symlink",
  setOnline: true,
  unstage: "unmount+offline",
  unmountExistsCheck: true,
  statsLocalStat: true,
};

describeBlockReplay(spec, "gce-pd", {
  // GetVolumeIDFromTargetPath of a staging directory that was never mounted fails, and GCE does not
  // match any text: NodeUnstage fails, as against upstream master ("not a mounted folder").
  unstageAfterHalfStage: "Internal",
});
