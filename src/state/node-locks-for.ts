/**
 * The locks a composed set of services uses: node-wide (node-locks.ts, in `<state-dir>/locks`) when
 * the state directory passed its start-up check, so that the daemon and in-process users on one
 * node take turns; in-process only when it was refused (then nothing of this process is kept
 * there, and a warning says that other csi-proxy processes on the node are not excluded).
 */
import * as path from "node:path";
import type { ProxyConfig } from "../proxy-config.ts";
import { createKeyedMutex, type KeyedMutex } from "../util/keyed-mutex.ts";
import { createNodeLocks } from "./node-locks.ts";

export function nodeLocks(config: Pick<ProxyConfig, "stateDir" | "platform" | "logger">, refusal: Error | null): KeyedMutex {
  if (!refusal) return createNodeLocks({ dir: path.join(config.stateDir, "locks"), platform: config.platform });
  config.logger?.warning(`node-wide locks are off (the state directory was refused): disk, volume, SMB and iSCSI calls are serialised within this process only`);
  return createKeyedMutex();
}
