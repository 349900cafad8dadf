import type { DiskIds, DiskLocation, DiskService } from "./types.ts";
import type { BlockDisk, DiskHostApi, PartitionTable } from "./host-api.ts";
import type { KeyedMutex } from "../../util/keyed-mutex.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import { failedPrecondition, internal, invalidArgument, notFound } from "../../errors.ts";
import {
  allowedMountPoint,
  checkDiskNumber,
  diskIds,
  diskLocation,
  diskNumberOf,
  hostFailure,
  isDataPartition,
  isDiskOnline,
  LINUX_DATA_GPT_TYPE,
  LINUX_DATA_MBR_TYPE,
  liveMarks,
  markOf,
  refuseInUse,
  requireDisk,
  requireOnline,
  rootGuard,
  takeSnapshot,
  type BlockSnapshot,
} from "./block-model.ts";

export interface DiskServiceDeps {
  host: DiskHostApi;
  /** The path policy (kubelet path + working dirs): mounts inside it are csi-proxy's, mounts outside are foreign. */
  policy: { check(path: string): Promise<string> };
  /** Shared with the volume service so that operations on one disk serialise across both groups. */
  locks?: KeyedMutex;
}

/** Lock key of a disk, shared with the volume service. */
export const diskLockKey = (diskNumber: number) => `disk:${diskNumber}`;

/**
 * The disk group on block devices. Decisions (all unit-tested against the fake host):
 * - disk numbers are dev_t values; only devices with a medium are disks (block-model.ts);
 * - PartitionDisk initialises GPT only on a disk with no signature at all, and adds one data
 *   partition only when the table has none (MSR does not count) — upstream's idempotent flow —
 *   and refuses disks in use (root, swap, holders, foreign mounts) or holding data without a table;
 * - SetDiskState uses the SCSI device state where there is one, otherwise a persisted offline mark
 *   plus the kernel read-only flag; going offline refuses disks with any mount or holder;
 * - every call of a non-root daemon is PermissionDenied.
 */
export function createDiskService(deps: DiskServiceDeps): DiskService {
  const { host } = deps;
  const locks = deps.locks ?? createKeyedMutex();
  const guard = rootGuard(host, "disk");
  const isAllowed = allowedMountPoint(deps.policy);

  async function snapshot(): Promise<BlockSnapshot> {
    return takeSnapshot(host);
  }

  /** Runs `fn` holding the disk's lock, with a fresh snapshot and the disk (NotFound when absent). */
  function withDisk<T>(diskNumber: number, fn: (disk: BlockDisk, snap: BlockSnapshot) => Promise<T>): Promise<T> {
    checkDiskNumber(diskNumber);
    return locks.run(diskLockKey(diskNumber), async () => {
      const snap = await snapshot();
      return fn(requireDisk(snap, diskNumber), snap);
    });
  }

  /** Re-reads one disk after a change; Internal if it vanished meanwhile. */
  async function reread(diskNumber: number): Promise<BlockDisk> {
    const disk = (await snapshot()).disks.find((d) => diskNumberOf(d) === diskNumber);
    if (!disk) throw internal(`disk ${diskNumber} disappeared while it was being partitioned`);
    return disk;
  }

  async function partitionDisk(diskNumber: number): Promise<void> {
    await withDisk(diskNumber, async (disk, snap) => {
      const what = `partition disk ${diskNumber} (${disk.devPath})`;
      requireOnline(snap, disk, what);
      await refuseInUse(snap, [disk, ...disk.partitions], { what, allowMountsInside: true, isAllowed });

      let table: PartitionTable | null = disk.partitionTable;
      if (disk.partitions.length === 0) {
        // The kernel shows no partitions: ask blkid what the disk holds before anything else.
        // Upstream initialises only a RAW disk; here "raw" means "no signature of any kind".
        const probe = await host.probe(disk.devPath).catch((e) => {
          throw hostFailure(`probe ${disk.devPath}`, e);
        });
        if (probe.kind === "ambivalent") {
          throw failedPrecondition(`refusing to ${what}: it has no partition table but holds conflicting signatures (${probe.detail}); initialising it would destroy data`);
        }
        if (probe.kind === "found" && !probe.ptType) {
          const sig = [probe.type, probe.usage && `(${probe.usage})`].filter(Boolean).join(" ") || "an unknown signature";
          throw failedPrecondition(`refusing to ${what}: it has no partition table but holds ${sig}; initialising it would destroy that data`);
        }
        if (probe.kind === "found") {
          table = await host.readPartitionTable(disk).catch((e) => {
            throw hostFailure(`read the partition table of ${disk.devPath}`, e);
          });
          if (!table) throw failedPrecondition(`refusing to ${what}: blkid reports a ${probe.ptType} partition table, which csi-proxy cannot read`);
        } else {
          await host.createGptTable(disk.devPath).catch((e) => {
            throw hostFailure(`initialise ${disk.devPath} with GPT`, e);
          });
          table = { type: "gpt", entries: [] };
        }
      }
      if (!table) throw failedPrecondition(`refusing to ${what}: the kernel shows partitions but the partition table cannot be read`);

      const dataInTable = table.entries.filter(isDataPartition);
      if (dataInTable.length > 0) {
        // Idempotent: a data partition exists. Make sure the kernel shows it (kernels without a parser for the table, disks attached before it was written).
        if (!disk.partitions.some(isDataPartition)) {
          await host.syncPartitions(disk.devPath).catch((e) => {
            throw hostFailure(`update the kernel's partitions of ${disk.devPath}`, e);
          });
          if (!(await reread(diskNumber)).partitions.some(isDataPartition)) {
            throw internal(`disk ${diskNumber} (${disk.devPath}) has a data partition in its table, but the kernel does not show it`);
          }
        }
        return;
      }
      const type = table.type === "gpt" ? LINUX_DATA_GPT_TYPE : LINUX_DATA_MBR_TYPE;
      await host.appendPartition(disk.devPath, type).catch((e) => {
        throw hostFailure(`create the data partition on ${disk.devPath}`, e);
      });
      if (!(await reread(diskNumber)).partitions.some(isDataPartition)) {
        throw internal(`created a data partition on ${disk.devPath}, but the kernel does not show it`);
      }
    });
  }

  async function rescan(): Promise<void> {
    for (const h of await host.listScsiHosts()) {
      await host.scanScsiHost(h).catch((e) => {
        throw hostFailure(`scan SCSI host ${h}`, e);
      });
    }
    const snap = await snapshot();
    // Capacity refreshes, each under its disk's lock so that it never runs inside a resize.
    await Promise.all(
      snap.disks.map((disk) =>
        locks.run(diskLockKey(diskNumberOf(disk)), async () => {
          if (disk.scsiAddress) await host.rescanScsiDevice(disk.name);
          else if (disk.loopBackingFile) await host.refreshLoopCapacity(disk.devPath);
        }).catch((e) => {
          throw hostFailure(`rescan ${disk.devPath}`, e);
        }),
      ),
    );
  }

  async function setDiskState(diskNumber: number, isOnline: boolean): Promise<void> {
    await withDisk(diskNumber, async (disk, snap) => {
      if (isDiskOnline(snap, disk) === isOnline) return; // idempotent, as upstream
      if (!isOnline) {
        const what = `set disk ${diskNumber} (${disk.devPath}) offline`;
        await refuseInUse(snap, [disk, ...disk.partitions], { what, allowMountsInside: false, isAllowed });
      }
      if (disk.scsiState !== null) {
        await host.setScsiState(disk.name, isOnline ? "running" : "offline").catch((e) => {
          throw hostFailure(`set ${disk.devPath} ${isOnline ? "online" : "offline"}`, e);
        });
        return;
      }
      const others = liveMarks(snap).filter((m) => m !== markOf(snap, disk));
      if (isOnline) {
        const mark = markOf(snap, disk);
        if (mark?.setReadOnly) await host.setReadOnly(disk.devPath, false);
        await host.writeOfflineMarks(others);
      } else {
        const setReadOnly = !disk.readOnly;
        if (setReadOnly) await host.setReadOnly(disk.devPath, true);
        try {
          await host.writeOfflineMarks([...others, { major: disk.major, minor: disk.minor, diskSeq: disk.diskSeq, setReadOnly }]);
        } catch (e) {
          if (setReadOnly) await host.setReadOnly(disk.devPath, false).catch(() => {});
          throw hostFailure(`record disk ${diskNumber} as offline`, e);
        }
      }
    });
  }

  return {
    async listDiskLocations() {
      guard("ListDiskLocations");
      const out = new Map<number, DiskLocation>();
      for (const disk of (await snapshot()).disks) {
        const loc = diskLocation(disk);
        if (loc) out.set(diskNumberOf(disk), loc);
      }
      return out;
    },

    async partitionDisk({ diskNumber }) {
      guard("PartitionDisk");
      await partitionDisk(diskNumber);
    },

    async rescan() {
      guard("Rescan");
      await rescan();
    },

    async listDiskIds() {
      guard("ListDiskIDs");
      const out = new Map<number, DiskIds>();
      for (const disk of (await snapshot()).disks) out.set(diskNumberOf(disk), diskIds(disk));
      return out;
    },

    async getDiskStats({ diskNumber }) {
      guard("GetDiskStats");
      checkDiskNumber(diskNumber);
      return { totalBytes: requireDisk(await snapshot(), diskNumber).sizeBytes };
    },

    async setDiskState({ diskNumber, isOnline }) {
      guard("SetDiskState");
      await setDiskState(diskNumber, isOnline);
    },

    async getDiskState({ diskNumber }) {
      guard("GetDiskState");
      checkDiskNumber(diskNumber);
      const snap = await snapshot();
      return { isOnline: isDiskOnline(snap, requireDisk(snap, diskNumber)) };
    },

    async getDiskNumberByName({ diskName }) {
      guard("GetDiskNumberByName");
      if (!diskName) throw invalidArgument("disk name is empty");
      const disk = (await snapshot()).disks.find((d) => diskIds(d).page83 === diskName);
      if (!disk) throw notFound(`could not find disk with Page83 ID ${diskName}: not found`);
      return { diskNumber: diskNumberOf(disk) };
    },
  };
}
