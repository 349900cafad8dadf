/**
 * The Linux branch of compose.ts: builds the group services over the Linux hosts. Filesystem:
 * Node fs. Disk and volume: sysfs/procfs reads and util-linux/e2fsprogs/xfsprogs through
 * run-command, sharing one lock per disk and one offline-state file (beside the sockets: per
 * daemon, gone at reboot). SMB: CIFS mounts under the state dir. iSCSI: open-iscsi. System: DMI and
 * systemd. The state dir is secured first, before any state is read (src/state/state-dir.ts); a
 * refusal makes SMB (and iSCSI mutual CHAP) answer FailedPrecondition, other groups are unaffected.
 */
import { DEFAULT_INTENT_DIR, IntentRecords } from "../state/intent-records.ts";
import * as fsPromises from "node:fs/promises";
import * as path from "node:path";
import type { ProxyConfig } from "../proxy-config.ts";
import type { Services } from "../groups/services.ts";
import { createFilesystemService } from "../groups/filesystem/filesystem-service.ts";
import { createPathPolicy } from "../policy/path-policy.ts";
import { createFsResolver } from "../policy/path-resolver.ts";
import { createDiskService } from "../groups/disk/disk-service.ts";
import { createVolumeService } from "../groups/volume/volume-service.ts";
import { createSmbGroup } from "../groups/smb/smb-group.ts";
import { smbStateFile } from "../groups/smb/smb-state.ts";
import { guardStateFile, secureStateDir } from "../state/state-dir.ts";
import { sweepStateLeftovers } from "../state/state-leftovers.ts";
import { createIscsiService } from "../groups/iscsi/iscsi-service.ts";
import { createSystemService } from "../groups/system/system-service.ts";
import { nodeLocks } from "../state/node-locks-for.ts";
import { LinuxFilesystemHost } from "../host/linux/filesystem.ts";
import { createLinuxMountGate } from "../host/linux/mounts/linux-mount-gate.ts";
import { createDeviceGate } from "../host/linux/block/device-gate.ts";
import { gateFilesystemHost, gateResolver } from "../host/gated-filesystem-host.ts";
import { cachedBindSources } from "../host/linux/mounts/bind-mount-source.ts";
import { processMountTable, setProcessStartUpPhase } from "../host/linux/mounts/mount-index.ts";
import { inStartUp } from "../boot/start-up-phase.ts";
import { createLinuxBlockTools } from "../host/linux/block/linux-block-tools.ts";
import { LinuxDiskHost } from "../host/linux/disk.ts";
import { LinuxVolumeHost } from "../host/linux/volume.ts";
import { LinuxSmbHost } from "../host/linux/smb.ts";
import { LinuxIscsiHost } from "../host/linux/iscsi.ts";
import { LinuxSystemHost } from "../host/linux/system.ts";
import { closeKernelTaskListing } from "../host/linux/kernel/kernel-task-listing.ts";

/** What the Linux hosts hold for the process's life, closed at the daemon's stop: the kernel's task listing (3 BPF link descriptors). */
export const releaseLinuxResources = (): Promise<void> => closeKernelTaskListing();

export async function createLinuxServices(config: ProxyConfig): Promise<Services> {
  // The mount table reads directly (no probe, no koffi) during the daemon's start-up phase.
  setProcessStartUpPhase(inStartUp);
  const trust = await secureStateDir(config.stateDir, "linux", { log: config.logger });
  await sweepStateLeftovers(trust, "linux", config.logger);
  const mountTable = processMountTable();
  // Every syscall on a request path is admitted per mount (src/host/mount-gate.ts): a dead mount
  // holds at most a few of libuv's threads, and calls under it fail fast once it is not responding.
  const gate = createLinuxMountGate(mountTable);
  const policy = createPathPolicy({
    platform: "linux",
    allowedDirs: [...config.workingDirs, config.kubeletPath],
    resolve: gateResolver(createFsResolver(fsPromises, "linux"), gate),
    bindSources: cachedBindSources(mountTable),
  });
  const locks = await nodeLocks(config, trust.smb ?? trust.iscsi); // throws when the lock directory is refused (fails closed)
  const smbHost = new LinuxSmbHost(config);
  if (!trust.smb) {
    const removed = await smbHost.removeLeftoverCredentials().catch(() => 0);
    if (removed) config.logger?.warning(`removed ${removed} SMB credentials file(s) left by a daemon that stopped during a mount`);
  }
  const iscsiHost = new LinuxIscsiHost({ stateDir: config.stateDir, stateRefusal: trust.iscsi, ...(config.iscsiNodeDb ? { nodeDbOverride: config.iscsiNodeDb } : {}) });
  config.logger?.info(`iSCSI node database: ${iscsiHost.nodesDir}`);
  const copies = await iscsiHost.removeLeftoverRecordCopies().catch((err: unknown) => {
    config.logger?.warning(`the start-up sweep of iSCSI node record copies failed: ${err instanceof Error ? err.message : String(err)}`);
    return { removed: [], failed: [] };
  });
  if (copies.removed.length) config.logger?.warning(`removed ${copies.removed.length} temporary cop${copies.removed.length === 1 ? "y" : "ies"} of iSCSI node records a stopped daemon left: ${copies.removed.join(", ")}`);
  if (copies.failed.length) config.logger?.warning(`could not remove temporary iSCSI node record copies ${copies.failed.join(", ")} (not regular files): remove them`);
  // Block reads (tables, libblkid probes) are admitted per whole disk in the same gate (device-gate.ts): a disk whose reads hang holds a few threads, never the pool.
  const blockTools = createLinuxBlockTools({ stateFile: path.join(config.socketDir, "csi-proxy-disk-state.json"), log: config.logger, deviceGate: createDeviceGate(gate) });
  const smb = await createSmbGroup({
    host: smbHost,
    policy,
    state: guardStateFile(smbStateFile(config.stateDir), trust.smb),
    requirePrivacy: config.requirePrivacy,
    platform: "linux",
    ...(config.logger ? { log: config.logger } : {}),
    locks,
  });
  smb.reconciler.start(); // the stale-use sweep, every 5 minutes (src/groups/smb/smb-reconciler.ts)
  return {
    filesystem: createFilesystemService({ host: gateFilesystemHost(new LinuxFilesystemHost(), gate), policy, platform: "linux" }),
    disk: createDiskService({ host: new LinuxDiskHost(blockTools, { intents: new IntentRecords(config.intentDir ?? DEFAULT_INTENT_DIR), log: config.logger }), policy, locks }),
    volume: createVolumeService({ host: new LinuxVolumeHost(blockTools, { defaultFileSystem: config.defaultFsType, log: config.logger }), policy, locks }),
    smb: smb.service,
    iscsi: createIscsiService({ host: iscsiHost, locks }),
    system: createSystemService({ host: new LinuxSystemHost(), platform: "linux", allowedServices: config.allowedServices }),
  };
}
