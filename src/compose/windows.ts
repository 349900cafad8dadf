/**
 * The Windows branch of compose.ts (loaded only on win32): builds the group services over the
 * Windows hosts. Filesystem: Node fs + Win32 (koffi, on its own `io` limiter), every call on a path
 * admitted per volume or share root (windows-mount-gate.ts). Disk and volume: CIM through the storage
 * PowerShell worker pool + Win32 (koffi). SMB and iSCSI: CIM/SMB cmdlets through a second worker
 * pool running the SMB/iSCSI/System script (+ CreateSymbolicLinkW for SMB links). System: the BIOS
 * serial through that pool, services through the Service Control Manager (koffi, no process).
 * Both pools start their workers on first use only. The state dir gets its owner and protected
 * DACL before any state is read (src/state/state-dir-windows.ts); a refusal makes SMB answer
 * FailedPrecondition, other groups are unaffected.
 */
import * as fsPromises from "node:fs/promises";
import type { ProxyConfig } from "../proxy-config.ts";
import type { Services } from "../groups/services.ts";
import { createFilesystemService } from "../groups/filesystem/filesystem-service.ts";
import { createPathPolicy } from "../policy/path-policy.ts";
import { createFsResolver } from "../policy/path-resolver.ts";
import { createSmbGroup } from "../groups/smb/smb-group.ts";
import { readWindowsStateFile } from "../state/state-file-windows.ts";
import { smbStateFile } from "../groups/smb/smb-state.ts";
import { guardStateFile, secureStateDir } from "../state/state-dir.ts";
import { sweepStateLeftovers } from "../state/state-leftovers.ts";
import { createIscsiService } from "../groups/iscsi/iscsi-service.ts";
import { createSystemService } from "../groups/system/system-service.ts";
import { loadWin32, Win32 } from "../win32/win32.ts";
import { defaultTotal } from "../host/mount-gate.ts";
import { createWindowsGateKeys, createWindowsMountGate, gateLearningResolver } from "../host/windows/windows-mount-gate.ts";
import { gatedWindowsFilesystemHost } from "../host/windows/gated-windows-filesystem-host.ts";
import { nodeLocks } from "../state/node-locks-for.ts";
import { loadScm } from "../win32-service/scm.ts";
import { createLocalLookup } from "../host/windows/local-lookup.ts";
import { DRIVE_FIXED } from "../win32/win32-constants.ts";
import { createWindowsBlockServices } from "./windows-block-services.ts";
import { PowerShellPool, powershellExe } from "../host/windows/powershell/powershell-pool.ts";
import { stopsWithDaemon } from "../host/windows/powershell/daemon-pools.ts";
import { powershellArgs } from "../host/windows/powershell/scripts/worker-script.ts";
import { SMB_ISCSI_SYSTEM_OPS, SMB_ISCSI_SYSTEM_SCRIPT } from "../host/windows/powershell/scripts/worker-ops-smb-iscsi-system.ts";
import { WindowsSmbHost } from "../host/windows/smb.ts";
import { WindowsIscsiHost } from "../host/windows/iscsi.ts";
import { WindowsSystemHost } from "../host/windows/system.ts";

/** The worker pool of the SMB, iSCSI and System hosts: its own constant script, its own workers. */
export function createSmbIscsiSystemPool(options: { file?: string; size?: number; log?: (msg: string) => void } = {}): PowerShellPool {
  return new PowerShellPool({
    command: { file: options.file ?? powershellExe(), args: powershellArgs(SMB_ISCSI_SYSTEM_SCRIPT) },
    ops: SMB_ISCSI_SYSTEM_OPS,
    size: options.size ?? 2,
    ...(options.log ? { log: options.log } : {}),
  });
}

export async function createWindowsServices(config: ProxyConfig): Promise<Services> {
  const win32 = await loadWin32();
  const trust = await secureStateDir(config.stateDir, "win32", { log: config.logger });
  await sweepStateLeftovers(trust, "win32", config.logger);
  // Every host call on a request path is admitted per volume or share root (windows-mount-gate.ts): a
  // dead SMB share holds at most a few of libuv's threads, and calls under it fail fast once it is not
  // responding. The filesystem host's Win32 calls run on their own limiter, never on the 2 slots the
  // volume, disk and state calls share (io-limiter.ts): the gate bounds them.
  const fsWin32 = new Win32(win32.koffi, { maxIoCalls: defaultTotal() });
  const keys = createWindowsGateKeys();
  const gate = createWindowsMountGate(keys, (p) => fsWin32.getFileAttributes(p));
  const policy = createPathPolicy({
    platform: "win32",
    allowedDirs: [...config.workingDirs, config.kubeletPath],
    resolve: gateLearningResolver(createFsResolver(fsPromises, "win32"), gate, keys),
  });
  const locks = await nodeLocks(config, trust.smb); // throws when the lock directory is refused (fails closed)
  // Both pools are closed by the daemon's stop, which waits for a Format or Resize still running (daemon-pools.ts).
  const log = config.logger ? (msg: string) => config.logger!.warning(msg) : undefined;
  const { disk, volume, pool: storagePool } = createWindowsBlockServices({ win32, locks, ...(log ? { log } : {}) });
  stopsWithDaemon(storagePool);
  const pool = stopsWithDaemon(createSmbIscsiSystemPool(log ? { log } : {}));
  const smb = await createSmbGroup({
    host: new WindowsSmbHost(pool, win32),
    policy,
    state: guardStateFile(smbStateFile(config.stateDir, { read: (file) => readWindowsStateFile(file, win32) }), trust.smb),
    requirePrivacy: config.requirePrivacy,
    platform: "win32",
    ...(config.logger ? { log: config.logger } : {}),
    locks,
  });
  smb.reconciler.start(); // the stale-use sweep, every 5 minutes (src/groups/smb/smb-reconciler.ts)
  return {
    filesystem: createFilesystemService({
      host: gatedWindowsFilesystemHost(fsWin32, gate, {
        localLookup: createLocalLookup({ attributes: (p) => fsWin32.localAttributes(p), isFixedDrive: (root) => gate.run(root, async () => (await fsWin32.driveType(root)) === DRIVE_FIXED) }),
      }),
      policy,
      platform: "win32",
    }),
    disk,
    volume,
    smb: smb.service,
    iscsi: createIscsiService({ host: new WindowsIscsiHost(pool), locks }),
    system: createSystemService({ host: new WindowsSystemHost(pool, loadScm), platform: "win32", allowedServices: config.allowedServices }),
  };
}
