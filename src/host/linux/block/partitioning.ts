/**
 * Writes to a disk's partition table (util-linux sfdisk, never wiping a signature: csi-proxy
 * decides what may be overwritten) and the kernel's view of it (partx: BLKPG, one partition at a
 * time). sfdisk neither checks for a busy device (the caller verified it) nor re-reads the table.
 */
import { readFile, realpath } from "node:fs/promises";
import { tool } from "./block-tool-runner.ts";
import { withWriterWatch, type WatchLog } from "./writer-watch.ts";
import { callSignal } from "../../../util/call-scope.ts";
import { stopIfAborted } from "../../../util/stop-if-aborted.ts";

/** What the disk host writes: a new table and appended partitions. */
export interface Partitioning {
  /** Writes an empty GPT partition table to the disk (`onSpawn`: told sfdisk's pid and exit, for its intent record). */
  createGptTable(devPath: string, onSpawn?: (pid: number, exited: Promise<void>) => void): Promise<void>;
  /** Appends one partition of type `typeId` (GPT GUID or MBR hex type) filling the largest free area, then syncs the kernel's partition list. */
  appendPartition(devPath: string, typeId: string): Promise<void>;
  /** Makes the kernel's partition devices match the on-disk table (BLKPG via partx --update). */
  syncPartitions(devPath: string): Promise<void>;
}

/** What the volume host writes to grow a partition. */
export interface PartitionResizing {
  /** Moves a GPT backup header to the disk's current last sector (sfdisk --relocate gpt-bak-std). */
  relocateGptBackup(diskDevPath: string): Promise<void>;
  /** Sets partition `number`'s size to `sizeSectors` (512-byte units, start unchanged) and tells the kernel (BLKPG via partx). */
  resizePartition(diskDevPath: string, number: number, sizeSectors: bigint): Promise<void>;
}

/** sfdisk never wipes signatures on its own: csi-proxy decides what may be overwritten. */
const SFDISK = ["--quiet", "--wipe", "never", "--wipe-partitions", "never"];
/** sfdisk neither checks for a busy device (csi-proxy checked) nor re-reads the table: callers sync the kernel with partx. */
const NO_REREAD = ["--no-reread", "--no-tell-kernel"];

async function syncPartitions(devPath: string): Promise<void> {
  // BLKPG: works on kernels without a parser for the table and on disks with mounted partitions, where BLKRRPART cannot.
  // An explicit range: without it partx (2.38) adds no MBR logical partition to a disk the kernel shows none on.
  await tool("partx", ["--update", "--nr", "1:256", devPath], { step: "partx", device: devPath });
}

/** The partition table writes of this host (stateless). */
export function createPartitioning(options: { log?: WatchLog } = {}): Partitioning & PartitionResizing {
  return {
    async createGptTable(devPath, onSpawn) {
      // Only ever called on a disk without partitions (the kernel shows none), so there is nothing to
      // tell the kernel: sfdisk's own re-read (BLKRRPART, ~250 ms) is skipped. Another process writing
      // the disk meanwhile makes the answer Aborted (writer-watch.ts).
      const watched = { devPath, operation: "writing an empty GPT partition table", damage: "the partition table may be damaged" };
      await withWriterWatch(watched, (watchSpawn) =>
        tool("sfdisk", [...SFDISK, ...NO_REREAD, devPath], {
          stdin: "label: gpt\n",
          step: "sfdisk",
          device: devPath,
          onSpawn: (pid, exited) => (watchSpawn(pid), onSpawn?.(pid, exited)),
        }),
      options.log);
    },

    async appendPartition(devPath, typeId) {
      // The type is a constant chosen by the disk host, never request data. The kernel learns about
      // the new partition once, through partx (BLKPG), instead of sfdisk re-reading the whole table.
      const watched = { devPath, operation: "adding a partition to the partition table", damage: "the partition table may be damaged" };
      await withWriterWatch(watched, (onSpawn) => tool("sfdisk", [...SFDISK, ...NO_REREAD, "--append", devPath], { stdin: `type=${typeId}\n`, step: "sfdisk", device: devPath, onSpawn }), options.log);
      stopIfAborted(callSignal(), {
        before: `telling the kernel about the new partition of ${devPath} (partx)`,
        done: `a partition was added to the partition table of ${devPath}; the kernel does not show it yet (a retry of PartitionDisk brings it online)`,
      });
      await syncPartitions(devPath);
    },

    syncPartitions,

    async relocateGptBackup(diskDevPath) {
      // Only the backup header moves: the kernel's partitions stay as they are (without --no-tell-kernel
      // sfdisk re-reads and the kernel drops them until the next partx: a daemon killed in between left a
      // volume nobody could find again).
      const watched = { devPath: diskDevPath, operation: "moving the GPT backup header", damage: "the partition table may be damaged" };
      await withWriterWatch(watched, (onSpawn) => tool("sfdisk", ["--quiet", ...NO_REREAD, "--relocate", "gpt-bak-std", diskDevPath], { step: "sfdisk", device: diskDevPath, onSpawn }), options.log);
    },

    async resizePartition(diskDevPath, number, sizeSectors) {
      // sfdisk counts in logical sectors.
      // In process, a sysfs read: bounded, never waits for the device.
      const name = (await realpath(diskDevPath)).split("/").pop() ?? "";
      const lbs = BigInt((await readFile(`/sys/class/block/${name}/queue/logical_block_size`, "utf8").catch(() => "512")).trim() || "512");
      const size = (sizeSectors * 512n) / lbs;
      const watched = { devPath: diskDevPath, operation: `resizing partition ${number} in the partition table`, damage: "the partition table may be damaged" };
      await withWriterWatch(watched, (onSpawn) => tool("sfdisk", ["--quiet", ...NO_REREAD, "--wipe", "never", "-N", String(number), diskDevPath], {
        stdin: `, ${size}\n`,
        step: "sfdisk",
        device: diskDevPath,
        onSpawn,
      }), options.log);
      stopIfAborted(callSignal(), {
        before: `telling the kernel the new size of partition ${number} of ${diskDevPath} (partx)`,
        done: `partition ${number} of ${diskDevPath} has its new size in the partition table; the kernel still shows its old size (a retry of ResizeVolume finishes it)`,
      });
      await tool("partx", ["--update", "--nr", String(number), diskDevPath], { step: "partx", device: diskDevPath });
    },
  };
}
