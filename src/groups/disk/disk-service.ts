import type { DiskIds, DiskLocation, DiskService } from "./types.ts";
import { inCallScope } from "../../util/call-scope.ts";
import type { DiskHostApi, DiskWriteCheck, HostDevice, HostDisk, HostPartition } from "./host-api.ts";
import type { KeyedMutex } from "../../util/keyed-mutex.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import { Code, CsiProxyError, failedPrecondition, internal, invalidArgument, notFound } from "../../errors.ts";
import { allowedMountPoint, checkDiskNumber, diskLockKey, hostFailure, privilegeGuard, refuseInUse, requireOnline, withContext } from "../../policy/block-policy.ts";

export { diskLockKey } from "../../policy/block-policy.ts";

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

  /**
   * Right before a write: the disk read again must be the one looked up (same host identity). Hosts
   * without identities skip this; hosts that compare the identity themselves as they write do it there.
   */
  async function reverify(n: number, disk: HostDisk, what: string): Promise<void> {
    if (disk.identity === undefined || host.checksIdentityAtWrite) return;
    const now = await host.getDisk(n);
    if (now.identity !== disk.identity) throw failedPrecondition(`refusing to ${what}: the disk changed since it was looked up (${disk.identity} → ${now.identity})`);
  }

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
      // The same refusals on the host's reading right before each write (with the devices' openers, where the host sees them).
      const check: DiskWriteCheck = (devices) => refuseInUse(devices, what, true, isAllowed);
      await check([disk, ...layout.partitions]);
      // What a disk holds is read only once it may be changed at all.
      if (layout.partitionStyle === null) layout = await withContext(`probe ${disk.name}`, host.probeDiskLayout(n));

      const { content } = layout;
      let style = layout.partitionStyle;
      let table = layout.partitions;
      if (style === "unknown" || style === null) throw failedPrecondition(`refusing to ${what}: ${content ?? "its partition table cannot be read"}`);
      if (style === "raw") {
        if (content) throw failedPrecondition(`refusing to ${what}: it has no partition table but holds ${content}; initialising it would destroy that data`);
        await reverify(n, disk, what);
        await withContext(`initialise ${disk.name} with GPT`, host.initializeDisk(n, disk.identity, check));
        style = "gpt";
        table = await host.listPartitions(n); // Windows may add a reserved partition itself
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
      await reverify(n, disk, what);
      try {
        await host.createDataPartition(n, style, disk.identity, check);
      } catch (err) {
        // 42002 "access path already in use" is tolerated, as upstream does
        if (!(err instanceof CsiProxyError && err.code === Code.AlreadyExists)) {
          throw hostFailure(`create the data partition on ${disk.name}`, err);
        }
      }
      await withContext(`refresh ${disk.name}`, host.refreshDisk(n));
      const created = (await host.listPartitions(n)).filter(isData);
      if (created.length === 0) throw internal(`created a data partition on ${disk.name}, but the disk shows none`);
      if (created[0].online !== true) {
        await withContext(`bring partition ${created[0].number} of ${disk.name} online`, host.onlinePartition(n, created[0].number));
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
      let check: DiskWriteCheck | undefined;
      if (!isOnline) {
        check = (devices) => refuseInUse(devices, `set disk ${n} (${disk.name}) offline`, false, isAllowed);
        const devices: HostDevice[] = [disk, ...(await host.getDiskLayout(n)).partitions];
        await check(devices);
      }
      await reverify(n, disk, `set disk ${n} (${disk.name}) ${isOnline ? "online" : "offline"}`);
      await withContext(`set ${disk.name} ${isOnline ? "online" : "offline"}`, host.setDiskOnline(n, isOnline, disk.identity, check));
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
