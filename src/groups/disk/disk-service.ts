import type { DiskIds, DiskLocation, DiskService } from "./types.ts";
import { callSignal, inCallScope } from "../../util/call-scope.ts";
import { stopIfAborted, withEarlierSteps } from "../../util/stop-if-aborted.ts";
import type { DiskHostApi, HostPartition } from "./host-api.ts";
import type { KeyedMutex } from "../../util/keyed-mutex.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import { Code, CsiProxyError, failedPrecondition, internal, invalidArgument, notFound } from "../../errors.ts";
import {
  allowedMountPoint,
  checkDiskNumber,
  diskLockKey,
  diskWriteCheck,
  hostFailure,
  privilegeGuard,
  refuseDiskWrite,
  requireOnline,
  withContext,
  type DiskWriteRule,
} from "../../policy/block-policy.ts";

export interface DiskServiceDeps {
  host: DiskHostApi;
  /**
   * The path policy (kubelet path + working dirs): mounts inside it are csi-proxy's, mounts outside
   * are foreign. Without one, every mount point the host reports counts as foreign.
   */
  policy?: { check(path: string): Promise<string> };
  /** Shared with the volume service so that operations on one disk serialise across both groups. */
  locks?: KeyedMutex;
}

/** Upstream's data partition: any partition except the Microsoft reserved one (MBR partitions count). */
const isData = (p: HostPartition) => !p.reserved;

/**
 * The disk group, on any host (host-api.ts). Upstream master's decisions (docs/upstream-behaviour.md, Disk)
 * plus csi-proxy's refusals, all unit-tested against the fakes:
 * - PartitionDisk initialises GPT only on a raw disk that holds nothing (upstream initialises any RAW
 *   disk), adds one data partition only when the table has none (the Microsoft reserved partition
 *   does not count; MBR disks stay MBR), tolerates "access path already in use" (42002) from the
 *   create, and brings the new data partition online — or an existing one the host shows offline;
 * - it refuses offline disks and disks in use: holding the OS (root filesystem, Windows system
 *   volume), busy (swap, holders) or mounted outside the kubelet and working dirs;
 * - SetDiskState is idempotent; going offline refuses disks in use and any mount at all;
 * - every call of a daemon the host says lacks the privilege is PermissionDenied.
 */
export function createDiskService(deps: DiskServiceDeps): DiskService {
  const { host } = deps;
  const locks = deps.locks ?? createKeyedMutex();
  const guard = privilegeGuard(host, "disk");
  const isAllowed = allowedMountPoint(deps.policy);

  /** Runs `fn` holding the disk's lock, as one host session (when the host has them). */
  const inDiskLock = <T>(method: string, diskNumber: number, fn: () => Promise<T>) =>
    locks.run(diskLockKey(checkDiskNumber(diskNumber)), () => (host.session ? host.session(fn) : fn()), { what: `${method} of disk ${diskNumber}` });

  /** A write's rule (policy/block-policy.ts `refuseDiskWrite`); the host runs `diskWriteCheck` of it on the facts it reads right before writing. */
  const ruleOf = (what: string, allowMountsInside: boolean, more: Partial<DiskWriteRule> = {}): DiskWriteRule => ({ what, allowMountsInside, isAllowed, ...more });

  async function partitionDisk(n: number): Promise<void> {
    await inDiskLock("PartitionDisk", n, async () => {
      let layout = await host.getDiskLayout(n);
      const { disk } = layout;
      const what = `partition disk ${n} (${disk.name})`;
      // An offline disk that already has a data partition is left alone, OK (upstream): nothing changes, so
      // nothing is refused. AWS EBS, GCE PD and vSphere call PartitionDisk before SetDiskState(online), also
      // when staging again a disk their NodeUnstage took offline.
      if (disk.online === false && layout.partitions.some(isData)) return;
      requireOnline(disk.online, n, disk.name, what);
      await refuseDiskWrite({ disk, partitions: layout.partitions }, ruleOf(what, true));
      // What a disk holds is read only once it may be changed at all.
      if (layout.partitionStyle === null) layout = await withContext(`probe ${disk.name}`, host.probeDiskLayout(n));

      const { content } = layout;
      let style = layout.partitionStyle;
      let table = layout.partitions;
      /** What this call changed so far, for an answer after an abort between steps. */
      let changed: string | null = null;
      if (style === "unknown" || style === null) throw failedPrecondition(`refusing to ${what}: ${content ?? "its partition table cannot be read"}`);
      if (style === "raw") {
        // A table write whose end nobody saw (its intent record), on a disk showing only what that write leaves: redone.
        const redo = layout.unfinished?.onlyItsOwn ? layout.unfinished.intent : undefined;
        if (content && !redo) {
          const record = layout.unfinished ? `; ${layout.unfinished.intent}` : "";
          throw failedPrecondition(`refusing to ${what}: it has no partition table but holds ${content}; initialising it would destroy that data${record}`);
        }
        // Right before writing, on the host's reading: same disk, nothing in use or mounted at all, not a single signature (but the redone step's).
        const check = diskWriteCheck(disk, ruleOf(what, false, { table: { kind: "empty", to: "write a partition table to", redo } }));
        await withContext(`initialise ${disk.name} with GPT`, host.initializeDisk(n, check));
        changed = `${disk.name} was given an empty GPT partition table`;
        stopIfAborted(callSignal(), { before: `adding the data partition to ${disk.name}`, done: `${changed}; no partition was created (a retry of PartitionDisk adds it)` });
        style = "gpt";
        table = await host.listPartitions(n).catch((e: unknown) => Promise.reject(withEarlierSteps(e, changed!))); // Windows may add a reserved partition itself
      }

      const data = table.filter(isData);
      if (data.length > 0) {
        // Idempotent: a data partition exists. One the host shows offline (Linux: in the table, not
        // yet seen by the kernel) is brought online; upstream leaves Windows' partitions as they are.
        if (data.every((p) => p.online === false)) {
          await withContext(`bring partition ${data[0].number} of ${disk.name} online`, host.onlinePartition(n, data[0].number));
        }
        return;
      }
      // Right before writing: same disk, nothing in use or mounted at all, no signature but a partition table.
      const check = diskWriteCheck(disk, ruleOf(what, false, { table: { kind: "table", to: "add a partition to" } }));
      try {
        await host.createDataPartition(n, style, check);
      } catch (err) {
        // 42002 "access path already in use" is tolerated, as upstream does
        if (!(err instanceof CsiProxyError && err.code === Code.AlreadyExists)) {
          throw hostFailure(`create the data partition on ${disk.name}`, changed ? withEarlierSteps(err, changed) : err);
        }
      }
      changed = `${changed ? `${changed}, then ` : ""}a data partition was added to the partition table of ${disk.name}`;
      const afterChange = <T>(step: Promise<T>) => step.catch((e: unknown) => Promise.reject(withEarlierSteps(e, changed!)));
      await withContext(`refresh ${disk.name}`, afterChange(host.refreshDisk(n)));
      const created = (await afterChange(host.listPartitions(n))).filter(isData);
      if (created.length === 0) throw internal(`created a data partition on ${disk.name}, but the disk shows none`);
      if (created[0].online !== true) {
        await withContext(`bring partition ${created[0].number} of ${disk.name} online`, afterChange(host.onlinePartition(n, created[0].number)));
      }
    });
  }

  async function rescan(): Promise<void> {
    const disks = await withContext("rescan the host's disks", host.scanForDisks());
    // Size refreshes, each under its disk's lock so that it never runs inside a resize.
    // A disk that went away meanwhile (NotFound) has nothing to refresh.
    await Promise.all(
      disks.map((n) =>
        inDiskLock("Rescan", n, () =>
          withContext(`rescan disk ${n}`, host.refreshDiskSize(n)).catch((e) => {
            if (!(e instanceof CsiProxyError && e.code === Code.NotFound)) throw e;
          }),
        ),
      ),
    );
  }

  async function setDiskState(n: number, isOnline: boolean): Promise<void> {
    await inDiskLock(isOnline ? "SetDiskState(online)" : "SetDiskState(offline)", n, async () => {
      const disk = await host.getDisk(n);
      if (disk.online === isOnline) return; // idempotent, as upstream
      const what = `set disk ${n} (${disk.name}) ${isOnline ? "online" : "offline"}`;
      // Going offline refuses a disk in use and any mount at all; going online only another disk.
      const rule = isOnline ? ruleOf(what, true, { ignoreUses: true }) : ruleOf(what, false);
      if (!isOnline) await refuseDiskWrite({ disk, partitions: (await host.getDiskLayout(n)).partitions }, rule);
      await withContext(`set ${disk.name} ${isOnline ? "online" : "offline"}`, host.setDiskOnline(n, isOnline, diskWriteCheck(disk, rule)));
    });
  }

  return inCallScope({
    async listDiskLocations() {
      guard("ListDiskLocations");
      const out = new Map<number, DiskLocation>();
      for (const disk of await host.listDisks()) if (disk.location) out.set(disk.number, disk.location);
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

    async listDiskIds(): Promise<Map<number, DiskIds>> {
      guard("ListDiskIDs");
      return host.listDiskIds();
    },

    async getDiskStats({ diskNumber }) {
      guard("GetDiskStats");
      return { totalBytes: (await host.getDisk(checkDiskNumber(diskNumber))).sizeBytes };
    },

    async setDiskState({ diskNumber, isOnline }) {
      guard("SetDiskState");
      await setDiskState(diskNumber, isOnline);
    },

    async getDiskState({ diskNumber }) {
      guard("GetDiskState");
      return { isOnline: (await host.getDisk(checkDiskNumber(diskNumber))).online };
    },

    async getDiskNumberByName({ diskName }) {
      guard("GetDiskNumberByName");
      if (!diskName) throw invalidArgument("disk name is empty");
      for (const [number, ids] of await host.listDiskIds()) if (ids.page83 === diskName) return { diskNumber: number };
      throw notFound(`could not find disk with Page83 ID ${diskName}: not found`);
    },
  });
}
