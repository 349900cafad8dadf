// Replay of AWS EBS (kubernetes-sigs/aws-ebs-csi-driver, gRPC mode: pkg/mounter/mount_windows_proxyV1.go)
// Windows node calls against the daemon, from the driver's code (aws-family-model.ts cites file:line).
// Its HostProcess mode (mount_windows_proxyV2.go, csi-proxy as an in-process library) makes no gRPC call.
import { describeAwsFamilyReplay } from "./aws-family-replay.ts";

describeAwsFamilyReplay("AWS EBS", "ebs");
