/**
 * A disk's state as the kernel and csi-proxy keep it: SCSI adapter scans and device rescans, the
 * SCSI device state ("running"/"offline"), a loop device's capacity, the kernel read-only flag, and
 * the offline marks csi-proxy persists for disks without a native offline state
 * (offline-marks-file.ts). Writes change only the named device; nothing here decides when.
 */
import { readdir, writeFile } from "node:fs/promises";
import type { OfflineMark } from "./block-types.ts";
import { tool } from "./block-tool-runner.ts";
import { OfflineMarksFile } from "./offline-marks-file.ts";
import { fsError } from "../../fs-error.ts";

export interface DeviceState {
  /** Host numbers of the SCSI adapters (/sys/class/scsi_host/hostN). */
  listScsiHosts(): Promise<number[]>;
  /** Asks a SCSI adapter to scan for new devices (writes "- - -" to its scan file). */
  scanScsiHost(host: number): Promise<void>;
  /** Asks a SCSI disk to re-read its capacity (writes 1 to device/rescan). */
  rescanScsiDevice(name: string): Promise<void>;
  /** Re-reads a loop device's capacity from its backing file (losetup --set-capacity). */
  refreshLoopCapacity(devPath: string): Promise<void>;
  /** Writes the SCSI device state ("running" or "offline"). */
  setScsiState(name: string, state: "running" | "offline"): Promise<void>;
  /** Sets or clears the kernel read-only flag of a block device (blockdev --setro/--setrw). */
  setReadOnly(devPath: string, readOnly: boolean): Promise<void>;
}

export interface OfflineMarks {
  /** Persisted offline marks (empty when none were ever written). */
  readOfflineMarks(): Promise<OfflineMark[]>;
  /** Replaces the persisted offline marks. */
  writeOfflineMarks(marks: OfflineMark[]): Promise<void>;
}

async function writeSysfs(file: string, value: string): Promise<void> {
  await writeFile(file, value).catch((e) => {
    throw fsError(e, "write", file);
  });
}

export interface DeviceStateOptions {
  /** Where offline marks persist (offline-marks-file.ts). Kept on a tmpfs (/run) they vanish at reboot, with the device numbers they name. */
  stateFile: string;
}

/** The device state of this host, its offline marks in `options.stateFile`. */
export function createDeviceState(options: DeviceStateOptions): DeviceState & OfflineMarks {
  const marks = new OfflineMarksFile(options.stateFile);
  return {
    async listScsiHosts() {
      const names = await readdir("/sys/class/scsi_host").catch(() => [] as string[]);
      return names.map((n) => /^host(\d+)$/.exec(n)).filter((m) => m !== null).map((m) => Number(m[1]));
    },
    async scanScsiHost(host) {
      await writeSysfs(`/sys/class/scsi_host/host${host}/scan`, "- - -");
    },
    async rescanScsiDevice(name) {
      await writeSysfs(`/sys/block/${name}/device/rescan`, "1");
    },
    async refreshLoopCapacity(devPath) {
      await tool("losetup", ["--set-capacity", devPath], { step: "losetup --set-capacity", device: devPath });
    },
    async setScsiState(name, state) {
      await writeSysfs(`/sys/block/${name}/device/state`, state);
    },
    async setReadOnly(devPath, readOnly) {
      await tool("blockdev", [readOnly ? "--setro" : "--setrw", devPath], { step: "blockdev --setro/--setrw", device: devPath });
    },
    readOfflineMarks: () => marks.read(),
    writeOfflineMarks: (m) => marks.write(m),
  };
}
