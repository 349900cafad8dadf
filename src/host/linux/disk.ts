/**
 * Disk host operations on Linux: sysfs writes for SCSI, util-linux (sfdisk, partx, losetup,
 * blockdev) through runCommand argv arrays for the rest. Pass-through: no decisions here.
 */
import { readdir, writeFile } from "node:fs/promises";
import type { DiskHostApi } from "../../groups/disk/host-api.ts";
import { runCommand } from "../exec/run-command.ts";
import { fsError } from "../fs-error.ts";
import { LinuxBlockHost } from "./block-host.ts";

/** sfdisk never wipes signatures on its own: csi-proxy decides what may be overwritten. */
const SFDISK = ["--quiet", "--wipe", "never", "--wipe-partitions", "never"];

async function writeSysfs(file: string, value: string): Promise<void> {
  await writeFile(file, value).catch((e) => {
    throw fsError(e, "write", file);
  });
}

export class LinuxDiskHost extends LinuxBlockHost implements DiskHostApi {
  async createGptTable(devPath: string): Promise<void> {
    await runCommand("sfdisk", [...SFDISK, devPath], { stdin: "label: gpt\n" });
  }

  async appendPartition(devPath: string, typeId: string): Promise<void> {
    // The type is a constant chosen by the service, never request data.
    await runCommand("sfdisk", [...SFDISK, "--append", devPath], { stdin: `type=${typeId}\n` });
    await this.syncPartitions(devPath);
  }

  async syncPartitions(devPath: string): Promise<void> {
    // BLKPG: works on kernels without a parser for the table and on disks with mounted partitions, where BLKRRPART cannot.
    await runCommand("partx", ["--update", devPath]);
  }

  async listScsiHosts(): Promise<number[]> {
    const names = await readdir("/sys/class/scsi_host").catch(() => [] as string[]);
    return names.map((n) => /^host(\d+)$/.exec(n)).filter((m) => m !== null).map((m) => Number(m[1]));
  }

  async scanScsiHost(host: number): Promise<void> {
    await writeSysfs(`/sys/class/scsi_host/host${host}/scan`, "- - -");
  }

  async rescanScsiDevice(name: string): Promise<void> {
    await writeSysfs(`/sys/block/${name}/device/rescan`, "1");
  }

  async refreshLoopCapacity(devPath: string): Promise<void> {
    await runCommand("losetup", ["--set-capacity", devPath]);
  }

  async setScsiState(name: string, state: "running" | "offline"): Promise<void> {
    await writeSysfs(`/sys/block/${name}/device/state`, state);
  }

  async setReadOnly(devPath: string, readOnly: boolean): Promise<void> {
    await runCommand("blockdev", [readOnly ? "--setro" : "--setrw", devPath]);
  }
}
