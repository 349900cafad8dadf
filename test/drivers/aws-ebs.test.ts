// Replay of AWS EBS (kubernetes-sigs/aws-ebs-csi-driver, gRPC mode)'s Windows node calls against the
// daemon (Linux sockets, loop device), with the csi-proxy versions it dials (aws-family-replay.ts).
import { describeAwsFamilyReplay } from "./aws-family-replay.ts";

describeAwsFamilyReplay("AWS EBS", "aws-ebs");
