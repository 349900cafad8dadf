// Replay of amazon-ecs-agent's copy of the AWS EBS Windows node code (ecs-agent/daemonimages/csidriver)
// against the daemon: the same calls, versions and regular expression as AWS EBS (aws-family-replay.ts).
import { describeAwsFamilyReplay } from "./aws-family-replay.ts";

describeAwsFamilyReplay("amazon-ecs-agent", "ecs-agent");
