/**
 * The Linux block tools the disk and volume hosts are built on, put together from one room per
 * concern: reads of sysfs/procfs (block-reads.ts), libblkid's probe (signature-probe.ts), in-use
 * facts and the exclusive claim (device-claims.ts), partition table writes (partitioning.ts),
 * filesystem tools (filesystem-tools.ts), mounts (mount-tools.ts), write-back (write-back.ts),
 * SCSI/loop/read-only state and offline marks (device-state.ts), and privileges (privileges.ts).
 * Each does one thing and decides nothing about the API: the interpreting rooms (disk-numbers.ts, block-snapshot.ts…) read, the services
 * decide; the refusals in them are the kernel's and the tools' own. Each host takes only the
 * interfaces it uses (`VolumeTools` in volume.ts, `DiskTools` in disk.ts); a stateful fake of all
 * of them (test/doubles/fake-block-tools.ts) models a host's block devices for the unit tests.
 */
import { createBlockReads, type BlockReads } from "./block-reads.ts";
import { createSignatureProbe, type SignatureProbe } from "./signature-probe.ts";
import { createDeviceClaims, type DeviceClaims } from "./device-claims.ts";
import { createPartitioning, type PartitionResizing, type Partitioning } from "./partitioning.ts";
import { createFilesystemTools, type FilesystemTools } from "./filesystem-tools.ts";
import { createMountTools, type MountTools } from "../mounts/mount-tools.ts";
import { createWriteBack, type WriteBack } from "./write-back.ts";
import { createDeviceState, type DeviceState, type OfflineMarks } from "./device-state.ts";
import { createPrivileges, type Privileges } from "../kernel/privileges.ts";
import type { UndoLog } from "../../../util/undo-retry.ts";
import type { DeviceGate } from "./device-gate.ts";

/** Every Linux block tool: what src/compose/linux.ts hands to both hosts. */
export type LinuxBlockTools = BlockReads & SignatureProbe & DeviceClaims & Partitioning & PartitionResizing & FilesystemTools & MountTools & WriteBack & DeviceState & OfflineMarks & Privileges;

export interface LinuxBlockToolsOptions {
  /** Where offline marks persist (offline-marks-file.ts). Kept on a tmpfs (/run) they vanish at reboot, with the device numbers they name. */
  stateFile: string;
  /** Where background cleanups (a mount that could not be undone: anchored-mount.ts) log; default stderr. */
  log?: UndoLog;
  /** Where block reads (tables, libblkid) are admitted per whole disk (device-gate.ts); ungated without it. */
  deviceGate?: DeviceGate;
}

/** The block tools of this host. State: each room's own (mount table view, loop backings, namespace tables, offline marks file). */
export function createLinuxBlockTools(options: LinuxBlockToolsOptions): LinuxBlockTools {
  return {
    ...createBlockReads({ log: options.log, deviceGate: options.deviceGate }),
    ...createSignatureProbe({ deviceGate: options.deviceGate }),
    ...createDeviceClaims(),
    ...createPartitioning({ log: options.log }),
    ...createFilesystemTools({ log: options.log }),
    ...createMountTools({ log: options.log }),
    ...createWriteBack(),
    ...createDeviceState({ stateFile: options.stateFile }),
    ...createPrivileges(),
  };
}
