// Replay of amazon-ecs-agent's copy of the AWS EBS Windows node code (ecs-agent/daemonimages/csidriver):
// only STAGE_UNSTAGE_VOLUME and GET_VOLUME_STATS (driver/node.go:59-62), from its code
// (aws-family-model.ts cites file:line).
import { describeAwsFamilyReplay } from "./aws-family-replay.ts";

describeAwsFamilyReplay("amazon-ecs-agent", "ecs");
