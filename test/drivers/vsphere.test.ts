// Replay of vSphere (kubernetes-sigs/vsphere-csi-driver, gRPC client before 4a9546d2f)'s Windows node calls against the daemon (Linux sockets, loop device), with
// the csi-proxy versions it dials. The model and the per-call sequences: block-driver-model.ts and
// docs/driver-compat.md.
import type { BlockDriverSpec } from "./block-driver-model.ts";
import { describeBlockReplay } from "./block-replay-suite.ts";

const spec: BlockDriverSpec = {
  name: "vSphere",
  versions: { disk: "v1", filesystem: "v1", volume: "v1" },
  mountCheck: "local-lstat",
  setOnline: true,
  unstage: "unmount+offline",
  unstageChecksExists: true,
  unmountExistsCheck: true,
  statsLocalStat: true,
};

describeBlockReplay(spec, "vsphere", {
  // as GCE: no text match, the unmounted staging directory makes GetVolumeIDFromTargetPath fail (upstream master too)
  unstageAfterHalfStage: "Internal",
});
